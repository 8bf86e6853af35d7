package controllers

// Housekeeping against in-memory fakes: a controller-runtime fake client
// for the Pods, plegtest.Runtime for the runtime, and recording
// fakes for folders and cgroups.

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

	"github.com/nodelet/nodelet/cgroups"
	"github.com/nodelet/nodelet/pleg/plegtest"
	noderuntime "github.com/nodelet/nodelet/runtime"

	"github.com/nodelet/nodelet/internal/await"
)

// removingRuntime is plegtest.Runtime that records which pods it killed and
// removed.
type removingRuntime struct {
	*plegtest.Runtime
	mu      sync.Mutex
	removed []types.UID
}

func (r *removingRuntime) SyncPod(context.Context, *corev1.Pod, *noderuntime.PodStatus, noderuntime.PodActions, *noderuntime.PodEnv) noderuntime.SyncResult {
	panic("not used")
}
func (r *removingRuntime) KillPod(context.Context, *corev1.Pod, *noderuntime.PodStatus, *int64) error {
	return nil
}
func (r *removingRuntime) RemovePod(_ context.Context, status *noderuntime.PodStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, status.UID)
	return nil
}
func (r *removingRuntime) PruneContainers(context.Context, *noderuntime.PodStatus) error { return nil }
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
func (l *podLeftovers) PodCgroupParent(pod *corev1.Pod) string { return string(pod.UID) }
func (l *podLeftovers) EnsurePod(*corev1.Pod) error            { panic("not used") }
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
		pod("a", map[string]noderuntime.SandboxState{"s1": ready}, nil),
		pod("b", map[string]noderuntime.SandboxState{"s2": ready}, nil),
	)}
	folders := &podLeftovers{present: []types.UID{"a", "b", "c"}}
	cgroups := &podLeftovers{present: []types.UID{"a", "c"}}
	userNamespaces := &podLeftovers{}
	r := NewPodReconciler(&PodReconciler{
		Client:         fake.NewClientBuilder().WithObjects(owned).Build(),
		Runtime:        rt,
		Volumes:        folders,
		Cgroups:        cgroups,
		Clock:          clock.RealClock{},
		UserNamespaces: userNamespaces,
	})
	h := &Housekeeping{Reconciler: r, Runtime: rt, Volumes: folders, Cgroups: cgroups, UserNamespaces: userNamespaces, Clock: clock.RealClock{}, Log: logr.Discard()}

	h.Sweep(context.Background())

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
		return nil
	})
}
