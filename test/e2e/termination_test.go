package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The two tests of this file time what they check, so they run alone
// (no t.Parallel, see main_test.go): on a node that starts thirty pods at
// once, the runtime alone can take seconds to stop a container.
func TestDeletedPodLeavesTheAPIInGraceAndNothingOnTheNode(t *testing.T) {
	ns := f.NewNamespace(t)
	// The spec's grace is long so that the deletion's 2s is what counts.
	pod := f.createPod(t, newPod(ns, "doomed").withGracePeriod(30).obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// Each kind of leftover must exist before, or its absence after
	// proves nothing.
	before, err := f.podLeftovers(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range leftoverKinds {
		if len(before[kind]) == 0 {
			t.Fatalf("the running pod has no %s, so its removal cannot be checked (found %v)", kind, before)
		}
	}

	const grace = 2 * time.Second
	start := time.Now()
	f.deletePod(t, pod, ptr.To(int64(grace/time.Second)))
	gone := f.waitForPodGone(t, pod, time.Minute)
	took := gone.Sub(start)
	t.Logf("the pod left the API %s after its deletion", took.Round(time.Millisecond))
	if limit := grace + 5*time.Second; took > limit {
		t.Errorf("the pod left the API %s after its deletion with grace %s, want within %s", took, grace, limit)
	}
	// sleep, as PID 1, ignores SIGTERM: the container stops when its
	// grace runs out, not before.
	if took < grace {
		t.Errorf("the pod left the API %s after its deletion with grace %s: its container was not given its grace", took, grace)
	}

	// The Pod goes last, but folders may be removed just after; allow a
	// moment.
	var left map[string][]string
	err = await.Poll(t.Context(), 5*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		left, err = f.podLeftovers(ctx, pod)
		return err == nil && len(left) == 0, err
	}))
	if err != nil {
		t.Errorf("5s after the pod left the API, still on the node: %v (%v)", left, err)
	}
}

// leftoverKinds are the things a pod has on the node.
var leftoverKinds = []string{"sandboxes", "containers", "cgroups", "pod folder", "pod log folder"}

// podLeftovers lists what the node holds for a pod, by kind; kinds with
// nothing are left out.
func (f *Framework) podLeftovers(ctx context.Context, pod *corev1.Pod) (map[string][]string, error) {
	left := map[string][]string{}
	sandboxes, err := f.listSandboxes(ctx, pod.UID)
	if err != nil {
		return nil, err
	}
	for _, s := range sandboxes {
		left["sandboxes"] = append(left["sandboxes"], shortID(s.Id)+" "+s.State.String())
	}
	containers, err := f.listContainers(ctx, pod.UID, "")
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		left["containers"] = append(left["containers"], c.Metadata.GetName()+" "+shortID(c.Id)+" "+c.State.String())
	}
	if cgroups := f.podCgroups(pod); len(cgroups) > 0 {
		left["cgroups"] = cgroups
	}
	for kind, dir := range map[string]string{"pod folder": f.podDir(pod), "pod log folder": f.podLogDir(pod)} {
		if _, err := os.Stat(dir); err == nil {
			left[kind] = []string{dir}
		}
	}
	return left, nil
}

func TestSlowTerminationDoesNotDelayAnotherPodsStart(t *testing.T) {
	ns := f.NewNamespace(t)
	baseline := f.timePodStart(t, newPod(ns, "baseline").obj())

	// The container survives SIGTERM and says so in its log, which tells
	// the test that nodelet is inside the 60s stop.
	slow := newPod(ns, "ignores-sigterm").
		withShell(`trap "echo TERM ignored" TERM; echo trap set; while true; do sleep 1; done`).
		withGracePeriod(60).
		obj()
	slow = f.createPod(t, slow)
	slow = f.waitForPod(t, slow, podStartTimeout, "to be Running and Ready", runningAndReady)
	// A SIGTERM sent before the trap is set would be lost on PID 1.
	f.waitForLog(t, slow, "app", 0, "trap set", 30*time.Second)
	f.deletePod(t, slow, nil)
	logPath := filepath.Join(f.podLogDir(slow), "app", "0.log")
	await.Eventually(t, 30*time.Second, "the slow pod's container to log the SIGTERM it ignores", await.Condition(func(ctx context.Context) (bool, error) {
		data, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(data), "TERM ignored"), nil
	}))

	during := f.timePodStart(t, newPod(ns, "during").obj())
	t.Logf("creation to Ready: %s alone, %s while a pod waits out its 60s grace", baseline.Round(time.Millisecond), during.Round(time.Millisecond))

	current, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), slow.Name, metav1.GetOptions{})
	if err != nil || current.UID != slow.UID {
		t.Fatalf("the slow pod is gone before its grace period ended (%v), so the test did not overlap its termination", err)
	}
	if limit := 2*baseline + 2*time.Second; during >= limit {
		t.Errorf("a pod created during another's slow termination took %s to be Ready, want below %s (twice the %s of one created alone, plus 2s)", during, limit, baseline)
	}
	// The test runs alone: the rest of the suite need not wait out the
	// slow pod's 60s. A shorter grace restarts its termination.
	f.deletePod(t, slow, ptr.To(int64(1)))
}

// timePodStart creates a pod and returns how long it took, on the test's
// clock, from the create request until a watch saw it Running and Ready.
func (f *Framework) timePodStart(t *testing.T, pod *corev1.Pod) time.Duration {
	t.Helper()
	start := time.Now()
	created := f.createPod(t, pod)
	f.waitForPod(t, created, podStartTimeout, "to be Running and Ready", runningAndReady)
	return time.Since(start)
}
