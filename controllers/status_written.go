package controllers

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writtenStatuses remembers, for each pod, the status nodelet last wrote
// and the versions of the Pod that write was made against, so that a
// reconcile reading a cache that has not seen the write yet works from
// what the API server holds, as the kubelet's status manager works from
// its own cache rather than the informer's: a status generated against an
// older one would be written again, every condition with a new transition
// time (a second write for each pod started under load), or go backwards.
type writtenStatuses struct {
	mu    sync.Mutex
	byUID map[types.UID]writtenStatus
}

type writtenStatus struct {
	// status is what the API server answered the last write with.
	status corev1.PodStatus
	// latest is the Pod's resourceVersion after that write.
	latest string
	// stale are the versions from before it that nodelet worked from,
	// which the cache may still hold.
	stale map[string]bool
}

// record notes a status write made against the Pod at resourceVersion
// basedOn, which the API server answered with status at version latest.
func (w *writtenStatuses) record(uid types.UID, basedOn, latest string, status corev1.PodStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byUID == nil {
		w.byUID = map[types.UID]writtenStatus{}
	}
	stale := map[string]bool{basedOn: true}
	// A write made from what an earlier one wrote keeps that one's
	// versions stale too.
	if prev, ok := w.byUID[uid]; ok && (prev.latest == basedOn || prev.stale[basedOn]) {
		for v := range prev.stale {
			stale[v] = true
		}
		stale[prev.latest] = true
	}
	delete(stale, latest)
	w.byUID[uid] = writtenStatus{status: *status.DeepCopy(), latest: latest, stale: stale}
}

// current gives pod, as read from the cache, the status last written when
// the cache still holds a version from before that write. Once the cache
// holds the write or a later version, it forgets the write.
func (w *writtenStatuses) current(pod *corev1.Pod) *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.byUID[pod.UID]
	if !ok {
		return pod
	}
	if !written.stale[pod.ResourceVersion] {
		delete(w.byUID, pod.UID)
		return pod
	}
	pod.Status = *written.status.DeepCopy()
	return pod
}

// echoes reports whether pod, as an update from the API server brings it,
// is what nodelet's last status write made of it, to the version: the
// reconcile that wrote it has seen all it holds, so it needs no other. A
// terminal status is no mere echo: it takes the pod to its teardown,
// which the pod's next reconcile does.
func (w *writtenStatuses) echoes(pod *corev1.Pod) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.byUID[pod.UID]
	if !ok || written.latest != pod.ResourceVersion {
		return false
	}
	phase := written.status.Phase
	return phase != corev1.PodSucceeded && phase != corev1.PodFailed
}

// forget drops what is remembered of a pod nodelet removed.
func (w *writtenStatuses) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byUID, uid)
}
