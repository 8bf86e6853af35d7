package runtime

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// Crash-loop back-off, as the kubelet's: the first restart is immediate, the
// next waits 10s, doubling up to 5 minutes; a container that ran for longer
// than twice the maximum starts the sequence again.
const (
	InitialRestartBackoff = 10 * time.Second
	MaxRestartBackoff     = 300 * time.Second
)

// PodActions is the plan for one pod that should be running: what to kill,
// what to create and what to start. It is computed by ComputePodActions from
// plain values and carried out by SyncPod in the order of its fields.
type PodActions struct {
	// KillPod stops every container and the sandbox before anything else:
	// the sandbox is gone or broken and will be created again, or (without
	// CreateSandbox) the pod has nothing left to run but its sidecars.
	KillPod bool
	// CreateSandbox runs a new sandbox with the given Attempt number.
	CreateSandbox bool
	Attempt       uint32
	// SandboxID is the ready sandbox that is kept, when CreateSandbox is false.
	SandboxID string

	// ContainersToKill are running containers that must stop, by ID.
	ContainersToKill map[kubecontainer.ContainerID]ContainerToKill
	// EphemeralContainersToStart are started first, even while the pod
	// initializes, and never again once they ran. Indices into
	// pod.Spec.EphemeralContainers.
	EphemeralContainersToStart []ContainerToStart
	// InitContainersToStart are started in order: the next init container
	// the pod needs, and sidecars (init containers that restart always)
	// that must run again. Indices into pod.Spec.InitContainers.
	InitContainersToStart []ContainerToStart
	// ContainersToStart are started once the init containers are done.
	// Indices into pod.Spec.Containers.
	ContainersToStart []ContainerToStart
	// ContainersInBackOff are due to restart but wait for crash-loop back-off.
	ContainersInBackOff []ContainerBackOff

	// UpdatePodResources and ContainersToUpdate resize the pod in place
	// (see resize.go): its cgroup, and running containers by resource
	// (memory, CPU), each list with its decreases first.
	UpdatePodResources bool
	ContainersToUpdate map[corev1.ResourceName][]ContainerToUpdate
}

// ContainerToStart is one container instance to create and start.
type ContainerToStart struct {
	// Index into pod.Spec.InitContainers, pod.Spec.Containers or
	// pod.Spec.EphemeralContainers.
	Index int
	// RestartCount of the new instance: one more than the previous one.
	RestartCount int
	// Backoff is the crash-loop delay this start waited (0 for a first start);
	// it is recorded on the instance so that the next restart doubles it.
	Backoff time.Duration
}

// KillReason says why a running container is stopped, where that changes
// how: a container killed for a failed probe stops within the probe's own
// terminationGracePeriodSeconds when it has one.
type KillReason string

const (
	KillReasonLivenessProbe KillReason = "LivenessProbe"
	KillReasonStartupProbe  KillReason = "StartupProbe"
)

// ContainerToKill says why a running container is stopped.
type ContainerToKill struct {
	Name    string
	Message string
	Reason  KillReason
}

// ContainerBackOff is a restart held back until Until.
type ContainerBackOff struct {
	Name  string
	Delay time.Duration
	Until time.Time
}

// NoChange reports whether the plan does nothing.
func (a PodActions) NoChange() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.ContainersToKill) == 0 &&
		len(a.EphemeralContainersToStart) == 0 && len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 &&
		!a.UpdatePodResources && len(a.ContainersToUpdate) == 0
}

// ComputePodActions decides what to do with a pod that should be running
// (not being deleted, not in a terminal phase), given what the runtime holds
// for it and what its probes last found. It reads nothing else: the clock
// is an argument.
func ComputePodActions(pod *corev1.Pod, status *kubecontainer.PodStatus, probes kubecontainer.ProbeResults, now time.Time) PodActions {
	actions := PodActions{ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{}}

	createSandbox, attempt, sandboxID := sandboxChanged(pod, status)
	if createSandbox {
		return actionsForNewSandbox(pod, status, attempt, now)
	}
	actions.SandboxID = sandboxID

	// Containers in the kept sandbox that nodelet no longer wants: unknown
	// names and stale duplicates of a newer instance.
	wanted := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		wanted[pod.Spec.InitContainers[i].Name] = true
	}
	for i := range pod.Spec.Containers {
		wanted[pod.Spec.Containers[i].Name] = true
	}
	for i := range pod.Spec.EphemeralContainers {
		wanted[pod.Spec.EphemeralContainers[i].Name] = true
	}
	for _, c := range status.Containers {
		if c.SandboxID != sandboxID || c.State != kubecontainer.ContainerRunning {
			continue
		}
		if !wanted[c.Name] {
			actions.ContainersToKill[c.ID] = ContainerToKill{Name: c.Name, Message: "Container is not in the pod's spec"}
		} else if latest := status.LatestContainer(c.Name); latest != c {
			actions.ContainersToKill[c.ID] = ContainerToKill{Name: c.Name, Message: "Container has a newer instance"}
		}
	}

	// Ephemeral containers run once, whatever the state of the others.
	for i := range pod.Spec.EphemeralContainers {
		name := pod.Spec.EphemeralContainers[i].Name
		if status.LatestContainer(name) == nil {
			actions.EphemeralContainersToStart = append(actions.EphemeralContainersToStart, ContainerToStart{Index: i})
		}
	}

	if !computeInitContainerActions(pod, status, sandboxID, probes, now, &actions) {
		return actions
	}

	// kept counts the regular containers left running as they are; waiting
	// those in back-off.
	kept, waiting := 0, 0
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		latest := status.LatestContainer(container.Name)
		switch {
		case latest == nil:
			actions.ContainersToStart = append(actions.ContainersToStart, ContainerToStart{Index: i, RestartCount: nextRestartCount(pod, status, container.Name)})
		case latest.State == kubecontainer.ContainerRunning:
			restart := podutil.RestartsAfterKill(container, &pod.Spec)
			var kill ContainerToKill
			switch {
			case latest.Hash != HashContainer(container):
				// The spec changed (a new image): restart whatever the
				// restart policy, as the kubelet does.
				kill = ContainerToKill{Message: fmt.Sprintf("Container %s definition changed", container.Name)}
				restart = true
			case probes[latest.ID].Liveness == kubecontainer.ProbeFailure:
				kill = ContainerToKill{Message: fmt.Sprintf("Container %s failed liveness probe", container.Name), Reason: KillReasonLivenessProbe}
			case probes[latest.ID].Startup == kubecontainer.ProbeFailure:
				kill = ContainerToKill{Message: fmt.Sprintf("Container %s failed startup probe", container.Name), Reason: KillReasonStartupProbe}
			case !planResize(pod, container, false, i, latest, &actions):
				// Its resizePolicy restarts it for the new resources.
				actions.ContainersToStart = append(actions.ContainersToStart, ContainerToStart{Index: i, RestartCount: latest.RestartCount + 1})
				continue
			default:
				kept++
				continue
			}
			kill.Name = container.Name
			if restart {
				kill.Message += ", will be restarted"
				if kill.Reason == "" {
					actions.ContainersToStart = append(actions.ContainersToStart, ContainerToStart{Index: i, RestartCount: latest.RestartCount + 1})
				} else if restartKilled(&actions.ContainersToStart, &actions.ContainersInBackOff, i, container.Name, latest, now) {
					waiting++
				}
			}
			actions.ContainersToKill[latest.ID] = kill
		case latest.State == kubecontainer.ContainerCreated:
			// Created and never started: the start failed or nodelet died
			// between the two calls. Replace it without back-off.
			actions.ContainersToStart = append(actions.ContainersToStart, ContainerToStart{Index: i, RestartCount: latest.RestartCount + 1})
		default: // Exited or Unknown
			if latest.State == kubecontainer.ContainerUnknown {
				actions.ContainersToKill[latest.ID] = ContainerToKill{Name: container.Name, Message: "Container is in unknown state"}
			}
			if !kubecontainer.ShouldRestart(pod, container, latest) {
				continue
			}
			if addRestart(&actions.ContainersToStart, &actions.ContainersInBackOff, i, container.Name, latest, now) {
				waiting++
			}
		}
	}
	// Nothing left to run but sidecars: they are stopped, so that the pod
	// can complete, as the kubelet does.
	if kept == 0 && len(actions.ContainersToStart) == 0 && waiting == 0 {
		actions.KillPod = true
		actions.InitContainersToStart = nil
	}
	return actions
}

// computeInitContainerActions plans the init containers of a kept sandbox,
// and reports whether the pod is initialized so that regular containers
// may run. It follows the kubelet: the init containers are read from the
// last, because a finished one may be gone from the runtime; the first one
// found to have run tells which comes next, and every sidecar before it
// is kept running. A sidecar counts as done once it runs and, if it has a
// startup probe, has passed it.
func computeInitContainerActions(pod *corev1.Pod, status *kubecontainer.PodStatus, sandboxID string, probes kubecontainer.ProbeResults, now time.Time, actions *PodActions) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	// A regular container made in this sandbox means the init containers
	// have all run here, even if their records are gone.
	initialized := false
	for i := range pod.Spec.Containers {
		if latestInSandbox(status, pod.Spec.Containers[i].Name, sandboxID) != nil {
			initialized = true
			break
		}
	}
	// toStart collects indices from the last to the first.
	var toStart []ContainerToStart
	start := func(i int, latest *kubecontainer.ContainerStatus) {
		restartCount := nextRestartCount(pod, status, pod.Spec.InitContainers[i].Name)
		if latest != nil {
			restartCount = latest.RestartCount + 1
		}
		toStart = append(toStart, ContainerToStart{Index: i, RestartCount: restartCount})
	}
	// reached turns true at the last init container that has run: those
	// before it have run too.
	reached := initialized
	last := len(pod.Spec.InitContainers) - 1
	for i := last; i >= 0; i-- {
		container := &pod.Spec.InitContainers[i]
		sidecar := podutil.IsSidecar(container)
		// Init containers count only in the sandbox they ran in: a new
		// sandbox runs them all again.
		latest := latestInSandbox(status, container.Name, sandboxID)
		if latest == nil {
			// Gone from the runtime after the pod got past it: a sidecar
			// must run again, a finished init container need not.
			if reached && sidecar {
				start(i, nil)
			}
			continue
		}
		if reached && !sidecar {
			continue
		}
		switch latest.State {
		case kubecontainer.ContainerCreated:
			// Created and never started: replace it.
			start(i, latest)
		case kubecontainer.ContainerRunning:
			if !sidecar {
				break
			}
			result := probes[latest.ID]
			if container.StartupProbe != nil && result.Startup != kubecontainer.ProbeSuccess {
				// Until its startup probe passes, nothing after it starts.
				if result.Startup == kubecontainer.ProbeFailure {
					actions.ContainersToKill[latest.ID] = ContainerToKill{Name: container.Name,
						Message: fmt.Sprintf("Init container %s failed startup probe", container.Name), Reason: KillReasonStartupProbe}
					restartKilled(&toStart, &actions.ContainersInBackOff, i, container.Name, latest, now)
				}
				break
			}
			if i == last {
				initialized = true
			} else if !reached {
				start(i+1, nil)
			}
			switch {
			case latest.Hash != HashContainer(container):
				actions.ContainersToKill[latest.ID] = ContainerToKill{Name: container.Name,
					Message: fmt.Sprintf("Init container %s definition changed", container.Name)}
				toStart = append(toStart, ContainerToStart{Index: i, RestartCount: latest.RestartCount + 1})
			case result.Liveness == kubecontainer.ProbeFailure:
				actions.ContainersToKill[latest.ID] = ContainerToKill{Name: container.Name,
					Message: fmt.Sprintf("Init container %s failed liveness probe", container.Name), Reason: KillReasonLivenessProbe}
				restartKilled(&toStart, &actions.ContainersInBackOff, i, container.Name, latest, now)
			case !planResize(pod, container, true, i, latest, actions):
				toStart = append(toStart, ContainerToStart{Index: i, RestartCount: latest.RestartCount + 1})
			}
		case kubecontainer.ContainerExited:
			switch {
			case sidecar:
				addRestart(&toStart, &actions.ContainersInBackOff, i, container.Name, latest, now)
			case latest.ExitCode != 0:
				// A failed init container that is not to restart (its
				// policy or the pod's, its rules) has failed the pod: its
				// phase says so and the reconciler stops it.
				if !kubecontainer.ShouldRestart(pod, container, latest) {
					return false
				}
				addRestart(&toStart, &actions.ContainersInBackOff, i, container.Name, latest, now)
			case i == last:
				initialized = true
			default:
				start(i+1, nil)
			}
		default: // Unknown
			// No exit code to match rules against: the restart policy
			// alone decides, the container's or else the pod's.
			if !sidecar && !podutil.RestartsAfterKill(container, &pod.Spec) {
				return false
			}
			actions.ContainersToKill[latest.ID] = ContainerToKill{Name: container.Name, Message: "Init container is in unknown state"}
			addRestart(&toStart, &actions.ContainersInBackOff, i, container.Name, latest, now)
		}
		reached = true
	}
	if !reached {
		// No init container has run in this sandbox yet.
		start(0, nil)
	}
	for i := len(toStart) - 1; i >= 0; i-- {
		actions.InitContainersToStart = append(actions.InitContainersToStart, toStart[i])
	}
	return initialized
}

// actionsForNewSandbox plans a pod whose sandbox must be (re)created: all
// that ran is killed, and the pod starts over from its first init container,
// unless it already ran to completion under its restart policy.
func actionsForNewSandbox(pod *corev1.Pod, status *kubecontainer.PodStatus, attempt uint32, now time.Time) PodActions {
	actions := PodActions{
		KillPod:          len(status.Sandboxes) > 0,
		CreateSandbox:    true,
		Attempt:          attempt,
		ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{},
	}
	// A pod that has run containers none of which may run again is done
	// once its sandbox is gone; if no container ever ran, the sandbox may
	// simply have failed to come up, so it is created again.
	if !anyRestartable(pod) && attempt > 0 && len(status.Containers) > 0 {
		actions.CreateSandbox = false
		return actions
	}
	if len(pod.Spec.InitContainers) > 0 {
		actions.InitContainersToStart = []ContainerToStart{{Index: 0, RestartCount: nextRestartCount(pod, status, pod.Spec.InitContainers[0].Name)}}
		return actions
	}
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		latest := status.LatestContainer(container.Name)
		if latest != nil && latest.State == kubecontainer.ContainerExited && !kubecontainer.ShouldRestart(pod, container, latest) {
			continue
		}
		if latest == nil || latest.State != kubecontainer.ContainerExited {
			actions.ContainersToStart = append(actions.ContainersToStart, ContainerToStart{Index: i, RestartCount: nextRestartCount(pod, status, container.Name)})
			continue
		}
		addRestart(&actions.ContainersToStart, &actions.ContainersInBackOff, i, container.Name, latest, now)
	}
	if len(actions.ContainersToStart) == 0 && len(actions.ContainersInBackOff) == 0 {
		actions.CreateSandbox = false
	}
	return actions
}

// sandboxChanged reports whether the pod needs a new sandbox, with the attempt
// number to give it, or else the ID of the sandbox to keep.
func sandboxChanged(pod *corev1.Pod, status *kubecontainer.PodStatus) (create bool, attempt uint32, sandboxID string) {
	if len(status.Sandboxes) == 0 {
		return true, 0, ""
	}
	newest := status.Sandboxes[0]
	readyCount := 0
	for _, sb := range status.Sandboxes {
		if sb.State == kubecontainer.SandboxReady {
			readyCount++
		}
	}
	switch {
	case newest.State != kubecontainer.SandboxReady:
		return true, newest.Attempt + 1, ""
	case readyCount > 1:
		// Two ready sandboxes of one pod: start over with one.
		return true, newest.Attempt + 1, ""
	case newest.HostNetwork != pod.Spec.HostNetwork:
		return true, newest.Attempt + 1, ""
	case !pod.Spec.HostNetwork && len(newest.IPs) == 0:
		// A pod network without an address is broken.
		return true, newest.Attempt + 1, ""
	}
	return false, newest.Attempt, newest.ID
}

// anyRestartable reports whether any regular container of the pod may run
// again after it exits.
func anyRestartable(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if podutil.IsContainerRestartable(&pod.Spec.Containers[i], &pod.Spec) {
			return true
		}
	}
	return false
}

// addRestart plans the restart of a stopped container, now or after its
// crash-loop back-off; it reports whether the restart waits.
func addRestart(start *[]ContainerToStart, backoff *[]ContainerBackOff, index int, name string, latest *kubecontainer.ContainerStatus, now time.Time) bool {
	delay, until, wait := RestartBackoff(latest, now)
	if wait {
		*backoff = append(*backoff, ContainerBackOff{Name: name, Delay: latest.RestartBackoff, Until: until})
		return true
	}
	*start = append(*start, ContainerToStart{Index: index, RestartCount: latest.RestartCount + 1, Backoff: delay})
	return false
}

// restartKilled plans the restart of a running container that is killed
// because a probe failed. It is taken to have exited now, so that a
// container failing its probes again and again backs off as one that
// crashes does.
func restartKilled(start *[]ContainerToStart, backoff *[]ContainerBackOff, index int, name string, latest *kubecontainer.ContainerStatus, now time.Time) bool {
	dead := *latest
	dead.State, dead.FinishedAt = kubecontainer.ContainerExited, now
	return addRestart(start, backoff, index, name, &dead, now)
}

func latestInSandbox(status *kubecontainer.PodStatus, name, sandboxID string) *kubecontainer.ContainerStatus {
	for _, c := range status.Containers {
		if c.Name == name && c.SandboxID == sandboxID {
			return c
		}
	}
	return nil
}

// nextRestartCount continues the count of a container that ran before,
// whatever sandbox it ran in. When the runtime has lost every instance (a
// wiped runtime, a rebooted node), the count the API server shows goes on.
func nextRestartCount(pod *corev1.Pod, status *kubecontainer.PodStatus, name string) int {
	if latest := status.LatestContainer(name); latest != nil {
		return latest.RestartCount + 1
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if cs.Name == name && cs.ContainerID != "" {
				return int(cs.RestartCount) + 1
			}
		}
	}
	return 0
}
