package e2e

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// busyboxImage is the stack's busybox image, which every pod builder
// starts from; TestMain sets it from the env file.
var busyboxImage string

// podBuilder builds test pods: newPod(ns, name).withCommand(...).obj().
// The default pod is one busybox container "app" sleeping for an hour,
// restartPolicy Always, image pulled only if not present, and a 2s grace
// period so that namespace teardown is quick (sleep as PID 1 ignores
// SIGTERM, so every stop lasts the whole grace period).
type podBuilder struct {
	pod *corev1.Pod
}

func newPod(ns, name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           busyboxImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sleep", "3600"},
			}},
		},
	}}
}

// withCommand sets the app container's command.
func (b *podBuilder) withCommand(command ...string) *podBuilder {
	b.pod.Spec.Containers[0].Command = command
	return b
}

// withShell runs script with sh -c in the app container.
func (b *podBuilder) withShell(script string) *podBuilder {
	return b.withCommand("sh", "-c", script)
}

func (b *podBuilder) withImage(image string) *podBuilder {
	b.pod.Spec.Containers[0].Image = image
	return b
}

func (b *podBuilder) withRestartPolicy(policy corev1.RestartPolicy) *podBuilder {
	b.pod.Spec.RestartPolicy = policy
	return b
}

func (b *podBuilder) withGracePeriod(seconds int64) *podBuilder {
	b.pod.Spec.TerminationGracePeriodSeconds = ptr.To(seconds)
	return b
}

// withInitContainer appends a busybox init container running script with
// sh -c, with the app container's volume mounts.
func (b *podBuilder) withInitContainer(name, script string) *podBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{
		Name:            name,
		Image:           busyboxImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", script},
		VolumeMounts:    b.pod.Spec.Containers[0].VolumeMounts,
	})
	return b
}

// withEmptyDir adds an emptyDir volume mounted at path in every container,
// init containers included.
func (b *podBuilder) withEmptyDir(name, path string) *podBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, corev1.Volume{
		Name:         name,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})
	mount := corev1.VolumeMount{Name: name, MountPath: path}
	for i := range b.pod.Spec.InitContainers {
		b.pod.Spec.InitContainers[i].VolumeMounts = append(b.pod.Spec.InitContainers[i].VolumeMounts, mount)
	}
	for i := range b.pod.Spec.Containers {
		b.pod.Spec.Containers[i].VolumeMounts = append(b.pod.Spec.Containers[i].VolumeMounts, mount)
	}
	return b
}

func (b *podBuilder) obj() *corev1.Pod {
	return b.pod.DeepCopy()
}

// describePod sums up a pod's status in one line for failure messages.
func describePod(pod *corev1.Pod) string {
	if pod == nil {
		return "<no pod seen>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s phase=%s", pod.Namespace, pod.Name, pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		b.WriteString(" terminating")
	}
	for _, c := range pod.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, s := range statuses {
		fmt.Fprintf(&b, " [%s restarts=%d state=%s last=%s]", s.Name, s.RestartCount, describeState(s.State), describeState(s.LastTerminationState))
	}
	if pod.Status.Message != "" {
		fmt.Fprintf(&b, " message=%q", pod.Status.Message)
	}
	return b.String()
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%s: %s)", s.Waiting.Reason, s.Waiting.Message)
	case s.Running != nil:
		return fmt.Sprintf("running(since %s)", s.Running.StartedAt.Format("15:04:05"))
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%s, exit %d: %s)", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	default:
		return "none"
	}
}

// containerStatus finds a container's status, init containers included.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// podReady tells whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitingReason is the container's waiting reason, or "".
func waitingReason(pod *corev1.Pod, container string) string {
	if s := containerStatus(pod, container); s != nil && s.State.Waiting != nil {
		return s.State.Waiting.Reason
	}
	return ""
}
