package e2e

// Helpers of the container lifecycle tests (probes, hooks, sidecars,
// termination): pod builders for probes and hooks, running a command in a
// container through the runtime (the node has no exec API yet), reading a
// container's log file, and finding events.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// execProbe is a probe running command in the container, every second,
// with a timeout generous enough for a loaded machine.
func execProbe(command ...string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: command}},
		PeriodSeconds:    1,
		TimeoutSeconds:   10,
		FailureThreshold: 1,
		SuccessThreshold: 1,
	}
}

// httpGetProbe is a probe getting path on the container's port, every
// second.
func httpGetProbe(port intstr.IntOrString, path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: path}},
		PeriodSeconds:    1,
		TimeoutSeconds:   5,
		FailureThreshold: 1,
		SuccessThreshold: 1,
	}
}

// with lets a test change the pod directly.
func (b *podBuilder) with(mutate func(*corev1.Pod)) *podBuilder {
	mutate(b.pod)
	return b
}

// withContainer appends a busybox container running script with sh -c.
func (b *podBuilder) withContainer(name, script string) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{
		Name:            name,
		Image:           busyboxImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", script},
	})
	return b
}

// withSidecar appends an init container that restarts always (a sidecar)
// running script with sh -c.
func (b *podBuilder) withSidecar(name, script string) *podBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{
		Name:            name,
		Image:           busyboxImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", script},
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
	})
	return b
}

// containerID is the runtime ID (without the runtime's prefix) of the
// container's current instance as the pod's status shows it.
func containerID(t *testing.T, pod *corev1.Pod, name string) string {
	t.Helper()
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.Name == name && s.ContainerID != "" {
				_, id, _ := strings.Cut(s.ContainerID, "://")
				return id
			}
		}
	}
	t.Fatalf("no container ID for %s in %s", name, describePod(pod))
	return ""
}

// execInContainer runs a command in a running container through the
// runtime, as `kubectl exec` would once the node serves it, and fails the
// test if it does not succeed.
func (f *Framework) execInContainer(t *testing.T, pod *corev1.Pod, container string, command ...string) string {
	t.Helper()
	stdout, stderr, err := f.Runtime.ExecSync(t.Context(), containerID(t, pod, container), command, 30*time.Second)
	if err != nil {
		t.Fatalf("running %q in container %s of %s/%s: %v (stdout %q, stderr %q)", command, container, pod.Namespace, pod.Name, err, stdout, stderr)
	}
	return string(stdout)
}

// containerLog reads the log file of one instance of a container, as the
// runtime wrote it.
func (f *Framework) containerLog(pod *corev1.Pod, container string, restartCount int) (string, error) {
	data, err := os.ReadFile(filepath.Join(f.podLogDir(pod), container, fmt.Sprintf("%d.log", restartCount)))
	return string(data), err
}

// waitForLog waits until the log of one instance of a container holds
// want, and returns the log.
func (f *Framework) waitForLog(t *testing.T, pod *corev1.Pod, container string, restartCount int, want string, timeout time.Duration) string {
	t.Helper()
	var log string
	err := await.Poll(t.Context(), timeout, await.Condition(func(context.Context) (bool, error) {
		var err error
		log, err = f.containerLog(pod, container, restartCount)
		return strings.Contains(log, want), err
	}))
	if err != nil {
		t.Fatalf("waiting %s for the log of container %s (instance %d) of %s/%s to hold %q: %v; log:\n%s",
			timeout, container, restartCount, pod.Namespace, pod.Name, want, err, log)
	}
	return log
}

// waitForEvent waits until an event of the pod from nodelet has the given
// reason and a message holding message, and returns it.
func (f *Framework) waitForEvent(t *testing.T, pod *corev1.Pod, reason, message string, timeout time.Duration) corev1.Event {
	t.Helper()
	var found corev1.Event
	var seen []string
	err := await.Poll(t.Context(), timeout, await.Condition(func(ctx context.Context) (bool, error) {
		events, err := f.Client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, e := range events.Items {
			seen = append(seen, fmt.Sprintf("%s %s %s: %s", e.Source.Component, e.Type, e.Reason, e.Message))
			if e.Source.Component == "kubelet" && e.Reason == reason && strings.Contains(e.Message, message) {
				found = e
				return true, nil
			}
		}
		return false, nil
	}))
	if err != nil {
		t.Fatalf("waiting %s for a %s event holding %q for pod %s/%s: %v; events:\n%s",
			timeout, reason, message, pod.Namespace, pod.Name, err, strings.Join(seen, "\n"))
	}
	return found
}

// podEvents lists the reasons and messages of the pod's events from
// nodelet, one "Reason: message" a line.
func (f *Framework) podEvents(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	events, err := f.Client.CoreV1().Events(pod.Namespace).List(t.Context(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
	})
	if err != nil {
		t.Fatalf("listing events of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Source.Component == "kubelet" {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// getPod reads the pod as the API server has it now.
func (f *Framework) getPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	current, err := f.Client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return current
}

// containerRunningNotReady is a waitForPod condition: the container runs
// and is not ready.
func containerRunningNotReady(name string) func(*corev1.Pod) (bool, error) {
	return func(pod *corev1.Pod) (bool, error) {
		s := containerStatus(pod, name)
		return s != nil && s.State.Running != nil && !s.Ready, nil
	}
}
