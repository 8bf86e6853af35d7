package controllers

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

// Housekeeping is the safety net behind events: every period it compares
// what the node holds (runtime pods, pod folders, pod cgroups) with the Pods
// bound to it and removes what no Pod owns — say a pod deleted while
// nodelet was down and its event lost, or a folder left by a crash between
// two steps.
type Housekeeping struct {
	// Reconciler is the pod reconciler (PodReconciler), through its
	// exported API.
	Reconciler interface {
		OwnedPods(ctx context.Context) (map[types.UID]bool, error)
		RemoveOrphan(ctx context.Context, uid types.UID)
		CleanupPods(keep map[types.UID]bool)
	}
	// Runtime lists the runtime's pods.
	Runtime interface {
		ListPods(ctx context.Context) (map[types.UID]*noderuntime.PodStatus, error)
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

// Start runs housekeeping until ctx ends; it implements manager.Runnable.
func (h *Housekeeping) Start(ctx context.Context) error {
	period := h.Period
	if period <= 0 {
		period = 30 * time.Second
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
// is judged against: a pod folder, cgroup or runtime pod is only made for a
// Pod already in the cache, so listing in this order never mistakes a pod
// started meanwhile for a leftover.
func (h *Housekeeping) Sweep(ctx context.Context) {
	folders, err := h.Volumes.ListPods()
	if err != nil {
		h.Log.Error(err, "Failed to list pod folders")
	}
	cgroups, err := h.Cgroups.ListPods()
	if err != nil {
		h.Log.Error(err, "Failed to list pod cgroups")
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
	// Folders and cgroups of pods the runtime no longer holds either; the
	// others go with their runtime pod.
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
}
