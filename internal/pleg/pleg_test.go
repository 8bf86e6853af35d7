package pleg

// Tests of the PLEG and the pod cache: generateEvents is pure; Relist runs
// against an in-memory runtime fake (plegtest.Runtime) whose relists can
// lag behind its direct reads, with a fake clock.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pleg/plegtest"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

var pod = plegtest.Pod

var (
	ready   = kubecontainer.SandboxReady
	run     = kubecontainer.ContainerRunning
	exitted = kubecontainer.ContainerExited
)

func TestGenerateEvents(t *testing.T) {
	sb := map[string]kubecontainer.SandboxState{"s1": ready}
	cases := map[string]struct {
		previous, current map[types.UID]*kubecontainer.PodStatus
		want              []PodLifecycleEvent
	}{
		"nothing changed": {
			previous: map[types.UID]*kubecontainer.PodStatus{"a": pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run})},
			current:  map[types.UID]*kubecontainer.PodStatus{"a": pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run})},
		},
		"a new pod: its sandbox and container": {
			current: map[types.UID]*kubecontainer.PodStatus{"a": pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run})},
			want: []PodLifecycleEvent{
				{ID: "a", Namespace: "ns", Name: "pod-a", Type: ContainerStarted, Data: "c1"},
				{ID: "a", Namespace: "ns", Name: "pod-a", Type: SandboxChanged, Data: "s1"},
			},
		},
		"a container died": {
			previous: map[types.UID]*kubecontainer.PodStatus{"a": pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run})},
			current:  map[types.UID]*kubecontainer.PodStatus{"a": pod("a", sb, map[string]kubecontainer.ContainerState{"c1": exitted})},
			want:     []PodLifecycleEvent{{ID: "a", Namespace: "ns", Name: "pod-a", Type: ContainerDied, Data: "c1"}},
		},
		"a pod disappeared": {
			previous: map[types.UID]*kubecontainer.PodStatus{"a": pod("a", sb, map[string]kubecontainer.ContainerState{"c1": exitted})},
			current:  map[types.UID]*kubecontainer.PodStatus{},
			want: []PodLifecycleEvent{
				{ID: "a", Namespace: "ns", Name: "pod-a", Type: ContainerRemoved, Data: "c1"},
				{ID: "a", Namespace: "ns", Name: "pod-a", Type: SandboxChanged, Data: "s1"},
			},
		},
		"only the changed pod of two": {
			previous: map[types.UID]*kubecontainer.PodStatus{
				"a": pod("a", sb, nil),
				"b": pod("b", map[string]kubecontainer.SandboxState{"s2": ready}, nil),
			},
			current: map[types.UID]*kubecontainer.PodStatus{
				"a": pod("a", sb, nil),
				"b": pod("b", map[string]kubecontainer.SandboxState{"s2": kubecontainer.SandboxNotReady}, nil),
			},
			want: []PodLifecycleEvent{{ID: "b", Namespace: "ns", Name: "pod-b", Type: SandboxChanged, Data: "s2"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, generateEvents(tc.previous, tc.current)); diff != "" {
				t.Errorf("generateEvents() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRelistSendsOneEventPerChangedPodWithoutBlocking(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	rt := plegtest.NewRuntime(
		pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, map[string]kubecontainer.ContainerState{"c1": run, "c2": run}),
		pod("b", map[string]kubecontainer.SandboxState{"s2": ready}, nil),
		pod("c", map[string]kubecontainer.SandboxState{"s3": ready}, nil),
	)
	// Room for two events only: the third must be dropped, not block.
	events := make(chan event.GenericEvent, 2)
	pleg := New(rt, NewCache(), events, time.Second, clk, logr.Discard())

	done := make(chan struct{})
	go func() {
		pleg.Relist(context.Background(), false)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Relist blocked on a full channel")
	}
	if got := len(events); got != 2 {
		t.Errorf("events queued = %d, want 2 (one per pod, the third dropped)", got)
	}

	// A second relist with nothing changed sends nothing.
	for len(events) > 0 {
		<-events
	}
	pleg.Relist(context.Background(), false)
	if got := len(events); got != 0 {
		t.Errorf("events after an unchanged relist = %d, want 0", got)
	}
	// A resync sends every pod again, as far as the channel has room.
	pleg.Relist(context.Background(), true)
	if got := len(events); got != 2 {
		t.Errorf("events after a resync = %d, want 2", got)
	}
}

func TestRelistReadsOnlyThePodsTheCacheDoesNotKnow(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	sb := map[string]kubecontainer.SandboxState{"s1": ready}
	// a: the reconcile that started it read it already, IPs included.
	readByReconcile := pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run})
	readByReconcile.Sandboxes[0].IPs = []string{"10.0.0.5"}
	// b: its record shows its container before it ran.
	behind := pod("b", map[string]kubecontainer.SandboxState{"s2": ready}, map[string]kubecontainer.ContainerState{"c2": kubecontainer.ContainerCreated})
	// c: never read (nodelet just started, or someone else made it).
	rt := plegtest.NewRuntime(
		pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run}),
		pod("b", map[string]kubecontainer.SandboxState{"s2": ready}, map[string]kubecontainer.ContainerState{"c2": run}),
		pod("c", map[string]kubecontainer.SandboxState{"s3": ready}, nil),
	)
	cache := NewCache()
	cache.Set("a", readByReconcile, clk.Now())
	cache.Set("b", behind, clk.Now())
	clk.Step(time.Second)
	events := make(chan event.GenericEvent, 10)
	New(rt, cache, events, time.Second, clk, logr.Discard()).Relist(context.Background(), false)

	if got := rt.DirectReads(); got != 1 {
		t.Errorf("direct reads = %d, want 1 (pod c's: a's record holds what the relist found, b's is left to its reconcile)", got)
	}
	sent := map[string]bool{}
	for len(events) > 0 {
		sent[(<-events).Object.GetName()] = true
	}
	if len(sent) != 3 {
		t.Errorf("events for %v, want all three pods: each changed since the last relist", sent)
	}
	if got, ok := cache.GetFresh("a"); !ok || got != readByReconcile {
		t.Errorf("pod a's record = %v, %v; want the reconcile's read, fresh as of the relist", got, ok)
	}
	if got, ok := cache.GetFresh("b"); ok {
		t.Errorf("pod b's record = %v served as fresh; want none until the pod is read again, its container ran since", got)
	}
	if got, ok := cache.GetFresh("c"); !ok || got.Name != "pod-c" || len(got.Sandboxes) != 1 {
		t.Errorf("pod c's record = %v, %v; want the relist's read of it", got, ok)
	}
	// A read after the relist serves b again.
	cache.Set("b", pod("b", map[string]kubecontainer.SandboxState{"s2": ready}, map[string]kubecontainer.ContainerState{"c2": run}), clk.Now().Add(time.Millisecond))
	if got, ok := cache.GetFresh("b"); !ok || got.Containers[0].State != run {
		t.Errorf("pod b's record after a new read = %v, %v; want it, its container running", got, ok)
	}
}

// A pod whose reconcile read its new state and settled it (nothing left to
// do) gets no event from the relist that finds the runtime just so; a pod
// whose record is settled but that changed again, or whose record was
// never settled, does.
func TestRelistSendsNoEventForAStateItsReconcileSettled(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	sb := func(id string) map[string]kubecontainer.SandboxState {
		return map[string]kubecontainer.SandboxState{id: ready}
	}
	running := func(id string) map[string]kubecontainer.ContainerState {
		return map[string]kubecontainer.ContainerState{id: run}
	}
	cache := NewCache()
	// a and b were read by the reconciles that started them, which found
	// nothing more to do; c's reconcile did not settle its read.
	settledA := pod("a", sb("s1"), running("c1"))
	settledB := pod("b", sb("s2"), running("c2"))
	cache.Set("a", settledA, clk.Now())
	cache.Set("b", settledB, clk.Now())
	cache.Set("c", pod("c", sb("s3"), running("c3")), clk.Now())
	cache.Settle("a", settledA)
	cache.Settle("b", settledB)
	// Settling a record the cache no longer holds settles nothing.
	cache.Settle("c", pod("c", sb("s3"), running("c3")))
	rt := plegtest.NewRuntime(
		pod("a", sb("s1"), running("c1")),
		// b's container exited after its reconcile's read.
		pod("b", sb("s2"), map[string]kubecontainer.ContainerState{"c2": exitted}),
		pod("c", sb("s3"), running("c3")),
	)
	clk.Step(time.Second)
	events := make(chan event.GenericEvent, 10)
	pleg := New(rt, cache, events, time.Second, clk, logr.Discard())
	pleg.Relist(context.Background(), false)

	sent := map[string]bool{}
	for len(events) > 0 {
		sent[(<-events).Object.GetName()] = true
	}
	if want := map[string]bool{"pod-b": true, "pod-c": true}; !cmp.Equal(sent, want) {
		t.Errorf("events for %v, want %v: a's state is the one its reconcile settled", sent, want)
	}
	if got, ok := cache.GetFresh("a"); !ok || got != settledA {
		t.Errorf("pod a's record = %v, %v; want the settled read, fresh as of the relist", got, ok)
	}
	// A record stored after the settled one is not settled.
	cache.Set("a", pod("a", sb("s1"), running("c1")), clk.Now())
	if cache.settledOn("a", pod("a", sb("s1"), running("c1"))) {
		t.Error("a record stored after the settled one counts as settled")
	}
	// The resync still sends every pod.
	pleg.Relist(context.Background(), true)
	if got := len(events); got != 3 {
		t.Errorf("events after a resync = %d, want 3", got)
	}
}

// A record the relist found out of date and left to the pod's reconcile
// stays out of date through the relists that follow, which see no further
// change of the pod: otherwise a reconcile that starts late (its worker
// busy writing a status through an API server outage, say) takes the old
// record for fresh, sees nothing to do, and nothing looks at the pod again.
func TestARecordLeftToItsReconcileStaysOutdatedThroughLaterRelists(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	sb := map[string]kubecontainer.SandboxState{"s1": ready}
	cache := NewCache()
	// The reconcile that started the container read the pod.
	cache.Set("a", pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run}), clk.Now())
	rt := plegtest.NewRuntime(pod("a", sb, map[string]kubecontainer.ContainerState{"c1": run}))
	events := make(chan event.GenericEvent, 10)
	pleg := New(rt, cache, events, time.Second, clk, logr.Discard())
	pleg.Relist(context.Background(), false)

	// The container exits; the next relist sees it and leaves the read.
	rt.Set(pod("a", sb, map[string]kubecontainer.ContainerState{"c1": exitted}))
	clk.Step(time.Second)
	pleg.Relist(context.Background(), false)
	// Later relists see no further change.
	for range 3 {
		clk.Step(time.Second)
		pleg.Relist(context.Background(), false)
	}
	if got, ok := cache.GetFresh("a"); ok {
		t.Errorf("GetFresh = %v (container %s) three relists after the exit was seen; want none until the pod is read again", got, got.Containers[0].State)
	}
	// A read that began after the exit was seen serves again.
	cache.Set("a", pod("a", sb, map[string]kubecontainer.ContainerState{"c1": exitted}), clk.Now())
	if got, ok := cache.GetFresh("a"); !ok || got.Containers[0].State != exitted {
		t.Errorf("GetFresh after a new read = %v, %v; want it, its container exited", got, ok)
	}
}

func TestCacheInvalidationNeverMovesBack(t *testing.T) {
	c := NewCache()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c.Set("a", &kubecontainer.PodStatus{UID: "a", Name: "a"}, t0.Add(time.Second))
	c.Invalidate("a", t0.Add(2*time.Second))
	// A relist that began before the sync's end invalidates as of its own start.
	c.Invalidate("a", t0)
	if got, ok := c.GetFresh("a"); ok {
		t.Errorf("GetFresh = %v after an action at t0+2s on a record of t0+1s; want none", got)
	}
}

func TestPodCacheKeepsTheNewerRecord(t *testing.T) {
	c := NewCache()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	newer := &kubecontainer.PodStatus{UID: "a", Name: "newer"}
	c.Set("a", newer, t0.Add(time.Second))
	c.Set("a", &kubecontainer.PodStatus{UID: "a", Name: "older"}, t0)
	got, ok := c.GetNewerThan("a", t0)
	if !ok || got != newer {
		t.Errorf("getNewerThan = %v, %v; want the newer record", got, ok)
	}
	if _, ok := c.GetNewerThan("a", t0.Add(2*time.Second)); ok {
		t.Error("getNewerThan returned a record older than asked for")
	}
	c.UpdateTime(t0.Add(3 * time.Second))
	if got, ok := c.GetNewerThan("b", t0.Add(2*time.Second)); !ok || len(got.Sandboxes) != 0 {
		t.Errorf("an unknown pod after a fresh relist should be an empty record, got %v, %v", got, ok)
	}
}

// startPLEG runs a PLEG over rt with a fake clock until the test ends.
func startPLEG(t *testing.T, rt *plegtest.Runtime, events chan event.GenericEvent) (*clocktesting.FakeClock, *Cache) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	cache := NewCache()
	pleg := New(rt, cache, events, time.Second, clk, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = pleg.Start(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return clk, cache
}

func TestPLEGRelistsEveryPeriodWhenTheRuntimeHasNoEvents(t *testing.T) {
	rt := plegtest.NewRuntime()
	clk, _ := startPLEG(t, rt, make(chan event.GenericEvent, 10))
	await.Eventually(t, 10*time.Second, "first relist", func(context.Context) error {
		if rt.Lists() < 1 {
			return fmt.Errorf("no relist yet")
		}
		return nil
	})
	for want := 2; want <= 4; want++ {
		// Step the clock only once the PLEG waits on its ticker.
		await.Eventually(t, 10*time.Second, "PLEG waiting", func(context.Context) error {
			if !clk.HasWaiters() {
				return fmt.Errorf("no waiter")
			}
			return nil
		})
		clk.Step(time.Second)
		await.Eventually(t, 10*time.Second, fmt.Sprintf("relist %d", want), func(context.Context) error {
			if got := rt.Lists(); got < want {
				return fmt.Errorf("%d relists", got)
			}
			return nil
		})
	}
}

func TestPLEGRequeuesAPodOnItsContainerEventAtOnce(t *testing.T) {
	truth := pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, map[string]kubecontainer.ContainerState{"c1": run})
	rt := plegtest.NewRuntime()
	rt.SetTruth(truth)
	containerEvents := rt.StreamContainerEvents()
	events := make(chan event.GenericEvent, 10)
	_, cache := startPLEG(t, rt, events)
	// The clock never moves: only the container event can bring the pod.
	containerEvents <- kubecontainer.PodIdentity{UID: "a", Namespace: "ns", Name: "pod-a"}
	select {
	case e := <-events:
		if e.Object.GetName() != "pod-a" || e.Object.GetNamespace() != "ns" {
			t.Errorf("event for %s/%s, want ns/pod-a", e.Object.GetNamespace(), e.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the pod after its container event")
	}
	if got, ok := cache.GetNewerThan("a", time.Time{}); !ok || len(got.Containers) != 1 {
		t.Errorf("cache after the event = %v, %v; want the pod with its container", got, ok)
	}
}

func TestAContainerEventOutdatesAKnownPodsRecordWithoutReadingIt(t *testing.T) {
	before := pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, nil)
	rt := plegtest.NewRuntime(before)
	rt.SetTruth(pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, map[string]kubecontainer.ContainerState{"c1": run}))
	containerEvents := rt.StreamContainerEvents()
	events := make(chan event.GenericEvent, 10)
	clk, cache := startPLEG(t, rt, events)
	// The first relist finds the pod and reads it; then the clock never
	// moves past another relist: only the container event can change what
	// the cache holds.
	select {
	case <-events:
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the first relist")
	}
	reads := rt.DirectReads()
	if got, ok := cache.GetFresh("a"); !ok || len(got.Sandboxes) != 1 {
		t.Fatalf("GetFresh after the first relist = %v, %v; want the pod's sandbox", got, ok)
	}

	clk.Step(time.Millisecond)
	containerEvents <- kubecontainer.PodIdentity{UID: "a", Namespace: "ns", Name: "pod-a"}
	select {
	case e := <-events:
		if e.Object.GetName() != "pod-a" {
			t.Errorf("event for %s, want pod-a", e.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the pod after its container event")
	}
	if got := rt.DirectReads(); got != reads {
		t.Errorf("direct reads after the event = %d, want %d: the pod's reconcile reads it", got, reads)
	}
	if got, ok := cache.GetFresh("a"); ok {
		t.Errorf("GetFresh = %v after the container event; want no record until the pod is read again", got)
	}
}
