package e2e

// Liveness, readiness and startup probes on the real stack: exec probes
// through containerd's ExecSync, httpGet against busybox's httpd, tcpSocket
// against a listener the test opens, grpc against grpc-health-server (in
// the stack's busybox image).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const probeTimeout = time.Minute

func TestReadinessProbeMakesThePodReadyOnlyWhileItPasses(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "readiness").obj()
	pod.Spec.Containers[0].ReadinessProbe = execProbe("cat", "/tmp/ready")
	pod = f.createPod(t, pod)

	// Running, and not ready: the probe starts failing.
	running := f.waitForPod(t, pod, podStartTimeout, "to run its container, not ready", containerRunningNotReady("app"))
	if podReady(running) {
		t.Fatalf("the pod is Ready before its readiness probe passed: %s", describePod(running))
	}
	app := containerStatus(running, "app")
	if app.Started == nil || !*app.Started {
		t.Errorf("container app running without a startup probe shows started=%v, want true", app.Started)
	}
	f.waitForEvent(t, pod, "Unhealthy", "Readiness probe failed: cat: can't open '/tmp/ready'", probeTimeout)

	f.execInContainer(t, running, "app", "touch", "/tmp/ready")
	ready := f.waitForPod(t, running, probeTimeout, "to be Ready once the probe passes", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return podReady(p) && s != nil && s.Ready, nil
	})

	f.execInContainer(t, ready, "app", "rm", "/tmp/ready")
	notReady := f.waitForPod(t, ready, probeTimeout, "to turn not ready again", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return !podReady(p) && s != nil && !s.Ready && s.State.Running != nil, nil
	})
	for _, c := range notReady.Status.Conditions {
		if c.Type == corev1.PodReady && c.Reason != "ContainersNotReady" {
			t.Errorf("Ready condition reason = %q, want ContainersNotReady", c.Reason)
		}
	}
	if s := containerStatus(notReady, "app"); s.RestartCount != 0 {
		t.Errorf("a failing readiness probe restarted the container (restartCount %d)", s.RestartCount)
	}
}

// httpdScript serves /www on port 8080 with busybox's httpd in the
// foreground, logging every request, after making /www/healthz.
const httpdScript = `mkdir -p /www && echo ok > /www/healthz && exec httpd -f -vv -p 8080 -h /www`

// serverStartupProbe waits (up to a minute) for the server to answer
// before the liveness probe, which fails at the first miss, takes over:
// on a loaded machine httpd may take a while to listen.
func serverStartupProbe(port intstr.IntOrString) *corev1.Probe {
	p := httpGetProbe(port, "/healthz")
	p.FailureThreshold = 60
	return p
}

func TestLivenessProbeRestartsTheContainerWhenItsServerFails(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The pod's grace period is long; the probe's own one applies to a
	// liveness kill, so the restart is quick all the same.
	pod := newPod(ns, "liveness").withShell(httpdScript).withGracePeriod(60).obj()
	app := &pod.Spec.Containers[0]
	app.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	app.LivenessProbe = httpGetProbe(intstr.FromString("http"), "/healthz")
	app.LivenessProbe.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: "X-Probe", Value: "nodelet"}}
	app.LivenessProbe.TerminationGracePeriodSeconds = ptr.To[int64](1)
	app.StartupProbe = serverStartupProbe(intstr.FromString("http"))
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// The probe reaches the server.
	f.waitForLog(t, pod, "app", 0, "url:/healthz", probeTimeout)

	f.execInContainer(t, pod, "app", "rm", "/www/healthz")
	broke := time.Now()
	restarted := f.waitForPod(t, pod, 2*time.Minute, "to restart its container", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return s != nil && s.RestartCount >= 1 && s.State.Running != nil, nil
	})
	took := time.Since(broke)
	f.waitForEvent(t, pod, "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 404", probeTimeout)
	f.waitForEvent(t, pod, "Killing", "Container app failed liveness probe, will be restarted", probeTimeout)
	// Under the pod's 60s grace period the kill alone would take a minute.
	if limit := 50 * time.Second; took > limit {
		t.Errorf("the restart took %s after the server broke, want within %s: the probe's 1s grace period, not the pod's 60s", took, limit)
	}
	last := containerStatus(restarted, "app").LastTerminationState.Terminated
	if last == nil || last.ContainerID != "containerd://"+containerID(t, pod, "app") {
		t.Errorf("lastState = %+v, want the killed instance terminated", last)
	}
	// The new instance serves again and stays.
	f.waitForLog(t, restarted, "app", 1, "url:/healthz", probeTimeout)
}

func TestLivenessProbeFailureUnderRestartPolicyNeverFailsThePod(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "liveness-never").withShell(httpdScript).withRestartPolicy(corev1.RestartPolicyNever).obj()
	pod.Spec.Containers[0].LivenessProbe = httpGetProbe(intstr.FromInt32(8080), "/healthz")
	pod.Spec.Containers[0].StartupProbe = serverStartupProbe(intstr.FromInt32(8080))
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	f.execInContainer(t, pod, "app", "rm", "/www/healthz")
	failed := f.waitForPod(t, pod, 2*time.Minute, "to fail", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	s := containerStatus(failed, "app")
	if s.RestartCount != 0 || s.State.Terminated == nil || s.State.Terminated.ExitCode == 0 {
		t.Errorf("container app = %s restarts=%d, want terminated with a non-zero exit and no restart", describeState(s.State), s.RestartCount)
	}
	f.waitForEvent(t, pod, "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 404", probeTimeout)
}

func TestStartupProbeHoldsTheLivenessProbeBack(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The liveness probe would fail at once, and kill the container, were
	// it run before the slow start is over.
	pod := newPod(ns, "slow-start").withShell(`sleep 6; touch /tmp/started; exec sleep 3600`).obj()
	app := &pod.Spec.Containers[0]
	app.StartupProbe = execProbe("cat", "/tmp/started")
	app.StartupProbe.FailureThreshold = 60
	app.LivenessProbe = execProbe("cat", "/tmp/started")
	pod = f.createPod(t, pod)

	notStarted := f.waitForPod(t, pod, podStartTimeout, "to run its container, not started yet", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return s != nil && s.State.Running != nil && s.Started != nil && !*s.Started, nil
	})
	if podReady(notStarted) {
		t.Errorf("the pod is Ready before its container started: %s", describePod(notStarted))
	}
	ready := f.waitForPod(t, notStarted, probeTimeout, "to be Running and Ready", runningAndReady)
	s := containerStatus(ready, "app")
	if s.Started == nil || !*s.Started || s.RestartCount != 0 {
		t.Errorf("container app started=%v restarts=%d, want started without a restart", s.Started, s.RestartCount)
	}
	for _, e := range f.podEvents(t, pod) {
		if strings.HasPrefix(e, "Unhealthy: Liveness") || strings.HasPrefix(e, "Killing") {
			t.Errorf("event %q: the liveness probe ran before the startup probe passed", e)
		}
	}
}

func TestGRPCAndTCPProbesAgainstRealServers(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "grpc-tcp").
		withCommand("grpc-health-server", "-port", "5000", "-not-serving-file", "/tmp/unhealthy").
		withContainer("tcp", "exec sleep 3600").
		obj()
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 5000}},
		PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 1, SuccessThreshold: 1,
	}
	pod.Spec.Containers[1].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}},
		PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 1, SuccessThreshold: 1,
	}
	pod = f.createPod(t, pod)

	// The gRPC server serves: its container turns ready. Nothing listens
	// on 9000 yet: the other does not.
	pod = f.waitForPod(t, pod, podStartTimeout, "to have the gRPC container ready and the TCP one not", func(p *corev1.Pod) (bool, error) {
		grpc, tcp := containerStatus(p, "app"), containerStatus(p, "tcp")
		return grpc != nil && grpc.Ready && tcp != nil && tcp.State.Running != nil && !tcp.Ready, nil
	})
	f.waitForEvent(t, pod, "Unhealthy", fmt.Sprintf("Readiness probe failed: dial tcp %s:9000: connect: connection refused", pod.Status.PodIP), probeTimeout)

	// A listener on 9000 makes the TCP probe pass (httpd puts itself in
	// the background).
	f.execInContainer(t, pod, "tcp", "httpd", "-p", "9000", "-h", "/tmp")
	pod = f.waitForPod(t, pod, probeTimeout, "to be Ready with both probes passing", runningAndReady)

	// The gRPC server says NOT_SERVING: that container, and the pod, turn
	// not ready.
	f.execInContainer(t, pod, "app", "touch", "/tmp/unhealthy")
	f.waitForPod(t, pod, probeTimeout, "to turn not ready with the gRPC service not serving", func(p *corev1.Pod) (bool, error) {
		grpc := containerStatus(p, "app")
		return !podReady(p) && grpc != nil && !grpc.Ready, nil
	})
	f.waitForEvent(t, pod, "Unhealthy", `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`, probeTimeout)
}
