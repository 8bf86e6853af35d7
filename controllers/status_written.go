package controllers

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podstatus"
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
	// sending holds each pod's write on its way to the API server: the
	// watch may bring its echo before its answer comes.
	sending map[types.UID]sentStatus
}

// sentStatus is a status write sent and not answered yet.
type sentStatus struct {
	// from are the Pod's resourceVersions the write may apply to: the one
	// it was made against and, when that one was stale, the last write's.
	from   []string
	status corev1.PodStatus
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
	delete(w.sending, uid)
}

// send notes a write of status sent against the Pod at resourceVersion
// basedOn, until record (its answer) or unsend (its failure).
func (w *writtenStatuses) send(uid types.UID, basedOn string, status corev1.PodStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sending == nil {
		w.sending = map[types.UID]sentStatus{}
	}
	from := []string{basedOn}
	if prev, ok := w.byUID[uid]; ok && prev.stale[basedOn] {
		// Made from the status the last write wrote (current), so on top
		// of that write.
		from = append(from, prev.latest)
	}
	w.sending[uid] = sentStatus{from: from, status: *status.DeepCopy()}
}

// unsend forgets a write that failed.
func (w *writtenStatuses) unsend(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.sending, uid)
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

// echoes reports whether pod, as an update from old brings it, is what
// nodelet's last status write made of it: the version that write's answer
// named, or, before the answer has come, the version after the one the
// write in flight was made against, holding the status it sent. The
// reconcile that wrote it has seen all it holds, so it needs no other. A
// terminal status is no mere echo: it takes the pod to its teardown,
// which the pod's next reconcile does.
func (w *writtenStatuses) echoes(old, pod *corev1.Pod) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if written, ok := w.byUID[pod.UID]; ok && written.latest == pod.ResourceVersion {
		return !podstatus.IsTerminalPhase(written.status.Phase)
	}
	sent, ok := w.sending[pod.UID]
	return ok && old != nil && slices.Contains(sent.from, old.ResourceVersion) &&
		!podstatus.IsTerminalPhase(sent.status.Phase) && podstatus.Equal(sent.status, pod.Status)
}

// forget drops what is remembered of a pod nodelet removed.
func (w *writtenStatuses) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byUID, uid)
	delete(w.sending, uid)
}
