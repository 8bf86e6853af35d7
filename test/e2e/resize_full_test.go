//go:build full

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/resources"
)

// A pending resize outlives nodelet: the allocation it keeps on disk says
// what the pod runs with, so a restarted nodelet neither applies the
// resize nor forgets it, and applies it once the room is there.
// It restarts nodelet, so it runs alone: it does not call t.Parallel.
func TestPendingResizeSurvivesANodeletRestart(t *testing.T) {
	ns := f.NewNamespace(t)
	neighbour := newPod(ns, "neighbour").obj()
	neighbour.Spec.Containers[0].Resources = resources.Requirements("cpu=100m", "")
	neighbour = f.createPod(t, neighbour)
	pod := newPod(ns, "waits").obj()
	pod.Spec.Containers[0].Resources = resources.Requirements("cpu=100m", "cpu=200m")
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForPod(t, neighbour, podStartTimeout, "to be Running and Ready", runningAndReady)
	appID := containerID(t, pod, "app")
	quota := func() string {
		return f.cgroupFile(t, filepath.Join("kubepods/burstable", "pod"+string(pod.UID), appID), "cpu", "cpu.cfs_quota_us", "cpu.max")
	}

	node, err := f.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocatable := node.Status.Allocatable.Cpu().MilliValue()
	whole := fmt.Sprintf("cpu=%dm", allocatable)
	if err := f.resizeTo(t, pod, func(p *corev1.Pod) { p.Spec.Containers[0].Resources = resources.Requirements(whole, whole) }); err != nil {
		t.Fatalf("resizing: %v", err)
	}
	deferred := func(p *corev1.Pod) (bool, error) {
		c := podCondition(p, corev1.PodResizePending)
		return c != nil && c.Reason == corev1.PodReasonDeferred, nil
	}
	f.waitForPod(t, pod, podStartTimeout, "to report the resize deferred", deferred)

	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	f.restartNodelet(t)
	// A pod started after the restart shows the restarted nodelet has
	// had every chance to act on the others.
	f.waitForPod(t, f.createPod(t, newPod(ns, "after").obj()), podStartTimeout, "to be Running and Ready", runningAndReady)
	pod = f.waitForPod(t, pod, podStartTimeout, "to report the resize still deferred", deferred)
	if got := containerStatus(pod, "app").AllocatedResources.Cpu().String(); got != "100m" {
		t.Errorf("allocatedResources cpu after the restart = %s, want 100m", got)
	}
	wantBefore := "20000"
	if cgroupV2() {
		wantBefore = "20000 100000"
	}
	if got := quota(); got != wantBefore {
		t.Errorf("container app's CPU quota after the restart = %q, want 200m still", got)
	}

	// With the neighbour gone the node has room, and the resize is
	// judged again (every 30s) and applied.
	f.deletePod(t, neighbour, nil)
	f.waitForPodGone(t, neighbour, podStartTimeout)
	f.waitForPod(t, pod, 2*time.Minute, "to run with the whole node's CPU", func(p *corev1.Pod) (bool, error) {
		app := containerStatus(p, "app")
		return podCondition(p, corev1.PodResizePending) == nil && podCondition(p, corev1.PodResizeInProgress) == nil &&
			app != nil && app.RestartCount == 0 && app.AllocatedResources.Cpu().MilliValue() == allocatable, nil
	})
	want := strconv.FormatInt(allocatable*100, 10)
	if cgroupV2() {
		want += " 100000"
	}
	if got := quota(); got != want {
		t.Errorf("container app's CPU quota = %q, want %q", got, want)
	}
}
