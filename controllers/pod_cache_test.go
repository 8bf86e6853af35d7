package controllers

// The reconciler's reads through the pod cache, against an in-memory runtime
// fake (plegtest.Runtime) whose relists can lag behind its direct reads,
// with a fake clock.

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pleg/plegtest"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

var pod = plegtest.Pod

var (
	ready = kubecontainer.SandboxReady
	run   = kubecontainer.ContainerRunning
)

// The kubelet's "pod cache newer than" rule: a reconcile never acts on a
// runtime record older than its own last action on the pod.
func TestPodStatusIsNeverOlderThanLastSync(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	before := pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, nil)
	after := pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, map[string]kubecontainer.ContainerState{"c1": run})
	rt := plegtest.NewRuntime(before)
	r := NewPodReconciler(&PodReconciler{Clock: clk})
	r.Runtime = &readOnlyRuntime{rt}
	pleg := r.NewPLEG(rt, time.Second, logr.Discard())
	ctx := context.Background()

	// The PLEG relists at t0 and caches the pod as it was then.
	pleg.Relist(ctx, false)
	readsAfterRelist := rt.DirectReads()

	// The reconciler starts a container at t1 and marks the pod synced.
	clk.Step(100 * time.Millisecond)
	rt.SetTruth(after)
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
	if rt.DirectReads() != readsAfterRelist+1 {
		t.Errorf("direct reads = %d, want %d", rt.DirectReads(), readsAfterRelist+1)
	}

	// A relist whose lists lag (they still show no container) but which
	// started after the sync is fresh enough; the cache keeps the newer
	// direct read rather than the lagging list.
	pleg.Relist(ctx, false)
	readsBefore := rt.DirectReads()
	got, err = r.podStatus(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 1 {
		t.Errorf("podStatus after a fresh relist has %d containers, want 1", len(got.Containers))
	}
	if rt.DirectReads() != readsBefore {
		t.Errorf("podStatus read the runtime although the cache was fresh")
	}
}

// readOnlyRuntime gives the reconciler the fake's GetPodStatus; the test
// never gets as far as acting.
type readOnlyRuntime struct{ *plegtest.Runtime }

func (readOnlyRuntime) SyncPod(context.Context, *corev1.Pod, *kubecontainer.PodStatus, noderuntime.PodActions, *noderuntime.PodEnv) noderuntime.SyncResult {
	panic("not used")
}
func (readOnlyRuntime) KillPod(context.Context, *corev1.Pod, *kubecontainer.PodStatus, *int64) error {
	panic("not used")
}
func (readOnlyRuntime) RemovePod(context.Context, *kubecontainer.PodStatus) error { panic("not used") }
func (readOnlyRuntime) PruneContainers(context.Context, *kubecontainer.PodStatus) error {
	panic("not used")
}
