package podstatus

import (
	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// Phase is the phase the runtime's record implies for a pod that is not
// (yet) terminal: the reconciler asks it whether a pod ran to completion
// under its restart policy. Waiting reasons never change a phase, so none
// are needed.
func Phase(pod *corev1.Pod, runtime *kubecontainer.PodStatus) corev1.PodPhase {
	if pod == nil {
		return corev1.PodPending
	}
	if runtime == nil {
		runtime = &kubecontainer.PodStatus{}
	}
	v := statusView{pod: pod, rt: runtime, in: &Input{Pod: pod, Runtime: runtime}}
	var s corev1.PodStatus
	s.InitContainerStatuses = v.containerStatuses(pod.Spec.InitContainers, pod.Status.InitContainerStatuses, true)
	s.ContainerStatuses = v.containerStatuses(pod.Spec.Containers, pod.Status.ContainerStatuses, false)
	v.setStartedAndReady(&s)
	return phaseOf(pod, s.InitContainerStatuses, s.ContainerStatuses, false, v.activeRegularContainerExists())
}

// markUnfinishedContainers gives every container of a terminal pod a final
// state, as the kubelet does once a pod is done: a container that never
// reached one is reported killed. Regular containers count only once the
// pod has initialized; init containers up to the last one that was tried.
func markUnfinishedContainers(pod *corev1.Pod, s *corev1.PodStatus) {
	gone := func() corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason:   reasonContainerStatusUnknown,
			Message:  messageContainerGoneWhenTerminated,
			ExitCode: exitCodeContainerGone,
		}}
	}
	if podInitialized(pod, s) {
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].State.Terminated == nil {
				s.ContainerStatuses[i].State = gone()
			}
		}
	}
	tried := triedInitContainers(s.InitContainerStatuses)
	for i := 0; i < tried; i++ {
		if s.InitContainerStatuses[i].State.Terminated == nil {
			s.InitContainerStatuses[i].State = gone()
		}
	}
}

// podInitialized reports whether a status shows any sign of the pod's init
// containers having completed.
func podInitialized(pod *corev1.Pod, s *corev1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, c := range s.ContainerStatuses {
		if c.LastTerminationState.Terminated != nil || c.State.Waiting == nil {
			return true
		}
	}
	if len(s.InitContainerStatuses) == 0 {
		return false
	}
	last := s.InitContainerStatuses[len(s.InitContainerStatuses)-1]
	container := findContainer(pod.Spec.InitContainers, last.Name)
	if container == nil {
		return false
	}
	if podutil.IsSidecar(container) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	succeeded := func(t *corev1.ContainerStateTerminated) bool { return t != nil && t.ExitCode == 0 }
	return succeeded(last.LastTerminationState.Terminated) || succeeded(last.State.Terminated)
}

// triedInitContainers is how many init containers, from the first, were
// tried at least once (always at least one).
func triedInitContainers(statuses []corev1.ContainerStatus) int {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].State.Waiting == nil || statuses[i].LastTerminationState.Terminated != nil {
			return i + 1
		}
	}
	if len(statuses) > 0 {
		return 1
	}
	return 0
}

// phaseOf is the kubelet's getPhase: the phase the containers' statuses
// imply under the pod's restart policy. terminal says the pod will run no
// container again; initialized that the init containers have run in the
// current sandbox.
func phaseOf(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, terminal, initialized bool) corev1.PodPhase {
	spec := &pod.Spec
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
	for i := range spec.InitContainers {
		container := &spec.InitContainers[i]
		if podutil.IsSidecar(container) {
			continue
		}
		status := findContainerStatus(initStatuses, container.Name)
		switch {
		case status == nil:
			pendingInit++
		case status.State.Running != nil:
			pendingInit++
		case status.State.Terminated != nil:
			if code := status.State.Terminated.ExitCode; code != 0 && !podutil.ContainerShouldRestart(container, spec, code) {
				failedInit++
			}
		case status.State.Waiting != nil:
			if last := status.LastTerminationState.Terminated; last == nil {
				pendingInit++
			} else if last.ExitCode != 0 && !podutil.ContainerShouldRestart(container, spec, last.ExitCode) {
				failedInit++
			}
		default:
			pendingInit++
		}
	}

	unknown, running, waiting, stopped, stoppedForGood, succeeded := 0, 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		container := &spec.InitContainers[i]
		if !podutil.IsSidecar(container) {
			continue
		}
		status := findContainerStatus(initStatuses, container.Name)
		switch {
		case status == nil:
			unknown++
		case status.State.Running != nil:
			if status.Started == nil || !*status.Started {
				pendingSidecars++
			}
			running++
		case status.State.Terminated != nil:
			// A stopped sidecar does not count towards the phase.
		case status.State.Waiting != nil:
			if status.LastTerminationState.Terminated == nil {
				pendingSidecars++
				waiting++
			}
		default:
			pendingSidecars++
			unknown++
		}
	}
	for i := range spec.Containers {
		container := &spec.Containers[i]
		status := findContainerStatus(statuses, container.Name)
		switch {
		case status == nil:
			unknown++
		case status.State.Running != nil:
			running++
		case status.State.Terminated != nil:
			stopped++
			code := status.State.Terminated.ExitCode
			if !podutil.ContainerShouldRestart(container, spec, code) {
				stoppedForGood++
			}
			if code == 0 {
				succeeded++
			}
		case status.State.Waiting != nil:
			if last := status.LastTerminationState.Terminated; last != nil {
				stopped++
				if !podutil.ContainerShouldRestart(container, spec, last.ExitCode) {
					stoppedForGood++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	switch {
	case failedInit > 0:
		return corev1.PodFailed
	case pendingInit > 0 || (pendingSidecars > 0 && !initialized):
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if stopped != stoppedForGood {
			// Some are on their way to a restart.
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	default:
		return corev1.PodPending
	}
}

// IsTerminalPhase reports whether a pod in phase has ended for good.
func IsTerminalPhase(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}
