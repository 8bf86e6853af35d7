package controllers

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// Housekeeping is the safety net behind events: every period it compares
// what the node holds (runtime pods, pod folders, pod cgroups, pod log
// folders, pod allocations) with the Pods bound to it and removes what no
// Pod owns — say a pod deleted while nodelet was down and its event lost,
// or a folder left by a crash between two steps. Allocations are swept
// once at start too, as soon as the Pods are known: those of pods deleted
// while nodelet was down would otherwise stay in the allocations file for
// good (nothing else reconciles a pod the API server and the runtime no
// longer have).
type Housekeeping struct {
	// Reconciler is the pod reconciler (PodReconciler), through its
	// exported API.
	Reconciler interface {
		OwnedPods(ctx context.Context) (map[types.UID]bool, error)
		RemoveOrphan(ctx context.Context, uid types.UID)
		CleanupPods(keep map[types.UID]bool)
		AllocatedPods() []types.UID
		ForgetAllocations(gone map[types.UID]bool) error
	}
	// Runtime lists the runtime's pods and the pods' log folders.
	Runtime interface {
		ListPods(ctx context.Context) (map[types.UID]*kubecontainer.PodStatus, error)
		ListPodLogs() ([]noderuntime.PodLogs, error)
		RemovePodLogs(namespace, name string, uid types.UID) error
	}
	// Volumes and Cgroups list the pod folders and pod cgroups present.
	Volumes interface {
		ListPods() ([]types.UID, error)
		TearDownPod(ctx context.Context, uid types.UID) error
	}
	Cgroups interface {
		ListPods() ([]types.UID, error)
		RemovePod(uid types.UID) error
	}
	// UserNamespaces frees the user namespace range of a pod whose folder
	// goes (package userns); nil: none to free.
	UserNamespaces userNamespaces
	// Period defaults to 30s.
	Period time.Duration
	Clock  clock.WithTicker
	Log    logr.Logger
}

// defaultHousekeepingPeriod is Housekeeping's period when none is given.
const defaultHousekeepingPeriod = 30 * time.Second

// Start runs housekeeping until ctx ends; it implements manager.Runnable.
// The manager starts it once its cache is synced, so the Pods are known:
// the allocations of pods that are gone are dropped at once, the rest
// waits for the first period (the pod reconcilers, started alongside,
// look at every runtime pod meanwhile).
func (h *Housekeeping) Start(ctx context.Context) error {
	period := h.Period
	if period <= 0 {
		period = defaultHousekeepingPeriod
	}
	allocated := h.Reconciler.AllocatedPods()
	if owned, err := h.Reconciler.OwnedPods(ctx); err != nil {
		h.Log.Error(err, "Failed to list pods to sweep the allocations of pods that are gone")
	} else {
		h.removeAllocations(allocated, owned)
	}
	ticker := h.Clock.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			h.Sweep(ctx)
		}
	}
}

// NeedLeaderElection is false: each node keeps its own house.
func (h *Housekeeping) NeedLeaderElection() bool { return false }

// Sweep runs one round. What the node holds is listed before the Pods it
// is judged against: a pod folder, cgroup, runtime pod or allocation is
// only made for a Pod already in the cache, so listing in this order never
// mistakes a pod started meanwhile for a leftover.
func (h *Housekeeping) Sweep(ctx context.Context) {
	allocated := h.Reconciler.AllocatedPods()
	folders, err := h.Volumes.ListPods()
	if err != nil {
		h.Log.Error(err, "Failed to list pod folders")
	}
	cgroups, err := h.Cgroups.ListPods()
	if err != nil {
		h.Log.Error(err, "Failed to list pod cgroups")
	}
	podLogs, err := h.Runtime.ListPodLogs()
	if err != nil {
		h.Log.Error(err, "Failed to list pod log folders")
	}
	runtimePods, err := h.Runtime.ListPods(ctx)
	if err != nil {
		h.Log.Error(err, "Failed to list runtime pods for housekeeping")
		return
	}
	owned, err := h.Reconciler.OwnedPods(ctx)
	if err != nil {
		h.Log.Error(err, "Failed to list pods for housekeeping")
		return
	}

	for uid := range runtimePods {
		if !owned[uid] {
			h.Reconciler.RemoveOrphan(ctx, uid)
		}
	}
	h.Reconciler.CleanupPods(owned)
	h.removeAllocations(allocated, owned)
	// Folders, cgroups and log folders of pods the runtime no longer
	// holds either; the others go with their runtime pod.
	leftover := func(uid types.UID) bool {
		_, inRuntime := runtimePods[uid]
		return !owned[uid] && !inRuntime
	}
	for _, uid := range folders {
		if leftover(uid) {
			if err := h.Volumes.TearDownPod(ctx, uid); err != nil {
				h.Log.Error(err, "Failed to remove folder of a pod that is gone", "podUID", uid)
			} else if h.UserNamespaces != nil {
				h.UserNamespaces.Release(uid)
			}
		}
	}
	for _, uid := range cgroups {
		if leftover(uid) {
			if err := h.Cgroups.RemovePod(uid); err != nil {
				h.Log.Error(err, "Failed to remove cgroup of a pod that is gone", "podUID", uid)
			}
		}
	}
	for _, logs := range podLogs {
		if leftover(logs.UID) {
			if err := h.Runtime.RemovePodLogs(logs.Namespace, logs.Name, logs.UID); err != nil {
				h.Log.Error(err, "Failed to remove log folder of a pod that is gone", "podUID", logs.UID)
			}
		}
	}
}

// removeAllocations drops the allocations, among those listed before the
// Pods were, of the pods no Pod owns (the kubelet's RemoveOrphanedPods).
// One made after the listing is kept: its pod was admitted meanwhile.
func (h *Housekeeping) removeAllocations(allocated []types.UID, owned map[types.UID]bool) {
	gone := map[types.UID]bool{}
	for _, uid := range allocated {
		if !owned[uid] {
			gone[uid] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	if err := h.Reconciler.ForgetAllocations(gone); err != nil {
		h.Log.Error(err, "Failed to remove the allocations of pods that are gone")
		return
	}
	h.Log.Info("Removed the allocations of pods that are gone", "pods", len(gone))
}
