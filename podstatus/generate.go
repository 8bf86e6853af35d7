package podstatus

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	utilnet "k8s.io/utils/net"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

// Pod status generation: from a Pod and the runtime's record of it, the
// status the kubelet would write, so that kubectl reads the same under
// nodelet. Every function here is pure; the clock is an input.
//
// The rules follow the kubelet of Kubernetes 1.36 with its default feature
// gates (generateAPIPodStatus, getPhase, convertToAPIContainerStatuses, the
// status manager's merge and normalisation, the prober's started/ready).

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
	Runtime *noderuntime.PodStatus
	// Waiting holds why containers that are not running are waiting, by
	// container name: start failures (ErrImagePull, RunContainerError, ...)
	// and CrashLoopBackOff, as the kubelet's reason cache. A reason shows
	// only on a container that is due to be (re)started.
	Waiting map[string]*noderuntime.ContainerError
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
	Now     time.Time
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
		rt = &noderuntime.PodStatus{}
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
	if terminal && !isTerminalPhase(s.Phase) {
		s.Phase = corev1.PodFailed
	}
	if in.Failure != nil && terminal {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, in.Failure.Reason, in.Failure.Message
	}

	s.Conditions = v.conditions(&s)
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

// Phase is the phase the runtime's record implies for a pod that is not
// (yet) terminal: the reconciler asks it whether a pod ran to completion
// under its restart policy. Waiting reasons never change a phase, so none
// are needed.
func Phase(pod *corev1.Pod, runtime *noderuntime.PodStatus) corev1.PodPhase {
	if pod == nil {
		return corev1.PodPending
	}
	if runtime == nil {
		runtime = &noderuntime.PodStatus{}
	}
	v := statusView{pod: pod, rt: runtime, in: &Input{Pod: pod, Runtime: runtime}}
	var s corev1.PodStatus
	s.InitContainerStatuses = v.containerStatuses(pod.Spec.InitContainers, pod.Status.InitContainerStatuses, true)
	s.ContainerStatuses = v.containerStatuses(pod.Spec.Containers, pod.Status.ContainerStatuses, false)
	v.setStartedAndReady(&s)
	return phaseOf(pod, s.InitContainerStatuses, s.ContainerStatuses, false, v.activeRegularContainerExists())
}

// Merge applies the status invariants against what the API server
// has, so that nothing nodelet writes moves backwards:
//   - a terminal phase never changes (with its reason and message);
//   - the phase's reason and message are kept while the phase is unchanged;
//   - a terminated container instance never turns back into a waiting or
//     running one, and restart counts never decrease;
//   - conditions nodelet does not own (readiness gates', DisruptionTarget,
//     ...) are kept as they are, before nodelet's own; a condition keeps its
//     lastTransitionTime while its status is unchanged;
//   - a terminal pod is never Ready;
//   - startTime, qosClass, nominatedNodeName, resize and resource claim
//     statuses are kept.
//
// It is idempotent: merging a merged status again changes nothing.
func Merge(old corev1.PodStatus, generated corev1.PodStatus) corev1.PodStatus {
	s := *generated.DeepCopy()

	if isTerminalPhase(old.Phase) {
		s.Phase = old.Phase
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
	}

	s.InitContainerStatuses = mergeContainerStatuses(old.InitContainerStatuses, s.InitContainerStatuses)
	s.ContainerStatuses = mergeContainerStatuses(old.ContainerStatuses, s.ContainerStatuses)
	s.EphemeralContainerStatuses = mergeContainerStatuses(old.EphemeralContainerStatuses, s.EphemeralContainerStatuses)

	s.Conditions = mergeConditions(old.Conditions, s.Conditions)
	if isTerminalPhase(s.Phase) && (conditionTrue(s.Conditions, corev1.PodReady) || conditionTrue(s.Conditions, corev1.ContainersReady)) {
		reason := reasonPodCompleted
		if s.Phase == corev1.PodFailed {
			reason = reasonPodFailed
		}
		for i := range s.Conditions {
			c := &s.Conditions[i]
			if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.Reason, c.Message = corev1.ConditionFalse, reason, ""
			}
		}
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if prev := findCondition(old.Conditions, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}

	if old.StartTime != nil && !old.StartTime.IsZero() {
		s.StartTime = old.StartTime.DeepCopy()
	}
	if old.ObservedGeneration > s.ObservedGeneration {
		s.ObservedGeneration = old.ObservedGeneration
	}
	if s.HostIP == "" {
		s.HostIP, s.HostIPs = old.HostIP, old.HostIPs
	}
	if old.QOSClass != "" {
		s.QOSClass = old.QOSClass
	}
	s.NominatedNodeName = old.NominatedNodeName
	s.Resize = old.Resize
	s.ResourceClaimStatuses = old.ResourceClaimStatuses
	s.ExtendedResourceClaimStatus = old.ExtendedResourceClaimStatus
	s.NodeAllocatableResourceClaimStatuses = old.NodeAllocatableResourceClaimStatuses
	return *s.DeepCopy()
}

// Equal compares two statuses as the API server stores them: times
// to the second, nil and empty alike, conditions in any order. An unchanged
// status is then not patched again.
func Equal(a, b corev1.PodStatus) bool {
	a, b = normalizedStatus(a), normalizedStatus(b)
	for _, conditions := range [][]corev1.PodCondition{a.Conditions, b.Conditions} {
		sort.SliceStable(conditions, func(i, j int) bool { return conditions[i].Type < conditions[j].Type })
	}
	return equality.Semantic.DeepEqual(a, b)
}

// statusView is one generation's read-only view of its inputs.
type statusView struct {
	pod *corev1.Pod
	rt  *noderuntime.PodStatus
	in  *Input
}

// instances returns the newest and the previous instance of a container.
func (v statusView) instances(name string) (newest, previous *noderuntime.ContainerStatus) {
	for _, c := range v.rt.Containers {
		if c == nil || c.Name != name {
			continue
		}
		if newest == nil {
			newest = c
			continue
		}
		return newest, c
	}
	return newest, nil
}

// containerStatuses converts one list of containers (init, regular or
// ephemeral) in spec order.
func (v statusView) containerStatuses(containers []corev1.Container, oldStatuses []corev1.ContainerStatus, isInit bool) []corev1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	defaultReason := noderuntime.ReasonContainerCreating
	if len(v.pod.Spec.InitContainers) > 0 {
		defaultReason = noderuntime.ReasonPodInitializing
	}
	statuses := make([]corev1.ContainerStatus, 0, len(containers))
	for i := range containers {
		container := &containers[i]
		old := findContainerStatus(oldStatuses, container.Name)
		status := v.containerStatus(container, old, defaultReason)
		v.applyWaitingReason(container, &status, isInit)
		statuses = append(statuses, status)
	}
	return statuses
}

// containerStatus is one container's status from its two newest instances,
// or from what the API server showed when the runtime has none.
func (v statusView) containerStatus(container *corev1.Container, old *corev1.ContainerStatus, defaultReason string) corev1.ContainerStatus {
	newest, previous := v.instances(container.Name)
	if newest == nil {
		return v.containerStatusWithoutInstance(container, old, defaultReason)
	}

	status := v.instanceStatus(container, newest, old)
	if previous != nil {
		status.LastTerminationState = v.instanceStatus(container, previous, nil).State
	}
	return status
}

// containerStatusWithoutInstance shows a container the runtime holds no
// instance of: waiting to be created, or as the API server last showed it
// if it had terminated. One that was running has vanished: its last state
// says so, so that the pod does not look as if it never ran.
func (v statusView) containerStatusWithoutInstance(container *corev1.Container, old *corev1.ContainerStatus, defaultReason string) corev1.ContainerStatus {
	status := corev1.ContainerStatus{
		Name:         container.Name,
		Image:        container.Image,
		State:        corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: defaultReason}},
		VolumeMounts: volumeMountStatuses(container),
	}
	if old == nil {
		return status
	}
	if old.State.Terminated != nil {
		return *old.DeepCopy()
	}
	status.RestartCount = old.RestartCount
	status.LastTerminationState = *old.LastTerminationState.DeepCopy()
	if old.State.Running != nil && status.LastTerminationState.Terminated == nil {
		status.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
			Reason:   reasonContainerStatusUnknown,
			Message:  messageContainerGoneWhileRunning,
			ExitCode: exitCodeContainerGone,
		}
		if v.pod.DeletionTimestamp == nil {
			status.RestartCount++
		}
	}
	return status
}

// instanceStatus converts one runtime instance of a container.
func (v statusView) instanceStatus(container *corev1.Container, c *noderuntime.ContainerStatus, old *corev1.ContainerStatus) corev1.ContainerStatus {
	id := c.ID.String()
	image := c.Image
	if image == "" {
		image = container.Image
	}
	status := corev1.ContainerStatus{
		Name:               container.Name,
		RestartCount:       int32(c.RestartCount),
		Image:              image,
		ImageID:            c.ImageRef,
		ContainerID:        id,
		VolumeMounts:       volumeMountStatuses(container),
		Resources:          container.Resources.DeepCopy(),
		AllocatedResources: container.Resources.Requests.DeepCopy(),
	}
	if old != nil {
		// The instance that ran before may be gone from the runtime already;
		// its end is then remembered from the API.
		if old.ContainerID != id && old.State.Terminated != nil {
			status.LastTerminationState.Terminated = old.State.Terminated.DeepCopy()
		} else if old.LastTerminationState.Terminated != nil {
			status.LastTerminationState.Terminated = old.LastTerminationState.Terminated.DeepCopy()
		}
	}

	switch {
	case c.State == noderuntime.ContainerRunning:
		status.State.Running = &corev1.ContainerStateRunning{StartedAt: apiTime(c.StartedAt)}
		if old != nil && old.State.Terminated != nil && old.RestartCount >= status.RestartCount {
			status.RestartCount = old.RestartCount + 1
		}
	case c.State == noderuntime.ContainerCreated:
		status.State.Waiting = &corev1.ContainerStateWaiting{}
	case c.State == noderuntime.ContainerExited:
		reason := c.Reason
		if reason == "" {
			// containerd's words when the runtime gives none.
			reason = reasonError
			if c.ExitCode == 0 {
				reason = reasonCompleted
			}
		}
		startedAt := apiTime(c.StartedAt)
		if startedAt.IsZero() && !c.FinishedAt.IsZero() {
			// Never started (StartError): the runtime's zero start time,
			// which the kubelet shows as the Unix epoch. A finish without
			// a start would read as a status going backwards.
			startedAt = metav1.NewTime(time.Unix(0, 0).UTC())
		}
		status.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    c.ExitCode,
			Reason:      reason,
			Message:     c.Message,
			StartedAt:   startedAt,
			FinishedAt:  apiTime(c.FinishedAt),
			ContainerID: id,
		}
	case c.State == noderuntime.ContainerUnknown && old != nil && old.State.Running != nil:
		// It ran, and now the runtime cannot tell: it is reported stopped,
		// never as waiting, lest a run-once container look as if it never ran.
		status.State.Terminated = &corev1.ContainerStateTerminated{
			Reason:   reasonContainerStatusUnknown,
			Message:  messageContainerGoneWhenTerminated,
			ExitCode: exitCodeContainerGone,
		}
		status.RestartCount = old.RestartCount + 1
	default:
		status.State.Waiting = &corev1.ContainerStateWaiting{}
	}
	return status
}

// applyWaitingReason shows why a container that is due to be (re)started
// is waiting. Without a reason, a terminated container keeps showing how
// it ended until its restart.
func (v statusView) applyWaitingReason(container *corev1.Container, status *corev1.ContainerStatus, isInit bool) {
	newest, _ := v.instances(container.Name)
	if isInit {
		if newest != nil && newest.State == noderuntime.ContainerExited && newest.ExitCode == 0 {
			return
		}
		// Its record is gone, but regular containers exist: it succeeded.
		if newest == nil && !isSidecar(container) && status.State.Waiting != nil && v.anyRegularContainerCreated() {
			status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason:   reasonCompleted,
				Message:  messageInitContainerGone,
				ExitCode: 0,
			}}
			return
		}
	}
	if !v.shouldBeRestarted(container, newest) {
		return
	}
	reason := v.in.Waiting[container.Name]
	if reason == nil {
		return
	}
	if status.State.Terminated != nil {
		status.LastTerminationState = status.State
	}
	status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason.Reason, Message: reason.Message}}
}

// shouldBeRestarted reports whether a container is due to be started
// again, given its newest instance.
func (v statusView) shouldBeRestarted(container *corev1.Container, newest *noderuntime.ContainerStatus) bool {
	if v.pod.DeletionTimestamp != nil {
		return false
	}
	if newest == nil {
		return true
	}
	switch newest.State {
	case noderuntime.ContainerRunning:
		return false
	case noderuntime.ContainerUnknown, noderuntime.ContainerCreated:
		return true
	}
	return containerShouldRestart(container, &v.pod.Spec, newest.ExitCode)
}

func (v statusView) anyRegularContainerCreated() bool {
	for i := range v.pod.Spec.Containers {
		newest, _ := v.instances(v.pod.Spec.Containers[i].Name)
		if newest != nil && newest.State != noderuntime.ContainerUnknown {
			return true
		}
	}
	return false
}

// activeSandbox is the newest sandbox if it is ready, else nil.
func (v statusView) activeSandbox() *noderuntime.SandboxStatus {
	if len(v.rt.Sandboxes) == 0 || v.rt.Sandboxes[0] == nil || v.rt.Sandboxes[0].State != noderuntime.SandboxReady {
		return nil
	}
	return v.rt.Sandboxes[0]
}

// activeRegularContainerExists reports whether a regular container has an
// instance in the active sandbox: the init containers have then run.
func (v statusView) activeRegularContainerExists() bool {
	active := v.activeSandbox()
	if active == nil {
		return false
	}
	for _, c := range v.rt.Containers {
		if c != nil && c.SandboxID == active.ID && findContainer(v.pod.Spec.Containers, c.Name) != nil {
			return true
		}
	}
	return false
}

// setStartedAndReady fills started and ready as the kubelet's prober does:
// a running container is started once its startup probe passed, and ready
// once started and its readiness probe passed; an init container that is
// not a sidecar is ready once it succeeded.
func (v statusView) setStartedAndReady(s *corev1.PodStatus) {
	probed := func(results map[string]bool, name string) bool {
		ok, found := results[name]
		return !found || ok
	}
	set := func(status *corev1.ContainerStatus, container *corev1.Container, isInit bool) {
		running := status.State.Running != nil
		started := running && probed(v.in.Started, status.Name)
		status.Started = &started
		status.Ready = false
		switch {
		case isInit && !isSidecar(container):
			status.Ready = status.State.Terminated != nil && status.State.Terminated.ExitCode == 0
		case started:
			status.Ready = probed(v.in.Ready, status.Name)
		}
	}
	for i := range s.InitContainerStatuses {
		set(&s.InitContainerStatuses[i], findContainer(v.pod.Spec.InitContainers, s.InitContainerStatuses[i].Name), true)
	}
	for i := range s.ContainerStatuses {
		set(&s.ContainerStatuses[i], findContainer(v.pod.Spec.Containers, s.ContainerStatuses[i].Name), false)
	}
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
	if isSidecar(container) {
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
		if isSidecar(container) {
			continue
		}
		status := findContainerStatus(initStatuses, container.Name)
		switch {
		case status == nil:
			pendingInit++
		case status.State.Running != nil:
			pendingInit++
		case status.State.Terminated != nil:
			if code := status.State.Terminated.ExitCode; code != 0 && !containerShouldRestart(container, spec, code) {
				failedInit++
			}
		case status.State.Waiting != nil:
			if last := status.LastTerminationState.Terminated; last == nil {
				pendingInit++
			} else if last.ExitCode != 0 && !containerShouldRestart(container, spec, last.ExitCode) {
				failedInit++
			}
		default:
			pendingInit++
		}
	}

	unknown, running, waiting, stopped, stoppedForGood, succeeded := 0, 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		container := &spec.InitContainers[i]
		if !isSidecar(container) {
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
			if !containerShouldRestart(container, spec, code) {
				stoppedForGood++
			}
			if code == 0 {
				succeeded++
			}
		case status.State.Waiting != nil:
			if last := status.LastTerminationState.Terminated; last != nil {
				stopped++
				if !containerShouldRestart(container, spec, last.ExitCode) {
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

// containerShouldRestart applies the container's own restart policy, else
// the pod's, to a container that exited with exitCode. (Restart rules are
// not supported.)
func containerShouldRestart(container *corev1.Container, spec *corev1.PodSpec, exitCode int32) bool {
	if container != nil && container.RestartPolicy != nil {
		switch *container.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

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
		if sb != nil && sb.State == noderuntime.SandboxReady {
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
		case isSidecar(container) && (status.Started == nil || !*status.Started):
			incomplete = append(incomplete, container.Name)
		case !isSidecar(container) && !status.Ready:
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
		if isSidecar(&pod.Spec.InitContainers[i]) {
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

// podIPs are the IPs of the newest sandbox while it is ready, at most one
// per family, the node's family first. While no sandbox is ready (the pod
// is between sandboxes, or done) the IPs the pod had are kept. A pod on the
// host network has the node's IPs.
func (v statusView) podIPs(hostIPs []corev1.HostIP) (string, []corev1.PodIP) {
	var ips []corev1.PodIP
	if active := v.activeSandbox(); active != nil {
		primaryIPv6 := len(hostIPs) > 0 && utilnet.IsIPv6String(hostIPs[0].IP)
		for _, ip := range sortIPsByFamily(active.IPs, primaryIPv6) {
			ips = append(ips, corev1.PodIP{IP: ip})
		}
	} else if !v.anySandboxReady() {
		ips = append(ips, v.pod.Status.PodIPs...)
		if len(ips) == 0 && v.pod.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: v.pod.Status.PodIP}}
		}
	}

	if v.pod.Spec.HostNetwork && len(hostIPs) > 0 {
		if len(ips) == 0 {
			ips = []corev1.PodIP{{IP: hostIPs[0].IP}}
		}
		if len(hostIPs) == 2 && len(ips) == 1 && utilnet.IsIPv6String(ips[0].IP) != utilnet.IsIPv6String(hostIPs[1].IP) {
			ips = append(ips, corev1.PodIP{IP: hostIPs[1].IP})
		}
	}
	if len(ips) == 0 {
		return "", nil
	}
	return ips[0].IP, ips
}

func (v statusView) anySandboxReady() bool {
	for _, sb := range v.rt.Sandboxes {
		if sb != nil && sb.State == noderuntime.SandboxReady {
			return true
		}
	}
	return false
}

// sortIPsByFamily picks the first IP of the primary family, then the first
// of the other, in canonical form.
func sortIPsByFamily(ips []string, primaryIPv6 bool) []string {
	var sorted []string
	for _, wantIPv6 := range []bool{primaryIPv6, !primaryIPv6} {
		for _, s := range ips {
			ip := utilnet.ParseIPSloppy(s)
			if ip != nil && utilnet.IsIPv6(ip) == wantIPv6 {
				sorted = append(sorted, ip.String())
				break
			}
		}
	}
	return sorted
}

// podHostIPs are the node's primary IP and, on a dual-stack node, its first
// IP of the other family.
func podHostIPs(nodeIPs []string) (string, []corev1.HostIP) {
	var ips []corev1.HostIP
	for _, s := range nodeIPs {
		ip := utilnet.ParseIPSloppy(s)
		if ip == nil {
			continue
		}
		if len(ips) == 0 || utilnet.IsIPv6String(ips[0].IP) != utilnet.IsIPv6(ip) {
			ips = append(ips, corev1.HostIP{IP: ip.String()})
		}
		if len(ips) == 2 {
			break
		}
	}
	if len(ips) == 0 {
		return "", nil
	}
	return ips[0].IP, ips
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

// volumeMountStatuses reports a container's mounts. Recursive read-only
// mounts are reported disabled: which runtimes support them is not known
// here.
func volumeMountStatuses(container *corev1.Container) []corev1.VolumeMountStatus {
	var mounts []corev1.VolumeMountStatus
	for _, m := range container.VolumeMounts {
		status := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			disabled := corev1.RecursiveReadOnlyDisabled
			status.RecursiveReadOnly = &disabled
		}
		mounts = append(mounts, status)
	}
	return mounts
}

// truncateTerminationMessages shares the pod's termination message budget
// among its containers, as the API server's size limits require.
func truncateTerminationMessages(pod *corev1.Pod, s *corev1.PodStatus) {
	perContainer := maxPodTerminationMessageLength
	if n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers) + len(pod.Spec.EphemeralContainers); n > 0 {
		perContainer /= n
	}
	truncate := func(state *corev1.ContainerState) {
		if t := state.Terminated; t != nil && len(t.Message) > perContainer {
			cut := perContainer
			// Cut on a character boundary, so that the message stays UTF-8.
			for cut > 0 && !utf8.RuneStart(t.Message[cut]) {
				cut--
			}
			t.Message = t.Message[:cut]
		}
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			truncate(&list[i].State)
			truncate(&list[i].LastTerminationState)
		}
	}
}

// mergeContainerStatuses keeps restart counts from decreasing and a
// terminated container instance from being shown as anything else.
func mergeContainerStatuses(old, generated []corev1.ContainerStatus) []corev1.ContainerStatus {
	for i := range generated {
		status := &generated[i]
		prev := findContainerStatus(old, status.Name)
		if prev == nil {
			continue
		}
		if prev.State.Terminated != nil && !showsTerminatedInstance(status, prev) {
			*status = *prev.DeepCopy()
		}
		if prev.RestartCount > status.RestartCount {
			status.RestartCount = prev.RestartCount
		}
	}
	return generated
}

// showsTerminatedInstance reports whether a status still accounts for the
// terminated instance prev showed: as its state, as its last state, or by
// showing a newer instance.
func showsTerminatedInstance(status, prev *corev1.ContainerStatus) bool {
	if status.State.Terminated != nil {
		return true
	}
	id := prev.State.Terminated.ContainerID
	if id == "" {
		id = prev.ContainerID
	}
	if last := status.LastTerminationState.Terminated; last != nil && last.ContainerID == id && id != "" {
		return true
	}
	return status.ContainerID != "" && status.ContainerID != id
}

// ownedConditions are the pod conditions nodelet (like the kubelet) sets;
// all others belong to someone else and are kept as they are.
var ownedConditions = map[corev1.PodConditionType]bool{
	corev1.PodScheduled:              true,
	corev1.PodReady:                  true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReadyToStartContainers: true,
	corev1.PodResizePending:          true,
	corev1.PodResizeInProgress:       true,
	corev1.AllContainersRestarting:   true,
}

// mergeConditions keeps the conditions others own, first and in their
// order, replaced by a generated one of the same type if there is one;
// then the generated ones. One condition of each type is kept, the first.
func mergeConditions(old, generated []corev1.PodCondition) []corev1.PodCondition {
	conditions := make([]corev1.PodCondition, 0, len(old)+len(generated))
	seen := map[corev1.PodConditionType]bool{}
	for _, c := range old {
		if ownedConditions[c.Type] || seen[c.Type] {
			continue
		}
		seen[c.Type] = true
		if g := findCondition(generated, c.Type); g != nil {
			c = *g
		}
		conditions = append(conditions, c)
	}
	for _, c := range generated {
		if !seen[c.Type] {
			seen[c.Type] = true
			conditions = append(conditions, c)
		}
	}
	if len(conditions) == 0 {
		return nil
	}
	return conditions
}

// normalizedStatus is a copy of a status with every time cut to the second,
// as the API server stores it.
func normalizedStatus(s corev1.PodStatus) corev1.PodStatus {
	s = *s.DeepCopy()
	second := func(t *metav1.Time) { *t = apiTime(t.Time) }
	if s.StartTime != nil {
		second(s.StartTime)
	}
	for i := range s.Conditions {
		second(&s.Conditions[i].LastProbeTime)
		second(&s.Conditions[i].LastTransitionTime)
	}
	state := func(st *corev1.ContainerState) {
		if st.Running != nil {
			second(&st.Running.StartedAt)
		}
		if st.Terminated != nil {
			second(&st.Terminated.StartedAt)
			second(&st.Terminated.FinishedAt)
		}
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	return s
}

// apiTime is t as the API server keeps it: to the second, in UTC.
func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second).UTC())
}

func isTerminalPhase(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// isSidecar reports whether an init container is a sidecar: restarted
// whenever it stops, and running alongside the regular containers.
func isSidecar(container *corev1.Container) bool {
	return container != nil && container.RestartPolicy != nil && *container.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

func findContainerStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func conditionTrue(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	c := findCondition(conditions, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

func anyContainerRunning(rt *noderuntime.PodStatus) bool {
	for _, c := range rt.Containers {
		if c != nil && c.State == noderuntime.ContainerRunning {
			return true
		}
	}
	return false
}

func findCondition(conditions []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// sortByName orders regular and ephemeral container statuses by name, as
// the kubelet does (init containers stay in spec order).
func sortByName(statuses []corev1.ContainerStatus) {
	sort.SliceStable(statuses, func(i, j int) bool { return statuses[i].Name < statuses[j].Name })
}

// listMessage formats names the kubelet's way ("[a b]"), or "" for none.
func listMessage(format string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(format, names)
}

func joinMessages(messages ...string) string {
	var parts []string
	for _, m := range messages {
		if m != "" {
			parts = append(parts, m)
		}
	}
	return strings.Join(parts, ", ")
}
