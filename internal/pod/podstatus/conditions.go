package podstatus

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// conditions generates the conditions nodelet owns, in the kubelet's
// order. Their lastTransitionTime is now; Merge keeps the old one
// while a status is unchanged.
func (v statusView) conditions(s *corev1.PodStatus) []corev1.PodCondition {
	gen := v.pod.Generation
	now := apiTime(v.in.Now)
	condition := func(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
		status := corev1.ConditionFalse
		if ok {
			status = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, ObservedGeneration: gen, Status: status, Reason: reason, Message: message, LastTransitionTime: now}
	}

	readyToStart := condition(corev1.PodReadyToStartContainers, v.readyToStartContainers(), "", "")
	initialized := v.initializedCondition(s, condition)
	containersReady := containersReadyCondition(v.pod, s, condition)
	ready := containersReady
	ready.Type = corev1.PodReady
	if containersReady.Status == corev1.ConditionTrue {
		ready = readinessGatesCondition(v.pod, condition)
	}
	scheduled := condition(corev1.PodScheduled, true, "", "")
	return []corev1.PodCondition{readyToStart, initialized, ready, containersReady, scheduled}
}

type conditionFunc func(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition

// readyToStartContainers reports whether the pod has a sandbox with its
// network set up that the next containers can be started in.
func (v statusView) readyToStartContainers() bool {
	active := v.activeSandbox()
	if active == nil || active.HostNetwork != v.pod.Spec.HostNetwork {
		return false
	}
	for _, sb := range v.rt.Sandboxes[1:] {
		if sb != nil && sb.State == kubecontainer.SandboxReady {
			return false
		}
	}
	return v.pod.Spec.HostNetwork || len(active.IPs) > 0
}

func (v statusView) initializedCondition(s *corev1.PodStatus, condition conditionFunc) corev1.PodCondition {
	var unknown, incomplete []string
	for i := range v.pod.Spec.InitContainers {
		container := &v.pod.Spec.InitContainers[i]
		status := findContainerStatus(s.InitContainerStatuses, container.Name)
		switch {
		case status == nil:
			unknown = append(unknown, container.Name)
		case podutil.IsSidecar(container) && (status.Started == nil || !*status.Started):
			incomplete = append(incomplete, container.Name)
		case !podutil.IsSidecar(container) && !status.Ready:
			incomplete = append(incomplete, container.Name)
		}
	}
	if s.Phase == corev1.PodSucceeded && len(unknown) == 0 {
		return condition(corev1.PodInitialized, true, reasonPodCompleted, "")
	}
	for _, status := range s.ContainerStatuses {
		if findContainer(v.pod.Spec.Containers, status.Name) != nil && (status.State.Running != nil || status.State.Terminated != nil) {
			return condition(corev1.PodInitialized, true, "", "")
		}
	}
	message := joinMessages(
		listMessage("containers with unknown status: %s", unknown),
		listMessage("containers with incomplete status: %s", incomplete),
	)
	if message == "" {
		return condition(corev1.PodInitialized, true, "", "")
	}
	// Once initialized, a pod stays initialized even while its init
	// containers run again in a new sandbox (the kubelet of 1.36 does so).
	if prev := findCondition(v.pod.Status.Conditions, corev1.PodInitialized); prev != nil && prev.Status == corev1.ConditionTrue {
		return condition(corev1.PodInitialized, true, "", "")
	}
	return condition(corev1.PodInitialized, false, reasonContainersNotInitialized, message)
}

func containersReadyCondition(pod *corev1.Pod, s *corev1.PodStatus, condition conditionFunc) corev1.PodCondition {
	var unknown, unready []string
	check := func(name string, statuses []corev1.ContainerStatus) {
		status := findContainerStatus(statuses, name)
		switch {
		case status == nil:
			unknown = append(unknown, name)
		case !status.Ready:
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name, s.InitContainerStatuses)
		}
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].Name, s.ContainerStatuses)
	}
	switch {
	case s.Phase == corev1.PodSucceeded && len(unknown) == 0:
		return condition(corev1.ContainersReady, false, reasonPodCompleted, "")
	case s.Phase == corev1.PodFailed:
		return condition(corev1.ContainersReady, false, reasonPodFailed, "")
	}
	message := joinMessages(
		listMessage("containers with unknown status: %s", unknown),
		listMessage("containers with unready status: %s", unready),
	)
	if message != "" {
		return condition(corev1.ContainersReady, false, reasonContainersNotReady, message)
	}
	return condition(corev1.ContainersReady, true, "", "")
}

// readinessGatesCondition is the Ready condition of a pod whose containers
// are all ready: it also waits for the conditions of its readiness gates,
// which others set on the pod.
func readinessGatesCondition(pod *corev1.Pod, condition conditionFunc) corev1.PodCondition {
	var messages []string
	for _, gate := range pod.Spec.ReadinessGates {
		c := findCondition(pod.Status.Conditions, gate.ConditionType)
		switch {
		case c == nil:
			messages = append(messages, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(gate.ConditionType)))
		case c.Status != corev1.ConditionTrue:
			messages = append(messages, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(gate.ConditionType), c.Status))
		}
	}
	if len(messages) > 0 {
		return condition(corev1.PodReady, false, reasonReadinessGatesNotReady, strings.Join(messages, ", "))
	}
	return condition(corev1.PodReady, true, "", "")
}

func conditionTrue(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	c := findCondition(conditions, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

func findCondition(conditions []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}
