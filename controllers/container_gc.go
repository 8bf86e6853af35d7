package controllers

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// ContainerGC removes the node's dead containers and sandboxes when the
// eviction manager runs short of disk, before it removes images or evicts
// pods, as the kubelet's eviction manager has its container GC do: every
// dead container and stopped sandbox of a pod that has terminated (a
// static pod known by its mirror pod), and of a running pod every dead
// instance but the newest of each container (runtime.DeadToRemove). The reconciler prunes a running pod the same way
// after each sync; this reaches the terminated pods, whose containers it
// keeps for their logs while there is room.
type ContainerGC struct {
	// Client reads the Pods bound to this node (the manager's cache).
	Client client.Reader
	// Runtime lists the runtime's pods and removes what is dead.
	Runtime interface {
		ListPods(ctx context.Context) (map[types.UID]*kubecontainer.PodStatus, error)
		GetPodStatus(ctx context.Context, uid types.UID) (*kubecontainer.PodStatus, error)
		RemoveDead(ctx context.Context, status *kubecontainer.PodStatus, dead noderuntime.Dead) (int, error)
	}
	Log logr.Logger
}

// runtimeUID is the UID pod's containers run under: a mirror pod's is its
// static pod's, which the mirror annotation holds, and its phase is the
// static pod's too.
func runtimeUID(pod *corev1.Pod) types.UID {
	if podutil.IsMirrorPod(pod) {
		return types.UID(pod.Annotations[podutil.MirrorPodAnnotation])
	}
	return pod.UID
}

// DeleteAllUnusedContainers removes what is dead and says how many
// containers and sandboxes it removed. Runtime pods whose Pod is not in
// the cache are left to the orphan removal: the runtime is listed before
// the Pods, so a pod started meanwhile is never one of them.
func (g *ContainerGC) DeleteAllUnusedContainers(ctx context.Context) (int, error) {
	runtimePods, err := g.Runtime.ListPods(ctx)
	if err != nil {
		return 0, err
	}
	var pods corev1.PodList
	if err := g.Client.List(ctx, &pods); err != nil {
		return 0, fmt.Errorf("listing pods for container garbage collection: %w", err)
	}
	terminated := make(map[types.UID]bool, len(pods.Items))
	for i := range pods.Items {
		pod := &pods.Items[i]
		terminated[runtimeUID(pod)] = podstatus.IsTerminalPhase(pod.Status.Phase)
	}
	removed := 0
	var errs []error
	for uid, listed := range runtimePods {
		done, known := terminated[uid]
		if !known || noderuntime.DeadToRemove(listed, done).Empty() {
			continue
		}
		// The full record, read now: the log files go with their
		// containers, and nothing started since the list is removed.
		status, err := g.Runtime.GetPodStatus(ctx, uid)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dead := noderuntime.DeadToRemove(status, done)
		g.Log.Info("Removing dead containers under disk pressure", "pod", types.NamespacedName{Namespace: status.Namespace, Name: status.Name},
			"podUID", uid, "containers", len(dead.Containers), "sandboxes", len(dead.Sandboxes))
		// Only what went counts: a container that can never be removed
		// must not hold eviction back round after round.
		n, err := g.Runtime.RemoveDead(ctx, status, dead)
		if err != nil {
			errs = append(errs, err)
		}
		removed += n
	}
	return removed, errors.Join(errs...)
}
