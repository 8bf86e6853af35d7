package controllers

import (
	"testing"
	"time"

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
		old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: tc.pod.UID, ResourceVersion: "1"}}
		if got := w.echoes(old, tc.pod); got != tc.want {
			t.Errorf("echoes(%s at %s) = %v, want %v", tc.pod.UID, tc.pod.ResourceVersion, got, tc.want)
		}
	}
}

// The watch may bring a write's echo before its answer: an update from
// the version the write in flight was made against, holding the status it
// sent, is that echo.
func TestAnEchoMayComeBeforeTheWritesAnswer(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 500_000_000, time.UTC))
	sent := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}
	update := func(from, to string, status corev1.PodStatus) (*corev1.Pod, *corev1.Pod) {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: from}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: to}, Status: status}
	}
	// What the API server keeps: times to the second.
	stored := *sent.DeepCopy()
	stored.StartTime = &metav1.Time{Time: started.Truncate(time.Second)}
	for name, tc := range map[string]struct {
		sent     corev1.PodStatus
		failed   bool
		from, to string
		holds    corev1.PodStatus
		want     bool
	}{
		"from the version written against, holding what was sent": {
			sent: sent, from: "10", to: "11", holds: stored, want: true,
		},
		"from another version: someone else's change came between": {
			sent: sent, from: "11", to: "12", holds: stored,
		},
		"holding something else": {
			sent: sent, from: "10", to: "11", holds: corev1.PodStatus{Phase: corev1.PodFailed},
		},
		"a terminal status is never an echo": {
			sent: corev1.PodStatus{Phase: corev1.PodSucceeded}, from: "10", to: "11", holds: corev1.PodStatus{Phase: corev1.PodSucceeded},
		},
		"the write failed": {
			sent: sent, failed: true, from: "10", to: "11", holds: stored,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var w writtenStatuses
			w.send("u1", "10", tc.sent)
			if tc.failed {
				w.unsend("u1")
			}
			old, pod := update(tc.from, tc.to, tc.holds)
			if got := w.echoes(old, pod); got != tc.want {
				t.Errorf("echoes = %v, want %v", got, tc.want)
			}
		})
	}
	// A write made against a version the cache still held after an earlier
	// write lands on top of that write: its echo comes from the earlier
	// write's version.
	var chained writtenStatuses
	chained.record("u1", "10", "11", corev1.PodStatus{Phase: corev1.PodPending})
	chained.send("u1", "10", sent)
	if old, pod := update("11", "12", stored); !chained.echoes(old, pod) {
		t.Error("the echo of a write made on top of an earlier one was let through")
	}
	if old, pod := update("10", "12", stored); !chained.echoes(old, pod) {
		t.Error("the echo of a write made against the version the cache held was let through")
	}

	// Once answered, the answer's version is the echo, as for any write.
	var w writtenStatuses
	w.send("u1", "10", sent)
	w.record("u1", "10", "11", stored)
	if len(w.sending) != 0 {
		t.Errorf("%d writes still in flight after the answer", len(w.sending))
	}
	if old, pod := update("10", "11", stored); !w.echoes(old, pod) {
		t.Error("the answered write's version is not its echo")
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
