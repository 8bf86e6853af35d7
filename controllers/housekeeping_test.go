package controllers

// Housekeeping against in-memory fakes: a controller-runtime fake client
// for the Pods, plegtest.Runtime for the runtime, and recording
// fakes for folders and cgroups; the allocations in a real
// allocation.Store in t.TempDir().

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pleg/plegtest"
	"github.com/nodelet/nodelet/internal/resources/allocation"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/testutil/await"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// removingRuntime is plegtest.Runtime that records which pods it killed and
// removed, with pod log folders it lists and records the removal of.
type removingRuntime struct {
	*plegtest.Runtime
	mu          sync.Mutex
	removed     []types.UID
	podLogs     []noderuntime.PodLogs
	removedLogs []types.UID
}

func (r *removingRuntime) ListPodLogs() ([]noderuntime.PodLogs, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.podLogs), nil
}
func (r *removingRuntime) RemovePodLogs(_, _ string, uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removedLogs = append(r.removedLogs, uid)
	return nil
}

func (r *removingRuntime) SyncPod(context.Context, *corev1.Pod, *kubecontainer.PodStatus, noderuntime.PodActions, *noderuntime.PodEnv) noderuntime.SyncResult {
	panic("not used")
}
func (r *removingRuntime) KillPod(context.Context, *corev1.Pod, *kubecontainer.PodStatus, *int64) error {
	return nil
}
func (r *removingRuntime) RemovePod(_ context.Context, status *kubecontainer.PodStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, status.UID)
	return nil
}
func (r *removingRuntime) PruneContainers(context.Context, *kubecontainer.PodStatus) error {
	return nil
}
func (r *removingRuntime) removedPods() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.removed)
}

// podLeftovers lists and removes per-pod things (folders or cgroups).
type podLeftovers struct {
	mu      sync.Mutex
	present []types.UID
	removed []types.UID
}

func (l *podLeftovers) ListPods() ([]types.UID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.present), nil
}
func (l *podLeftovers) remove(uid types.UID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removed = append(l.removed, uid)
	return nil
}
func (l *podLeftovers) TearDownPod(_ context.Context, uid types.UID) error { return l.remove(uid) }
func (l *podLeftovers) RemovePod(uid types.UID) error                      { return l.remove(uid) }
func (l *podLeftovers) Release(uid types.UID)                              { _ = l.remove(uid) }
func (l *podLeftovers) PodDir(uid types.UID) string                        { return string(uid) }
func (l *podLeftovers) SetUpPod(context.Context, *corev1.Pod) (map[string]string, time.Time, error) {
	panic("not used")
}
func (l *podLeftovers) ExtraSupplementalGroups(*corev1.Pod) []int64 { panic("not used") }
func (l *podLeftovers) SELinuxRelabel(*corev1.Pod) map[string]bool  { panic("not used") }
func (l *podLeftovers) PodCgroupParent(pod *corev1.Pod) string      { return string(pod.UID) }
func (l *podLeftovers) EnsurePod(*corev1.Pod) error                 { panic("not used") }
func (l *podLeftovers) PodConfig(*corev1.Pod) (*cgroups.ResourceConfig, error) {
	panic("not used")
}
func (l *podLeftovers) SetPodConfig(*corev1.Pod, *cgroups.ResourceConfig) error { panic("not used") }
func (l *podLeftovers) removedPods() []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.removed)
}

func TestHousekeepingRemovesWhatNoPodOwns(t *testing.T) {
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-a", UID: "a"}}
	rt := &removingRuntime{Runtime: plegtest.NewRuntime(
		pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, nil),
		pod("b", map[string]kubecontainer.SandboxState{"s2": ready}, nil),
	)}
	// b's logs go with its runtime pod (RemovePod), c's by themselves:
	// c's removal may have ended in an error after the runtime removed
	// it all.
	rt.podLogs = []noderuntime.PodLogs{{Namespace: "ns", Name: "pod-a", UID: "a"}, {Namespace: "ns", Name: "pod-b", UID: "b"}, {Namespace: "ns", Name: "pod-c", UID: "c"}}
	folders := &podLeftovers{present: []types.UID{"a", "b", "c"}}
	cgroups := &podLeftovers{present: []types.UID{"a", "c"}}
	allocations, err := allocation.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []types.UID{"a", "b"} {
		if err := allocations.Set(uid, allocation.FromPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}})); err != nil {
			t.Fatal(err)
		}
	}
	userNamespaces := &podLeftovers{}
	r := NewPodReconciler(&PodReconciler{
		Client:         fake.NewClientBuilder().WithObjects(owned).Build(),
		Runtime:        rt,
		Volumes:        folders,
		Cgroups:        cgroups,
		Allocations:    allocations,
		Clock:          clock.RealClock{},
		UserNamespaces: userNamespaces,
	})
	h := &Housekeeping{Reconciler: r, Runtime: rt, Volumes: folders, Cgroups: cgroups, UserNamespaces: userNamespaces, Clock: clock.RealClock{}, Log: logr.Discard()}

	h.Sweep(context.Background())

	if got := allocations.UIDs(); !slices.Equal(got, []types.UID{"a"}) {
		t.Errorf("allocations of %v after the sweep, want [a]", got)
	}

	// b's runtime pod has no Pod: it is removed, with its folder and
	// cgroup, by the orphan removal Sweep starts.
	await.Eventually(t, 10*time.Second, "orphan runtime pod removed", func(context.Context) error {
		if got := rt.removedPods(); !slices.Equal(got, []types.UID{"b"}) {
			return fmt.Errorf("removed runtime pods %v, want [b]", got)
		}
		return nil
	})
	// c has a folder and a cgroup but no runtime pod and no Pod. The
	// user namespace ranges of both go with their folders.
	await.Eventually(t, 10*time.Second, "leftovers removed", func(context.Context) error {
		gotFolders, gotCgroups, gotRanges := folders.removedPods(), cgroups.removedPods(), userNamespaces.removedPods()
		slices.Sort(gotFolders)
		slices.Sort(gotCgroups)
		slices.Sort(gotRanges)
		if !slices.Equal(gotFolders, []types.UID{"b", "c"}) || !slices.Equal(gotCgroups, []types.UID{"b", "c"}) || !slices.Equal(gotRanges, []types.UID{"b", "c"}) {
			return fmt.Errorf("removed folders %v, cgroups %v and user namespace ranges %v, want [b c] each", gotFolders, gotCgroups, gotRanges)
		}
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if !slices.Equal(rt.removedLogs, []types.UID{"c"}) {
			return fmt.Errorf("removed log folders %v, want [c]", rt.removedLogs)
		}
		return nil
	})
}

func TestHousekeepingDropsTheAllocationsOfPodsGoneWhileNodeletWasDown(t *testing.T) {
	// Before the restart: pods a and gone were admitted; gone was deleted
	// while nodelet was down, and its runtime pod went with the node's
	// reboot, say: nothing else will ever reconcile it.
	dir := t.TempDir()
	before, err := allocation.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []types.UID{"a", "gone"} {
		if err := before.Set(uid, allocation.FromPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}})); err != nil {
			t.Fatal(err)
		}
	}

	allocations, err := allocation.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-a", UID: "a"}}
	rt := &removingRuntime{Runtime: plegtest.NewRuntime(pod("a", map[string]kubecontainer.SandboxState{"s1": ready}, nil))}
	r := NewPodReconciler(&PodReconciler{
		Client:      fake.NewClientBuilder().WithObjects(owned).Build(),
		Runtime:     rt,
		Volumes:     &podLeftovers{},
		Cgroups:     &podLeftovers{},
		Allocations: allocations,
		Clock:       clock.RealClock{},
	})
	h := &Housekeeping{
		Reconciler: r, Runtime: rt, Volumes: &podLeftovers{}, Cgroups: &podLeftovers{},
		// No periodic round during the test: the sweep at start does it.
		Period: time.Hour, Clock: clock.RealClock{}, Log: logr.Discard(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	// Dropped from the file too: a nodelet started again reads only a's.
	await.Eventually(t, 10*time.Second, "the allocation of the pod that is gone dropped", func(context.Context) error {
		reopened, err := allocation.Open(dir)
		if err != nil {
			return err
		}
		if got := reopened.UIDs(); !slices.Equal(got, []types.UID{"a"}) {
			return fmt.Errorf("allocations on disk of %v, want [a]", got)
		}
		return nil
	})
	if _, ok := allocations.Get("a"); !ok {
		t.Errorf("the allocation of pod a, still bound to the node, was dropped")
	}
}
