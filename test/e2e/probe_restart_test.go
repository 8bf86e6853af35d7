package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestRestartKeepsProbedPodsReady kills nodelet, so it must run alone: it
// does not call t.Parallel (see main_test.go). A container that ran before
// nodelet started keeps the started and ready state its status showed
// until its probes say otherwise, as under the kubelet: restarting the
// agent does not flip a Ready pod.
func TestRestartKeepsProbedPodsReady(t *testing.T) {
	ns := f.NewNamespace(t)
	// Every probe leaves a line in /tmp/probed, so the test can tell when
	// the restarted nodelet has probed.
	probe := func() *corev1.Probe {
		p := execProbe("sh", "-c", "echo x >> /tmp/probed; cat /tmp/ready")
		p.PeriodSeconds = 1
		return p
	}
	pod := newPod(ns, "probed").withShell(`touch /tmp/ready; exec sleep 3600`).obj()
	pod.Spec.Containers[0].StartupProbe = probe()
	pod.Spec.Containers[0].ReadinessProbe = probe()
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// Only a container that started well before nodelet (10s) counts as
	// having run before it.
	startedAt := containerStatus(pod, "app").State.Running.StartedAt.Time
	await.Eventually(t, time.Minute, "the container to have run for 12s", await.Condition(func(context.Context) (bool, error) {
		return time.Since(startedAt) > 12*time.Second, nil
	}))

	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	before := probeCount(t, pod)
	from := f.getPod(t, pod)
	f.restartNodelet(t)

	// Every state of the pod, until the restarted nodelet has probed it
	// three times, must still be Ready and started.
	watchCtx, stopWatch := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_, _ = f.watchPod(watchCtx, from, 3*time.Minute, func(p *corev1.Pod) (bool, error) {
			s := containerStatus(p, "app")
			if !podReady(p) || s == nil || !s.Ready || s.Started == nil || !*s.Started {
				t.Errorf("after the restart: %s, want Ready and started throughout", describePod(p))
			}
			return false, nil
		})
	}()
	await.Eventually(t, time.Minute, "the restarted nodelet to probe the container three times", await.Condition(func(context.Context) (bool, error) {
		return probeCount(t, pod) >= before+3, nil
	}))
	stopWatch()
	<-watched
	final := f.getPod(t, pod)
	if !podReady(final) || containerStatus(final, "app").RestartCount != 0 {
		t.Errorf("after the restarted nodelet probed the pod: %s, want Ready and no restart", describePod(final))
	}
}

// probeCount is how many probes have run in the pod's app container.
func probeCount(t *testing.T, pod *corev1.Pod) int {
	t.Helper()
	out := f.execInContainer(t, pod, "app", "sh", "-c", "cat /tmp/probed 2>/dev/null | wc -l")
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("counting probes: %q: %v", out, err)
	}
	return n
}
