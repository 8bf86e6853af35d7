package controllers

// The reconciler's reads through the pod cache, against an in-memory runtime
// fake (fakeRuntime below) whose relists can lag behind its direct reads,
// with a fake clock.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

func pod(uid types.UID, sandboxes map[string]noderuntime.SandboxState, containers map[string]noderuntime.ContainerState) *noderuntime.PodStatus {
	p := &noderuntime.PodStatus{UID: uid, Namespace: "ns", Name: "pod-" + string(uid)}
	for id, state := range sandboxes {
		p.Sandboxes = append(p.Sandboxes, &noderuntime.SandboxStatus{ID: id, State: state})
	}
	for id, state := range containers {
		p.Containers = append(p.Containers, &noderuntime.ContainerStatus{ID: noderuntime.ContainerID{Type: "containerd", ID: id}, State: state})
	}
	return p
}

var (
	ready = noderuntime.SandboxReady
	run   = noderuntime.ContainerRunning
)

// fakeRuntime answers relists from listed (which a test may leave stale)
// and direct reads from truth, counting the direct reads.
type fakeRuntime struct {
	mu          sync.Mutex
	listed      map[types.UID]*noderuntime.PodStatus
	truth       map[types.UID]*noderuntime.PodStatus
	directReads int
	listCalls   int
	// containerEvents, when set, is the runtime's container event stream.
	containerEvents chan noderuntime.PodIdentity
}

func (f *fakeRuntime) ListPods(context.Context) (map[types.UID]*noderuntime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	out := map[types.UID]*noderuntime.PodStatus{}
	for uid, p := range f.listed {
		out[uid] = p
	}
	return out, nil
}

func (f *fakeRuntime) GetPodStatus(_ context.Context, uid types.UID) (*noderuntime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.directReads++
	if p, ok := f.truth[uid]; ok {
		return p, nil
	}
	return &noderuntime.PodStatus{UID: uid}, nil
}

// WatchContainerEvents answers as containerd 1.6 does unless the test
// gives the fake a stream.
func (f *fakeRuntime) WatchContainerEvents(ctx context.Context, onEvent func(noderuntime.PodIdentity)) error {
	if f.containerEvents == nil {
		return status.Error(codes.Unimplemented, "unknown method GetContainerEvents")
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case id := <-f.containerEvents:
			onEvent(id)
		}
	}
}

func (f *fakeRuntime) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.directReads
}

// The kubelet's "pod cache newer than" rule: a reconcile never acts on a
// runtime record older than its own last action on the pod.
func TestPodStatusIsNeverOlderThanLastSync(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	before := pod("a", map[string]noderuntime.SandboxState{"s1": ready}, nil)
	after := pod("a", map[string]noderuntime.SandboxState{"s1": ready}, map[string]noderuntime.ContainerState{"c1": run})
	rt := &fakeRuntime{
		listed: map[types.UID]*noderuntime.PodStatus{"a": before},
		truth:  map[types.UID]*noderuntime.PodStatus{"a": before},
	}
	r := NewPodReconciler(&PodReconciler{Clock: clk})
	r.Runtime = &readOnlyRuntime{rt}
	pleg := r.NewPLEG(rt, time.Second, logr.Discard())
	ctx := context.Background()

	// The PLEG relists at t0 and caches the pod as it was then.
	pleg.Relist(ctx, false)
	readsAfterRelist := rt.reads()

	// The reconciler starts a container at t1 and marks the pod synced.
	clk.Step(100 * time.Millisecond)
	rt.mu.Lock()
	rt.truth["a"] = after
	rt.mu.Unlock()
	r.markSynced("a")

	// The cache is from t0 < t1: the reconciler must read the runtime.
	clk.Step(100 * time.Millisecond)
	got, err := r.podStatus(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 1 {
		t.Fatalf("podStatus returned the stale record (%d containers), want the one with the started container", len(got.Containers))
	}
	if rt.reads() != readsAfterRelist+1 {
		t.Errorf("direct reads = %d, want %d", rt.reads(), readsAfterRelist+1)
	}

	// A relist whose lists lag (they still show no container) but which
	// started after the sync is fresh enough; the cache keeps the newer
	// direct read rather than the lagging list.
	pleg.Relist(ctx, false)
	readsBefore := rt.reads()
	got, err = r.podStatus(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 1 {
		t.Errorf("podStatus after a fresh relist has %d containers, want 1", len(got.Containers))
	}
	if rt.reads() != readsBefore {
		t.Errorf("podStatus read the runtime although the cache was fresh")
	}
}

// readOnlyRuntime gives the reconciler the fake's GetPodStatus; the test
// never gets as far as acting.
type readOnlyRuntime struct{ *fakeRuntime }

func (readOnlyRuntime) SyncPod(context.Context, *corev1.Pod, *noderuntime.PodStatus, noderuntime.PodActions, *noderuntime.PodEnv) noderuntime.SyncResult {
	panic("not used")
}
func (readOnlyRuntime) KillPod(context.Context, *corev1.Pod, *noderuntime.PodStatus, *int64) error {
	panic("not used")
}
func (readOnlyRuntime) RemovePod(context.Context, *noderuntime.PodStatus) error { panic("not used") }
func (readOnlyRuntime) PruneContainers(context.Context, *noderuntime.PodStatus) error {
	panic("not used")
}
