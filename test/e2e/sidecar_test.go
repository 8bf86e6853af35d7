package e2e

// Sidecars (init containers with restartPolicy Always) on the real stack.

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSidecarStartsFirstRunsBesideTheAppAndStopsLast(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The app takes two seconds to stop on SIGTERM; the sidecar stops at
	// once. Had the sidecar been signalled with the app, it would have
	// finished two seconds before it.
	pod := newPod(ns, "with-sidecar").
		withShell(`trap 'sleep 2; exit 0' TERM; while true; do sleep 0.2; done`).
		withGracePeriod(20).
		withSidecar("proxy", `trap 'exit 0' TERM; while true; do sleep 0.2; done`).
		obj()
	pod.Spec.InitContainers[0].ReadinessProbe = execProbe("cat", "/tmp/ready")
	pod = f.createPod(t, pod)

	// Every state the pod goes through is checked: the app container is
	// never created before the sidecar runs.
	checkOrder := func(p *corev1.Pod) {
		app, proxy := containerStatus(p, "app"), containerStatus(p, "proxy")
		if app != nil && app.ContainerID != "" && (proxy == nil || proxy.State.Running == nil || proxy.Started == nil || !*proxy.Started) {
			t.Errorf("the app container exists while the sidecar has not started: %s", describePod(p))
		}
	}
	running := f.waitForPod(t, pod, podStartTimeout, "to run both containers", func(p *corev1.Pod) (bool, error) {
		checkOrder(p)
		app, proxy := containerStatus(p, "app"), containerStatus(p, "proxy")
		return app != nil && app.State.Running != nil && proxy != nil && proxy.State.Running != nil, nil
	})
	if running.Status.Phase != corev1.PodRunning || podReady(running) {
		t.Fatalf("with the sidecar not ready the pod should be Running and not Ready: %s", describePod(running))
	}
	proxy := containerStatus(running, "proxy")
	if proxy.Started == nil || !*proxy.Started || proxy.Ready {
		t.Errorf("sidecar started=%v ready=%v, want started and not ready", proxy.Started, proxy.Ready)
	}
	if app := containerStatus(running, "app"); !app.Ready {
		t.Errorf("the app container is not ready: %s", describePod(running))
	}

	// The sidecar's readiness counts for the pod.
	f.execInContainer(t, running, "proxy", "touch", "/tmp/ready")
	ready := f.waitForPod(t, running, probeTimeout, "to be Ready with its sidecar", runningAndReady)
	if proxy := containerStatus(ready, "proxy"); !proxy.Ready {
		t.Errorf("the pod is Ready but its sidecar is not: %s", describePod(ready))
	}

	// On deletion the app stops first, then the sidecar.
	f.deletePod(t, ready, nil)
	stopped, err := f.watchPod(t.Context(), ready, time.Minute, func(p *corev1.Pod) (bool, error) {
		app, proxy := containerStatus(p, "app"), containerStatus(p, "proxy")
		return app != nil && app.State.Terminated != nil && proxy != nil && proxy.State.Terminated != nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for both containers to be reported stopped: %v", err)
	}
	appEnd := containerStatus(stopped, "app").State.Terminated.FinishedAt
	proxyEnd := containerStatus(stopped, "proxy").State.Terminated.FinishedAt
	if proxyEnd.Before(&appEnd) {
		t.Errorf("the sidecar finished at %s, before the app at %s", proxyEnd.Time, appEnd.Time)
	}
	f.waitForPodGone(t, ready, time.Minute)
}

func TestSidecarWithStartupProbeHoldsTheAppBack(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "sidecar-startup").
		withSidecar("proxy", `exec sleep 3600`).
		obj()
	pod.Spec.InitContainers[0].StartupProbe = execProbe("cat", "/tmp/started")
	pod.Spec.InitContainers[0].StartupProbe.FailureThreshold = 600
	pod = f.createPod(t, pod)

	waiting := f.waitForPod(t, pod, podStartTimeout, "to run the sidecar, not started", func(p *corev1.Pod) (bool, error) {
		proxy := containerStatus(p, "proxy")
		return proxy != nil && proxy.State.Running != nil && proxy.Started != nil && !*proxy.Started, nil
	})
	if app := containerStatus(waiting, "app"); app == nil || app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" {
		t.Errorf("app = %v, want waiting PodInitializing", app)
	}
	for _, c := range waiting.Status.Conditions {
		if c.Type == corev1.PodInitialized && c.Status != corev1.ConditionFalse {
			t.Errorf("Initialized = %s, want False while the sidecar has not started", c.Status)
		}
	}

	f.execInContainer(t, waiting, "proxy", "touch", "/tmp/started")
	f.waitForPod(t, waiting, probeTimeout, "to be Running and Ready", runningAndReady)
}
