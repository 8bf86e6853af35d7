package controllers

// Orphans: runtime pods whose Pod is gone or was replaced, found by
// Reconcile under a pod's name and by housekeeping, and removed.

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	if r.StaticPods != nil {
		if !r.StaticPods.Ready() {
			return nil, fmt.Errorf("the static pod sources of node %s are not read yet", r.NodeName)
		}
		for _, pod := range r.StaticPods.List() {
			owned[pod.UID] = true
		}
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
		go r.removeOrphan(ctx, uid)
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

// orphanRetry is the state of an orphan whose removal failed.
type orphanRetry struct {
	failures int  // in a row
	pending  bool // a retry is waiting
}

// orphanRemovalFailed counts a failed removal of the orphan uid and has it
// tried again after orphanRetryDelay, unless a retry is already waiting
// (housekeeping starts removals too, and each could fail).
func (r *PodReconciler) orphanRemovalFailed(ctx context.Context, uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	retry := r.orphanRetries[uid]
	if retry == nil {
		retry = &orphanRetry{}
		r.orphanRetries[uid] = retry
	}
	retry.failures++
	delay := orphanRetryDelay(retry.failures)
	if !retry.pending {
		retry.pending = true
		go r.retryOrphanRemoval(ctx, uid, delay)
	}
	return delay
}

// orphanRemoved forgets the failures of an orphan that is gone.
func (r *PodReconciler) orphanRemoved(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.orphanRetries, uid)
}

// orphanRetryDelay is how long an orphan whose removal failed the given
// number of times in a row waits for the next try: a second, doubling up
// to housekeeping's period. Nothing else looks at such a pod soon — its
// Pod is gone, and the runtime reports no change of a pod it failed to
// remove — while the kubelet's housekeeping would try again within two
// seconds.
func orphanRetryDelay(failures int) time.Duration {
	return doublingDelay(time.Second, defaultHousekeepingPeriod, failures)
}

// retryOrphanRemoval starts the orphan's removal again after delay, unless
// nodelet stops first or another removal started it meanwhile (the
// claim in startOrphanRemoval keeps it to one at a time).
func (r *PodReconciler) retryOrphanRemoval(ctx context.Context, uid types.UID, delay time.Duration) {
	select {
	case <-ctx.Done():
	case <-r.Clock.After(delay):
		r.mu.Lock()
		if retry := r.orphanRetries[uid]; retry != nil {
			retry.pending = false
		}
		r.mu.Unlock()
		r.startOrphanRemoval(ctx, uid)
	}
}

// removeOrphan removes the orphan uid, and if that fails, has it tried
// again later. A removal under way goes to its end even when nodelet is
// stopping (ctx done); the retry waits on ctx, which lives as long as the
// manager (the controller gives Reconcile no timeout).
func (r *PodReconciler) removeOrphan(ctx context.Context, uid types.UID) {
	log := klog.FromContext(ctx)
	defer r.releaseRemoval(uid)
	work := context.WithoutCancel(ctx)
	status, err := r.readPodStatus(work, uid)
	if err == nil && len(status.Sandboxes)+len(status.Containers) == 0 {
		// Already removed, by the Pod's own deletion.
		r.cache.Delete(uid, r.Clock.Now())
		r.orphanRemoved(uid)
		return
	}
	if err == nil {
		err = r.Runtime.KillPod(work, nil, status, nil)
	}
	if err == nil {
		var leftovers error
		leftovers, err = r.removePod(work, status)
		err = errors.Join(err, leftovers)
	}
	if err != nil {
		delay := r.orphanRemovalFailed(ctx, uid)
		log.Error(err, "Failed to remove runtime pod whose Pod is gone", "podUID", uid, "retryIn", delay)
		return
	}
	r.orphanRemoved(uid)
	r.forget(uid)
	log.Info("Removed runtime pod whose Pod is gone", "pod", klog.KRef(status.Namespace, status.Name), "podUID", uid)
}
