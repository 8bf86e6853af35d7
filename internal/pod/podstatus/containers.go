package podstatus

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// statusView is one generation's read-only view of its inputs.
type statusView struct {
	pod *corev1.Pod
	rt  *kubecontainer.PodStatus
	in  *Input
}

// instances returns the newest and the previous instance of a container.
func (v statusView) instances(name string) (newest, previous *kubecontainer.ContainerStatus) {
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
	defaultReason := kubecontainer.ReasonContainerCreating
	if len(v.pod.Spec.InitContainers) > 0 {
		defaultReason = kubecontainer.ReasonPodInitializing
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
func (v statusView) instanceStatus(container *corev1.Container, c *kubecontainer.ContainerStatus, old *corev1.ContainerStatus) corev1.ContainerStatus {
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
		Resources:          statusResources(container, c),
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
	case c.State == kubecontainer.ContainerRunning:
		status.State.Running = &corev1.ContainerStateRunning{StartedAt: apiTime(c.StartedAt)}
		if old != nil && old.State.Terminated != nil && old.RestartCount >= status.RestartCount {
			status.RestartCount = old.RestartCount + 1
		}
	case c.State == kubecontainer.ContainerCreated:
		status.State.Waiting = &corev1.ContainerStateWaiting{}
	case c.State == kubecontainer.ContainerExited:
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
	case c.State == kubecontainer.ContainerUnknown && old != nil && old.State.Running != nil:
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
		if newest != nil && newest.State == kubecontainer.ContainerExited && newest.ExitCode == 0 {
			return
		}
		// Its record is gone, but regular containers exist: it succeeded.
		if newest == nil && !podutil.IsSidecar(container) && status.State.Waiting != nil && v.anyRegularContainerCreated() {
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
func (v statusView) shouldBeRestarted(container *corev1.Container, newest *kubecontainer.ContainerStatus) bool {
	return kubecontainer.ShouldRestart(v.pod, container, newest)
}

func (v statusView) anyRegularContainerCreated() bool {
	for i := range v.pod.Spec.Containers {
		newest, _ := v.instances(v.pod.Spec.Containers[i].Name)
		if newest != nil && newest.State != kubecontainer.ContainerUnknown {
			return true
		}
	}
	return false
}

// activeSandbox is the newest sandbox if it is ready, else nil.
func (v statusView) activeSandbox() *kubecontainer.SandboxStatus {
	if len(v.rt.Sandboxes) == 0 || v.rt.Sandboxes[0] == nil || v.rt.Sandboxes[0].State != kubecontainer.SandboxReady {
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
		case isInit && !podutil.IsSidecar(container):
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

func anyContainerRunning(rt *kubecontainer.PodStatus) bool {
	for _, c := range rt.Containers {
		if c != nil && c.State == kubecontainer.ContainerRunning {
			return true
		}
	}
	return false
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
