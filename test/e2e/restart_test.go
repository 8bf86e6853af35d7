package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestRestartSafety kills nodelet, so it must run alone: it does not call
// t.Parallel (see main_test.go).
func TestRestartSafety(t *testing.T) {
	ns := f.NewNamespace(t)
	untouched := []string{"untouched-0", "untouched-1", "untouched-2"}
	pods := map[string]*corev1.Pod{}
	for _, name := range append(untouched, "deleted", "recreated") {
		pods[name] = f.createPod(t, newPod(ns, name).obj())
	}
	for name, pod := range pods {
		pods[name] = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	}
	oldRecreated := pods["recreated"]
	oldSandboxes := f.runtimeSandboxes(t, oldRecreated.UID)
	if len(oldSandboxes) == 0 || len(f.runtimeContainers(t, oldRecreated.UID, "")) == 0 {
		t.Fatalf("pod recreated has no sandbox or container in the runtime before the restart")
	}

	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			f.restartNodelet(t)
		}
	})

	// With no agent to act, a graceful deletion leaves the pod Terminating.
	f.deletePod(t, pods["deleted"], nil)
	// A forced deletion removes the Pod at once, whatever runs on the node.
	f.deletePod(t, oldRecreated, ptr.To[int64](0))
	f.waitForPodGone(t, oldRecreated, 30*time.Second)
	newRecreated := f.createPod(t, newPod(ns, "recreated").obj())

	terminating, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), "deleted", metav1.GetOptions{})
	if err != nil || terminating.DeletionTimestamp == nil {
		t.Fatalf("pod deleted is not Terminating while nodelet is down (err %v): %s", err, describePod(terminating))
	}

	restarted = true
	f.restartNodelet(t)

	t.Run("the gracefully deleted pod is cleaned up and leaves the API", func(t *testing.T) {
		f.waitForPodGone(t, pods["deleted"], time.Minute)
	})

	t.Run("the recreated pod runs fresh and the old one's runtime objects are gone", func(t *testing.T) {
		pod := f.waitForPod(t, newRecreated, podStartTimeout, "to be Running and Ready", runningAndReady)
		oldID := containerStatus(oldRecreated, "app").ContainerID
		if newID := containerStatus(pod, "app").ContainerID; newID == "" || newID == oldID {
			t.Errorf("recreated pod's containerID = %q, want a new one (the old pod's was %q)", newID, oldID)
		}
		newSandboxes := f.runtimeSandboxes(t, pod.UID)
		if len(newSandboxes) == 0 {
			t.Errorf("recreated pod has no sandbox in the runtime")
		}
		for _, s := range newSandboxes {
			for _, old := range oldSandboxes {
				if s.Id == old.Id {
					t.Errorf("recreated pod uses the old pod's sandbox %s", shortID(s.Id))
				}
			}
		}
		var left map[string][]string
		err := await.Poll(t.Context(), time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
			left = map[string][]string{}
			sandboxes, err := f.listSandboxes(ctx, oldRecreated.UID)
			if err != nil {
				return false, err
			}
			containers, err := f.listContainers(ctx, oldRecreated.UID, "")
			if err != nil {
				return false, err
			}
			if len(sandboxes) > 0 {
				left["sandboxes"] = []string{describeSandboxes(sandboxes)}
			}
			if len(containers) > 0 {
				left["containers"] = []string{describeContainers(containers)}
			}
			return len(left) == 0, nil
		}))
		if err != nil {
			t.Errorf("a minute after the restart, the force-deleted pod still has in the runtime: %v (%v)", left, err)
		}
	})

	// Checked last, after nodelet has worked through the other pods.
	t.Run("untouched pods keep their containers", func(t *testing.T) {
		for _, name := range untouched {
			before := containerStatus(pods[name], "app")
			pod, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("getting pod %s: %v", name, err)
			}
			after := containerStatus(pod, "app")
			if after == nil || after.State.Running == nil {
				t.Errorf("pod %s: %s, want container app still running", name, describePod(pod))
				continue
			}
			if after.ContainerID != before.ContainerID || !after.State.Running.StartedAt.Equal(&before.State.Running.StartedAt) || after.RestartCount != before.RestartCount {
				t.Errorf("pod %s container app: id %s startedAt %s restartCount %d, was id %s startedAt %s restartCount %d",
					name, after.ContainerID, after.State.Running.StartedAt, after.RestartCount,
					before.ContainerID, before.State.Running.StartedAt, before.RestartCount)
			}
			containers := f.runtimeContainers(t, pod.UID, "")
			if len(containers) != 1 || !strings.HasSuffix(before.ContainerID, "://"+containers[0].Id) {
				t.Errorf("pod %s runtime containers = %s, want only %s", name, describeContainers(containers), before.ContainerID)
			}
		}
	})
}
