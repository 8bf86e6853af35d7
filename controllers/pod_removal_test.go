package controllers

// Pod removal against envtest and the CRI fake (see pod_controller_test.go).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// A container that the runtime reports exited but will not remove, as
// containerd 1.6 keeps the task of a start a nodelet SIGKILL cut short
// even once the pod's cgroup is gone, does not hold the deleted Pod: it
// leaves the API server once its cgroup is removed (what was left in it
// killed), as under the kubelet, and the runtime's objects are tried again
// until they go.
func TestAContainerTheRuntimeWillNotRemoveDoesNotHoldTheDeletedPod(t *testing.T) {
	env := startReconciler(t)
	ctx := context.Background()
	pod, key := env.runPod(t, "stuck")

	stillRunning := grpcstatus.Error(codes.FailedPrecondition, "cannot delete running task: failed precondition")
	env.failCalls("RemoveContainer", stillRunning, 100_000)
	if err := env.client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	env.waitForPodGone(t, key)
	if env.cgroups.has(pod.UID) {
		t.Error("the Pod went with its cgroup still there")
	}
	if len(env.runtimeContainers(t, pod.UID)) == 0 {
		t.Fatal("the container went though every RemoveContainer failed: the test shows nothing")
	}

	// The runtime lets go: the retries remove what was left.
	tried := env.clearFailures("RemoveContainer")
	await.Eventually(t, 30*time.Second, "the runtime's objects removed", func(context.Context) error {
		if n := len(env.runtimeSandboxes(t, pod.UID)) + len(env.runtimeContainers(t, pod.UID)); n != 0 {
			return fmt.Errorf("%d runtime objects left", n)
		}
		return nil
	})
	if tried == 100_000 {
		t.Error("RemoveContainer was never called")
	}
}

// A deleted Pod whose cgroup cannot be removed, processes still in it,
// while the runtime will not remove its container, stays until the cgroup
// goes: its volumes may still be in use.
func TestADeletedPodWhoseCgroupKeepsProcessesStays(t *testing.T) {
	env := startReconciler(t)
	ctx := context.Background()
	pod, key := env.runPod(t, "busy")

	env.failCalls("RemoveContainer", grpcstatus.Error(codes.FailedPrecondition, "cannot delete running task: failed precondition"), 100_000)
	var mu sync.Mutex
	tries, busy := 0, true
	env.cgroups.mu.Lock()
	env.cgroups.onRemove = func(uid types.UID) error {
		mu.Lock()
		defer mu.Unlock()
		if uid != pod.UID || !busy {
			return nil
		}
		tries++
		return fmt.Errorf("cgroup of pod %s still has processes", uid)
	}
	env.cgroups.mu.Unlock()
	if err := env.client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// Three tries, all refused: the Pod is still there after each.
	await.Eventually(t, 30*time.Second, "three tries to remove the pod's cgroup", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if tries < 3 {
			return fmt.Errorf("%d tries", tries)
		}
		return nil
	})
	if err := env.client.Get(ctx, key, &corev1.Pod{}); err != nil {
		t.Fatalf("the Pod went while its cgroup held processes: %v", err)
	}

	mu.Lock()
	busy = false
	mu.Unlock()
	env.clearFailures("RemoveContainer")
	env.waitForPodGone(t, key)
}

// A Pod being deleted whose runtime objects another removal is taking
// (its removal as an orphan, started when the Pod left the API server)
// leaves them to it instead of removing the same containers at once, which
// containerd refuses ("already in removing state"), failing both. Once that
// removal is over, the Pod goes.
func TestATerminatingPodLeavesItsContainersToARemovalUnderWay(t *testing.T) {
	var r *PodReconciler
	env := startReconcilerWith(t, func(pr *PodReconciler) { r = pr })
	ctx := context.Background()
	pod, key := env.runPod(t, "racing")

	// Another removal of the pod's runtime objects is under way.
	if !r.claimRemoval(pod.UID) {
		t.Fatal("the pod's removal is already claimed")
	}
	if err := env.client.Delete(ctx, pod, client.GracePeriodSeconds(1)); err != nil {
		t.Fatal(err)
	}
	// This reconcile reads the pod from the manager's cache, as the
	// manager's own do: it must have seen the deletion first.
	await.Eventually(t, 30*time.Second, "deletion in the manager's cache", func(ctx context.Context) error {
		cached := &corev1.Pod{}
		if err := r.Client.Get(ctx, key, cached); err != nil {
			return err
		}
		if cached.DeletionTimestamp == nil {
			return errors.New("not yet deleted in the cache")
		}
		return nil
	})
	// The manager's own reconciles of the pod run too; each leaves the
	// removal alone, as this one must.
	result, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	if err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	if result.RequeueAfter <= 0 {
		t.Errorf("Reconcile() = %+v, want a look again once the removal under way is over", result)
	}
	if len(env.runtimeSandboxes(t, pod.UID)) == 0 {
		t.Fatal("the terminating pod removed its sandbox while another removal was under way")
	}

	r.releaseRemoval(pod.UID)
	env.waitForPodGone(t, key)
	if n := len(env.runtimeSandboxes(t, pod.UID)) + len(env.runtimeContainers(t, pod.UID)); n != 0 {
		t.Errorf("runtime objects left: %d", n)
	}
}

// A runtime pod whose Pod is gone (force-deleted) and whose removal fails
// is tried again on its own, a second later and then less often: nothing
// else looks at it soon (housekeeping does not run here and runs every
// 30 s; the PLEG's resync every minute).
func TestAnOrphanWhoseRemovalFailsIsTriedAgain(t *testing.T) {
	env := startReconciler(t)
	ctx := context.Background()
	pod, key := env.runPod(t, "orphan")

	// The sandbox's removal fails four times: more than the removals the
	// PLEG's events of the stopped pod start.
	env.failCalls("RemovePodSandbox", grpcstatus.Error(codes.Unavailable, "runtime busy"), 4)

	if err := env.client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	env.waitForPodGone(t, key)
	await.Eventually(t, 30*time.Second, "the orphan's runtime objects removed", func(context.Context) error {
		if n := len(env.runtimeSandboxes(t, pod.UID)) + len(env.runtimeContainers(t, pod.UID)); n != 0 {
			return fmt.Errorf("%d runtime objects left", n)
		}
		return nil
	})
	if left := env.clearFailures("RemovePodSandbox"); left != 0 {
		t.Errorf("%d injected failures never met: the test no longer shows a retry", left)
	}
}

func TestOrphanRetryDelayDoublesUpToHousekeepingsPeriod(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := orphanRetryDelay(i + 1); got != w {
			t.Errorf("orphanRetryDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := orphanRetryDelay(1000); got != 30*time.Second {
		t.Errorf("orphanRetryDelay(1000) = %v, want 30s", got)
	}
}
