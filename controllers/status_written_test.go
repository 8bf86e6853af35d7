package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestWrittenStatusesServeTheLastWriteUntilTheCacheHasIt(t *testing.T) {
	const uid = types.UID("u1")
	cached := func(version string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: version},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	type write struct {
		basedOn, latest string
		phase           corev1.PodPhase
	}
	for name, tc := range map[string]struct {
		writes    []write
		read      *corev1.Pod
		wantPhase corev1.PodPhase
	}{
		"nothing written: the cache's": {
			read: cached("10", corev1.PodPending), wantPhase: corev1.PodPending,
		},
		"the cache holds the version written against: the write's": {
			writes: []write{{"10", "11", corev1.PodRunning}},
			read:   cached("10", corev1.PodPending), wantPhase: corev1.PodRunning,
		},
		"the cache holds the write: the cache's": {
			writes: []write{{"10", "11", corev1.PodRunning}},
			read:   cached("11", corev1.PodRunning), wantPhase: corev1.PodRunning,
		},
		"the cache holds a later version, someone else's: the cache's": {
			writes: []write{{"10", "11", corev1.PodRunning}},
			read:   cached("12", corev1.PodFailed), wantPhase: corev1.PodFailed,
		},
		"two writes, the second from the first's status, the cache at the first: the second's": {
			writes: []write{{"10", "11", corev1.PodPending}, {"10", "12", corev1.PodRunning}},
			read:   cached("11", corev1.PodPending), wantPhase: corev1.PodRunning,
		},
		"two writes in a chain, the cache at the very first version: the second's": {
			writes: []write{{"10", "11", corev1.PodPending}, {"11", "12", corev1.PodRunning}},
			read:   cached("10", ""), wantPhase: corev1.PodRunning,
		},
		"a write from a version outside the chain starts a new one": {
			writes: []write{{"10", "11", corev1.PodPending}, {"20", "21", corev1.PodRunning}},
			read:   cached("10", ""), wantPhase: "",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var w writtenStatuses
			for _, wr := range tc.writes {
				w.record(uid, wr.basedOn, wr.latest, corev1.PodStatus{Phase: wr.phase})
			}
			if got := w.current(tc.read).Status.Phase; got != tc.wantPhase {
				t.Errorf("phase %q, want %q", got, tc.wantPhase)
			}
		})
	}
}

func TestWrittenStatusesForgetOnceTheCacheHasTheWrite(t *testing.T) {
	var w writtenStatuses
	w.record("u1", "10", "11", corev1.PodStatus{Phase: corev1.PodRunning})
	w.current(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "11"}})
	// A version the cache held before is no one's to substitute any more.
	if got := w.current(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "10"}}).Status.Phase; got != "" {
		t.Errorf("phase %q after the cache had the write, want the cache's own", got)
	}
	w.record("u2", "5", "6", corev1.PodStatus{Phase: corev1.PodRunning})
	w.forget("u2")
	if len(w.byUID) != 0 {
		t.Errorf("%d pods remembered after every one was caught up or forgotten", len(w.byUID))
	}
}

// An update is an echo when it brings, to the version, what nodelet's
// last write made of the pod, unless that write ended the pod.
func TestAnEchoIsTheLastWriteToTheVersionAndNotTerminal(t *testing.T) {
	pod := func(uid types.UID, version string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: version}}
	}
	var w writtenStatuses
	w.record("running", "10", "11", corev1.PodStatus{Phase: corev1.PodRunning})
	w.record("running", "11", "12", corev1.PodStatus{Phase: corev1.PodRunning})
	w.record("failed", "20", "21", corev1.PodStatus{Phase: corev1.PodFailed})
	w.record("succeeded", "30", "31", corev1.PodStatus{Phase: corev1.PodSucceeded})
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod("running", "12"), true},
		{pod("running", "11"), false}, // an earlier write's: only the last one's version is kept
		{pod("running", "13"), false}, // someone else's change after the write
		{pod("failed", "21"), false},
		{pod("succeeded", "31"), false},
		{pod("never-written", "12"), false},
	} {
		if got := w.echoes(tc.pod); got != tc.want {
			t.Errorf("echoes(%s at %s) = %v, want %v", tc.pod.UID, tc.pod.ResourceVersion, got, tc.want)
		}
	}
}

// The Pod update predicate leaves out the echo of a status write, and
// lets the Pod's other updates through.
func TestPodUpdatesButEchoesAreReconciled(t *testing.T) {
	r := NewPodReconciler(&PodReconciler{})
	r.written.record("u1", "10", "11", corev1.PodStatus{Phase: corev1.PodRunning})
	update := func(version string) event.UpdateEvent {
		return event.UpdateEvent{
			ObjectOld: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "10"}},
			ObjectNew: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: version}},
		}
	}
	if r.podUpdated(update("11")) {
		t.Error("the echo of the status write was let through")
	}
	if !r.podUpdated(update("12")) {
		t.Error("an update after the status write was left out")
	}
}
