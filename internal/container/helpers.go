package container

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/util/expansion"
)

// ShouldRestart is the kubelet's ShouldContainerBeRestarted: whether the
// container, whose newest instance is newest (nil: none), is to be started
// (again). The runtime's plan of what to start and the waiting reason in
// the pod's status both ask here, so they cannot disagree. A pod being
// deleted starts nothing; a container never run, or created and never
// started, or in an unknown state is started; a running one is not; one
// that exited is by its restart rules and policy, else the pod's.
func ShouldRestart(pod *corev1.Pod, container *corev1.Container, newest *ContainerStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if newest == nil {
		return true
	}
	switch newest.State {
	case ContainerRunning:
		return false
	case ContainerUnknown, ContainerCreated:
		return true
	}
	return podutil.ContainerShouldRestart(container, &pod.Spec, newest.ExitCode)
}

// ExpandContainerCommandOnlyStatic expands the $(NAME) references of an
// exec probe's command with the values the container's env gives as plain
// text, as the kubelet does: a probe does not see values from the downward
// API, ConfigMaps or Secrets.
func ExpandContainerCommandOnlyStatic(command []string, env []corev1.EnvVar) []string {
	if len(command) == 0 {
		return nil
	}
	values := make(map[string]string, len(env))
	for _, e := range env {
		values[e.Name] = e.Value
	}
	expanded := make([]string, len(command))
	for i, arg := range command {
		expanded[i] = expansion.Expand(arg, expansion.MappingFuncFor(values))
	}
	return expanded
}
