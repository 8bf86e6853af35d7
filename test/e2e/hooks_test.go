package e2e

// postStart and preStop hooks on the real stack.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPostStartHookWritesAFileTheContainerReads(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The container waits for the file the hook writes; the hook runs
	// after the container started.
	pod := newPod(ns, "poststart").
		withShell(`until [ -f /tmp/hook ]; do sleep 0.1; done; echo "read: $(cat /tmp/hook)"; exec sleep 3600`).
		obj()
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo written-by-poststart > /tmp/hook"}},
	}}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLog(t, pod, "app", 0, "read: written-by-poststart", 30*time.Second)
}

func TestFailingPostStartHookKillsTheContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "poststart-fails").obj()
	hook := []string{"sh", "-c", "echo hook-broke; exit 3"}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: hook}}}
	pod = f.createPod(t, pod)

	// The container is killed and waits to start again with the kubelet's
	// reason and message.
	failed := f.waitForPod(t, pod, podStartTimeout, "to show PostStartHookError", func(p *corev1.Pod) (bool, error) {
		return waitingReason(p, "app") == "PostStartHookError", nil
	})
	msg := containerStatus(failed, "app").State.Waiting.Message
	want := fmt.Sprintf(`Exec lifecycle hook ([sh -c echo hook-broke; exit 3]) for Container "app" in Pod "poststart-fails_%s(%s)" failed - error: command 'sh -c echo hook-broke; exit 3' exited with 3: , message: "hook-broke\n"`, ns, pod.UID)
	if msg != want {
		t.Errorf("waiting message = %q, want %q", msg, want)
	}
	f.waitForEvent(t, pod, "FailedPostStartHook", "PostStartHook failed", probeTimeout)
	f.waitForEvent(t, pod, "Killing", "FailedPostStartHook", probeTimeout)
}

// targetScript serves on port 8080 and logs every request it gets
// ("url:/path"), so that a test can tell which requests came and in which
// order.
const targetScript = `mkdir -p /www && exec httpd -f -vv -p 8080 -h /www`

func TestPreStopHooksRunBeforeTheStopSignal(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	target := f.createPod(t, newPod(ns, "target").withShell(targetScript).obj())
	target = f.waitForPod(t, target, podStartTimeout, "to be Running and Ready", runningAndReady)
	ip := target.Status.PodIP

	// Each container reports its stop signal to the target; the preStop
	// hooks report themselves there first, one by exec, one by httpGet.
	report := func(path string) string {
		return fmt.Sprintf(`printf "GET %s HTTP/1.0\r\n\r\n" | nc -w 5 %s 8080 >/dev/null`, path, ip)
	}
	// A container's shell is its PID 1, which the kernel sends no
	// SIGTERM it has no handler for: it says when its trap is set.
	script := func(name string) string {
		return fmt.Sprintf(`trap '%s; exit 0' TERM; echo trap set; while true; do sleep 0.2; done`, report("/sigterm-"+name))
	}
	pod := newPod(ns, "stopping").withShell(script("exec")).withContainer("http", script("http")).withGracePeriod(30).obj()
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", report("/prestop-exec")}},
	}}
	pod.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		HTTPGet: &corev1.HTTPGetAction{Host: ip, Port: intstr.FromInt32(8080), Path: "/prestop-http"},
	}}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// Ready as soon as they started, the containers may not have set their
	// traps yet: a stop signal then would be lost.
	for _, name := range []string{"app", "http"} {
		f.waitForLog(t, pod, name, 0, "trap set", 30*time.Second)
	}

	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, time.Minute)

	f.waitForLog(t, target, "app", 0, "url:/sigterm-http", 30*time.Second)
	log := f.waitForLog(t, target, "app", 0, "url:/sigterm-exec", 30*time.Second)
	for _, name := range []string{"exec", "http"} {
		hook := strings.Index(log, "url:/prestop-"+name)
		signal := strings.Index(log, "url:/sigterm-"+name)
		if hook < 0 || hook > signal {
			t.Errorf("the target saw the %s preStop hook at %d and the stop signal at %d, want the hook first; its log:\n%s", name, hook, signal, log)
		}
	}
}
