package controllers

// Orphans: runtime pods whose Pod is gone or was replaced, found by
// Reconcile under a pod's name and by housekeeping, and removed.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// OwnedPods returns the UIDs of the Pods bound to this node, as the
// manager's cache has them: what housekeeping keeps.
func (r *PodReconciler) OwnedPods(ctx context.Context) (map[types.UID]bool, error) {
	var pods corev1.PodList
	// The cache holds only this node's pods.
	if err := r.Client.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", r.NodeName, err)
	}
	owned := make(map[types.UID]bool, len(pods.Items))
	for i := range pods.Items {
		owned[pods.Items[i].UID] = true
	}
	return owned, nil
}

// RemoveOrphan starts the removal of a runtime pod whose Pod is gone
// (startOrphanRemoval).
func (r *PodReconciler) RemoveOrphan(ctx context.Context, uid types.UID) {
	r.startOrphanRemoval(ctx, uid)
}

// CleanupPods drops the probes of the pods not in keep.
func (r *PodReconciler) CleanupPods(keep map[types.UID]bool) {
	r.Prober.CleanupPods(keep)
}

// removeOrphans starts the removal of every runtime pod named
// namespace/name whose UID is not keep.
func (r *PodReconciler) removeOrphans(ctx context.Context, namespace, name string, keep types.UID) {
	for _, status := range r.cache.ByName(namespace, name) {
		if status.UID != keep {
			r.startOrphanRemoval(ctx, status.UID)
		}
	}
}

// startOrphanRemoval removes a runtime pod whose Pod is gone. It runs on its
// own, so that a Pod recreated under the same name starts while its
// predecessor stops, and at most once at a time per pod.
func (r *PodReconciler) startOrphanRemoval(ctx context.Context, uid types.UID) {
	if r.claimRemoval(uid) {
		go r.removeOrphan(context.WithoutCancel(ctx), uid)
	}
}

// claimRemoval marks the removal of the pod's runtime objects as under
// way; false when one already is. The Pod's own termination and its
// removal as an orphan (once the Pod is gone from the API server) may
// otherwise remove the same containers at once, and fail each other:
// containerd refuses a RemoveContainer while another is under way
// ("already in removing state").
func (r *PodReconciler) claimRemoval(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cleaning[uid] {
		return false
	}
	r.cleaning[uid] = true
	return true
}

func (r *PodReconciler) releaseRemoval(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cleaning, uid)
}

func (r *PodReconciler) removeOrphan(ctx context.Context, uid types.UID) {
	log := klog.FromContext(ctx)
	defer r.releaseRemoval(uid)
	status, err := r.readPodStatus(ctx, uid)
	if err == nil && len(status.Sandboxes)+len(status.Containers) == 0 {
		// Already removed, by the Pod's own deletion.
		r.cache.Delete(uid, r.Clock.Now())
		return
	}
	if err == nil {
		err = r.Runtime.KillPod(ctx, nil, status, nil)
	}
	if err == nil {
		err = r.removePod(ctx, status)
	}
	if err != nil {
		// Housekeeping and the PLEG's resync find it again.
		log.Error(err, "Failed to remove runtime pod whose Pod is gone", "podUID", uid)
		return
	}
	r.forget(uid)
	log.Info("Removed runtime pod whose Pod is gone", "pod", klog.KRef(status.Namespace, status.Name), "podUID", uid)
}
