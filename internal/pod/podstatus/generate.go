// Package podstatus generates a pod's status: from a Pod and the runtime's
// record of it, the status the kubelet would write, so that kubectl reads
// the same under nodelet. Every function here is pure; the clock is an
// input. One file per concern: generate (the entry point), phase,
// conditions, containers, ips, merge (with the API server's status) and
// deadline (activeDeadlineSeconds).
//
// The rules follow the kubelet of Kubernetes 1.36 with its default feature
// gates (generateAPIPodStatus, getPhase, convertToAPIContainerStatuses, the
// status manager's merge and normalisation, the prober's started/ready).
package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// Reasons and messages of the pod's conditions and container states, the
// kubelet's own words.
const (
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	reasonPodCompleted             = "PodCompleted"
	reasonPodFailed                = "PodFailed"

	reasonContainerStatusUnknown = "ContainerStatusUnknown"
	reasonCompleted              = "Completed"
	reasonError                  = "Error"

	messageContainerGoneWhenTerminated = "The container could not be located when the pod was terminated"
	messageContainerGoneWhileRunning   = "The container could not be located when the pod was deleted.  The container used to be Running"
	messageInitContainerGone           = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"

	// exitCodeContainerGone is what a container that vanished is reported
	// to have exited with: killed.
	exitCodeContainerGone = 137

	// maxPodTerminationMessageLength is shared by all containers of a pod.
	maxPodTerminationMessageLength = 12 * 1024
)

// Input is everything Generate reads.
type Input struct {
	// Pod is the Pod as the API server has it: spec, metadata and the
	// status last written (the "old" status).
	Pod *corev1.Pod
	// Runtime is the runtime's record of the pod; nil reads as empty.
	Runtime *kubecontainer.PodStatus
	// Waiting holds why containers that are not running are waiting, by
	// container name: start failures (ErrImagePull, RunContainerError, ...)
	// and CrashLoopBackOff, as the kubelet's reason cache. A reason shows
	// only on a container that is due to be (re)started.
	Waiting map[string]*kubecontainer.ContainerError
	// Started and Ready are the startup and readiness probe results by
	// container name. A running container without an entry is started and
	// ready, as one without probes is.
	Started map[string]bool
	Ready   map[string]bool
	// HostIPs are the node's IPs, primary first.
	HostIPs []string
	// Terminal is true when nodelet has stopped the pod for good (deleted,
	// or ran to completion): once no container runs, the phase is then
	// Succeeded or Failed and no container is left without a final state.
	Terminal bool
	// Failure, when set, is why nodelet fails the pod whatever its
	// containers did (it ran past its activeDeadlineSeconds): once no
	// container runs, the phase is Failed with its reason and message.
	Failure *Failure
	// ResizeConditions are the pod's PodResizePending and
	// PodResizeInProgress conditions, as nodelet keeps them.
	ResizeConditions []corev1.PodCondition
	Now              time.Time
}

// Generate returns the pod's status: generated from the runtime's
// record, then merged with the status the API server has (Merge).
func Generate(in Input) corev1.PodStatus {
	if in.Pod == nil {
		return corev1.PodStatus{}
	}
	pod := in.Pod
	old := &pod.Status
	rt := in.Runtime
	if rt == nil {
		rt = &kubecontainer.PodStatus{}
	}
	v := statusView{pod: pod, rt: rt, in: &in}

	var s corev1.PodStatus
	s.InitContainerStatuses = v.containerStatuses(pod.Spec.InitContainers, old.InitContainerStatuses, true)
	s.ContainerStatuses = v.containerStatuses(pod.Spec.Containers, old.ContainerStatuses, false)
	sortByName(s.ContainerStatuses)
	if len(pod.Spec.EphemeralContainers) > 0 {
		ephemeral := make([]corev1.Container, len(pod.Spec.EphemeralContainers))
		for i := range pod.Spec.EphemeralContainers {
			ephemeral[i] = corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
		s.EphemeralContainerStatuses = v.containerStatuses(ephemeral, old.EphemeralContainerStatuses, false)
		sortByName(s.EphemeralContainerStatuses)
	}

	// A pod whose containers still run is still terminating, whatever the
	// caller decided: it is not reported terminal before they stop.
	terminal := in.Terminal && !anyContainerRunning(rt)
	if terminal {
		markUnfinishedContainers(pod, &s)
	}
	v.setStartedAndReady(&s)

	s.Phase = phaseOf(pod, s.InitContainerStatuses, s.ContainerStatuses, terminal, v.activeRegularContainerExists())
	if terminal && !IsTerminalPhase(s.Phase) {
		s.Phase = corev1.PodFailed
	}
	if in.Failure != nil && terminal {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, in.Failure.Reason, in.Failure.Message
	}

	s.Conditions = append(v.conditions(&s), in.ResizeConditions...)
	s.ObservedGeneration = pod.Generation

	s.HostIP, s.HostIPs = podHostIPs(in.HostIPs)
	s.PodIP, s.PodIPs = v.podIPs(s.HostIPs)

	now := apiTime(in.Now)
	s.StartTime = &now
	if old.StartTime != nil && !old.StartTime.IsZero() {
		s.StartTime = old.StartTime.DeepCopy()
	}

	s.Resources, s.AllocatedResources = podResources(pod)
	truncateTerminationMessages(pod, &s)
	return Merge(*old, s)
}

// podResources are the pod's effective requests and limits, what the
// kubelet reports as allocated to it.
func podResources(pod *corev1.Pod) (*corev1.ResourceRequirements, corev1.ResourceList) {
	resources := pod.Spec.Resources.DeepCopy()
	if resources == nil {
		resources = &corev1.ResourceRequirements{}
	}
	requests := nonEmpty(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	resources.Requests = requests.DeepCopy()
	resources.Limits = nonEmpty(resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{}))
	return resources, requests
}

// nonEmpty is list, or nil when it is empty: the API does not tell them
// apart.
func nonEmpty(list corev1.ResourceList) corev1.ResourceList {
	if len(list) == 0 {
		return nil
	}
	return list
}

// apiTime is t as the API server keeps it: to the second, in UTC.
func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second).UTC())
}
