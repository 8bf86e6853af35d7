package runtime

// In-place resize, the plan's part (pure): which running containers run
// with other resources than the pod's allocation, and whether their
// resizePolicy lets them change in place or has them restarted.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// AnnotationResources is nodelet's own: the resources a container
// instance was created with, so that what it runs with is known after a
// restart without a record per container start (a resize records what it
// applied, see Config.Resized).
const AnnotationResources = "nodelet.dev/resources"

func encodeResizeValues(v kubecontainer.ResizeValues) string {
	data, _ := json.Marshal(v) // four integers always encode
	return string(data)
}

func decodeResizeValues(s string) (kubecontainer.ResizeValues, bool) {
	var v kubecontainer.ResizeValues
	if s == "" || json.Unmarshal([]byte(s), &v) != nil {
		return kubecontainer.ResizeValues{}, false
	}
	return v, true
}

// ContainerToUpdate is a running container whose resources change in
// place through CRI UpdateContainerResources.
type ContainerToUpdate struct {
	Name string
	ID   kubecontainer.ContainerID
	// Init and Index find its spec: pod.Spec.InitContainers (a sidecar)
	// or pod.Spec.Containers.
	Init  bool
	Index int
	// Desired are the pod's allocation; Current what it runs with.
	Desired, Current kubecontainer.ResizeValues
}

// resizeRestartMessage is the kubelet's message for a container killed
// because its resizePolicy asks for a restart.
const resizeRestartMessage = "Container %s resize requires restart"

// planResize compares a running container's resources with the pod's
// allocation (the pod ComputePodActions is given) and adds what a resize
// needs to actions, as the kubelet's computePodResizeAction: nothing when
// they match; a kill (the caller plans the start) when a changed
// resource's resizePolicy is RestartContainer; else an update of each
// changed resource, memory and CPU apart, decreases ordered before
// increases. It reports whether the container is kept running. A
// container whose resources are unknown (made before nodelet recorded
// them) is kept as it is.
func planResize(pod *corev1.Pod, container *corev1.Container, init bool, index int, latest *kubecontainer.ContainerStatus, actions *PodActions) (keep bool) {
	if latest.State != kubecontainer.ContainerRunning || latest.Actuated == nil {
		return true
	}
	desired, current := kubecontainer.ResizeValuesOf(container.Resources), *latest.Actuated
	if desired == current {
		return true
	}
	changed := func(name corev1.ResourceName, d, c int64) (resize, restart bool) {
		if d == c {
			return false, false
		}
		for _, p := range container.ResizePolicy {
			if p.ResourceName == name {
				return true, p.RestartPolicy == corev1.RestartContainer
			}
		}
		return true, false
	}
	memLimit, restartMemLimit := changed(corev1.ResourceMemory, desired.MemoryLimit, current.MemoryLimit)
	memRequest, restartMemRequest := changed(corev1.ResourceMemory, desired.MemoryRequest, current.MemoryRequest)
	cpuLimit, restartCPULimit := changed(corev1.ResourceCPU, desired.CPULimit, current.CPULimit)
	cpuRequest, restartCPURequest := changed(corev1.ResourceCPU, desired.CPURequest, current.CPURequest)
	actions.UpdatePodResources = true
	if restartMemLimit || restartMemRequest || restartCPULimit || restartCPURequest {
		actions.ContainersToKill[latest.ID] = ContainerToKill{Name: container.Name, Message: fmt.Sprintf(resizeRestartMessage, container.Name)}
		return false
	}
	update := ContainerToUpdate{Name: container.Name, ID: latest.ID, Init: init, Index: index, Desired: desired, Current: current}
	add := func(name corev1.ResourceName, d, c int64) {
		if actions.ContainersToUpdate == nil {
			actions.ContainersToUpdate = map[corev1.ResourceName][]ContainerToUpdate{}
		}
		list := actions.ContainersToUpdate[name]
		if d < c {
			list = append([]ContainerToUpdate{update}, list...)
		} else {
			list = append(list, update)
		}
		actions.ContainersToUpdate[name] = list
	}
	switch {
	case memLimit:
		add(corev1.ResourceMemory, desired.MemoryLimit, current.MemoryLimit)
	case memRequest:
		add(corev1.ResourceMemory, desired.MemoryRequest, current.MemoryRequest)
	}
	switch {
	case cpuLimit:
		add(corev1.ResourceCPU, desired.CPULimit, current.CPULimit)
	case cpuRequest:
		add(corev1.ResourceCPU, desired.CPURequest, current.CPURequest)
	}
	return true
}

// ResizeInProgress reports whether a running container of the pod (its
// regular containers and sidecars) runs with other resources than the
// pod's allocation: a resize the node accepted is not applied yet. pod is
// the pod as allocated.
func ResizeInProgress(pod *corev1.Pod, status *kubecontainer.PodStatus) bool {
	differs := func(container *corev1.Container) bool {
		latest := status.LatestContainer(container.Name)
		return latest != nil && latest.State == kubecontainer.ContainerRunning && latest.Actuated != nil &&
			*latest.Actuated != kubecontainer.ResizeValuesOf(container.Resources)
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podutil.IsSidecar(c) && differs(c) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if differs(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}

// ResizeRecord keeps what in-place resizes applied to running container
// instances, by container ID.
type ResizeRecord interface {
	Resized(uid types.UID, containerID string) (corev1.ResourceRequirements, bool)
	// SetResized records one resize's updates at once; the records of
	// instances not running are dropped.
	SetResized(uid types.UID, applied map[string]corev1.ResourceRequirements, running []string) error
}

// actuated are the resources the instance was created with, if recorded.
func (info containerAnnotations) actuated() *kubecontainer.ResizeValues {
	if !info.HasResources {
		return nil
	}
	v := info.Resources
	return &v
}

// withResized has cs's actuated resources be what a resize applied to it
// since it was created, if one did.
func (m *Manager) withResized(uid types.UID, cs *kubecontainer.ContainerStatus) {
	if m.config.Resizes == nil {
		return
	}
	if r, ok := m.config.Resizes.Resized(uid, cs.ID.ID); ok {
		v := kubecontainer.ResizeValuesOf(r)
		cs.Actuated = &v
	}
}
