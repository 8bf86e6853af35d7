package controllers

// The node-wide dead container collection against in-memory fakes: a
// controller-runtime fake client for the Pods and plegtest.Runtime, which
// records what it is asked to remove, for the runtime.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pleg/plegtest"
	"github.com/nodelet/nodelet/internal/pod/podutil"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

type deadRemovingRuntime struct {
	*plegtest.Runtime
	removed map[types.UID][]string
}

func (r *deadRemovingRuntime) RemoveDead(_ context.Context, status *kubecontainer.PodStatus, dead noderuntime.Dead) (int, error) {
	for _, c := range dead.Containers {
		r.removed[status.UID] = append(r.removed[status.UID], c.ID.ID)
	}
	for _, sb := range dead.Sandboxes {
		r.removed[status.UID] = append(r.removed[status.UID], sb.ID)
	}
	return len(dead.Containers) + len(dead.Sandboxes), nil
}

func TestContainerGCRemovesDeadContainersOfTerminatedPodsAndOldInstancesOfRunningOnes(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
	// A pod's record: sandbox "<uid>-sb", containers of one name, newest
	// first.
	record := func(uid types.UID, sandbox kubecontainer.SandboxState, containers ...kubecontainer.ContainerState) *kubecontainer.PodStatus {
		p := &kubecontainer.PodStatus{UID: uid, Namespace: "ns", Name: "pod-" + string(uid)}
		sb := string(uid) + "-sb"
		p.Sandboxes = []*kubecontainer.SandboxStatus{{ID: sb, State: sandbox, CreatedAt: t0}}
		for i, state := range containers {
			p.Containers = append(p.Containers, &kubecontainer.ContainerStatus{
				ID: kubecontainer.ContainerID{Type: "containerd", ID: string(uid) + "-" + string(rune('a'+i))}, Name: "app",
				SandboxID: sb, State: state, CreatedAt: t0.Add(-time.Duration(i) * time.Minute),
			})
		}
		return p
	}
	pod := func(uid types.UID, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-" + string(uid), UID: uid}, Status: corev1.PodStatus{Phase: phase}}
	}
	mirror := pod("mirror", corev1.PodSucceeded)
	mirror.Name = "pod-static"
	mirror.Annotations = map[string]string{podutil.MirrorPodAnnotation: "static"}
	exited, running := kubecontainer.ContainerExited, kubecontainer.ContainerRunning
	rt := &deadRemovingRuntime{Runtime: plegtest.NewRuntime(
		record("done", kubecontainer.SandboxNotReady, exited, exited),
		record("crashing", kubecontainer.SandboxReady, running, exited, exited),
		record("healthy", kubecontainer.SandboxReady, running),
		// No Pod: the orphan removal's.
		record("orphan", kubecontainer.SandboxNotReady, exited),
		// A static pod that ran to completion: its mirror pod, under
		// another UID, holds its phase.
		record("static", kubecontainer.SandboxNotReady, exited),
	), removed: map[types.UID][]string{}}
	gc := &ContainerGC{
		Client: fake.NewClientBuilder().WithObjects(pod("done", corev1.PodSucceeded), pod("crashing", corev1.PodRunning), pod("healthy", corev1.PodRunning), mirror).
			WithStatusSubresource(&corev1.Pod{}).Build(),
		Runtime: rt,
		Log:     logr.Discard(),
	}

	n, err := gc.DeleteAllUnusedContainers(context.Background())
	if err != nil {
		t.Fatalf("DeleteAllUnusedContainers() error = %v", err)
	}

	want := map[types.UID][]string{
		"done":     {"done-a", "done-b", "done-sb"},
		"crashing": {"crashing-c"},
		"static":   {"static-a", "static-sb"},
	}
	for _, ids := range rt.removed {
		slices.Sort(ids)
	}
	if diff := cmp.Diff(want, rt.removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if n != 6 {
		t.Errorf("DeleteAllUnusedContainers() = %d, want 6", n)
	}
	if rt.DirectReads() != 3 {
		t.Errorf("%d pods read in full, want the 3 with something to remove", rt.DirectReads())
	}
}
