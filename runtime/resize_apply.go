package runtime

// In-place resize, the acting part: the pod's cgroup and its containers
// through CRI UpdateContainerResources, in the kubelet's order.

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// PodCgroups reads and writes the CPU and memory limits of a pod's cgroup.
type PodCgroups interface {
	// PodConfig is what the pod's cgroup is limited to now: CPU shares,
	// CFS quota (-1 unlimited) and memory limit (math.MaxInt64
	// unlimited), all set.
	PodConfig(pod *corev1.Pod) (*cgroups.ResourceConfig, error)
	// SetPodConfig writes config's set fields to the pod's cgroup.
	SetPodConfig(pod *corev1.Pod, config *cgroups.ResourceConfig) error
}

// ReasonResizeError is the kubelet's PodResizeInProgress reason when a
// resize could not be applied.
const ReasonResizeError = corev1.PodReasonError

// syncResize is SyncPod's resize step: it applies the resize the plan
// holds, if any, and adds its failure to the result and to errs.
func (m *Manager) syncResize(ctx context.Context, pod *corev1.Pod, podStatus *kubecontainer.PodStatus, actions PodActions, env *PodEnv, result *SyncResult, errs []error) []error {
	if !actions.UpdatePodResources && len(actions.ContainersToUpdate) == 0 {
		return errs
	}
	var podCgroups PodCgroups
	if env != nil {
		podCgroups = env.PodCgroups
	}
	if err := m.resizePod(ctx, pod, podStatus, actions, podCgroups); err != nil {
		result.ResizeErr = err
		errs = append(errs, err)
	}
	return errs
}

// resizePod applies a resize the plan holds, as the kubelet's
// doPodResizeAction: memory first, then CPU; for each, the pod cgroup's
// limit and then its request are raised before the containers change and
// lowered after them, so that a container never asks for more than its
// pod has. The first failure stops it; the next sync tries again from
// what is then applied. What the containers' updates applied is recorded
// once, at the end, whatever happened.
func (m *Manager) resizePod(ctx context.Context, pod *corev1.Pod, podStatus *kubecontainer.PodStatus, actions PodActions, podCgroups PodCgroups) error {
	applied := map[string]corev1.ResourceRequirements{}
	defer func() {
		if m.config.Resizes == nil || len(applied) == 0 {
			return
		}
		var running []string
		for _, c := range podStatus.RunningContainers() {
			running = append(running, c.ID.ID)
		}
		if err := m.config.Resizes.SetResized(pod.UID, applied, running); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to record the resources a resize applied", "pod", klog.KObj(pod))
		}
	}()
	desired := cgroups.ResourceConfigForPod(pod, 0)
	current := &cgroups.ResourceConfig{}
	if podCgroups != nil {
		var err error
		if current, err = podCgroups.PodConfig(pod); err != nil {
			return fmt.Errorf("reading the cgroup of pod %s: %w", klog.KObj(pod), err)
		}
	}
	setPod := func(config *cgroups.ResourceConfig) error {
		if podCgroups == nil {
			return nil
		}
		if err := podCgroups.SetPodConfig(pod, config); err != nil {
			return fmt.Errorf("resizing the cgroup of pod %s: %w", klog.KObj(pod), err)
		}
		return nil
	}
	// A limit the pod no longer has stays as it is: the kubelet does not
	// remove limits in place either.
	if len(actions.ContainersToUpdate[corev1.ResourceMemory]) > 0 || actions.UpdatePodResources {
		newMemory := orCurrent(desired.Memory, current.Memory)
		err := m.resizeResource(ctx, pod, corev1.ResourceMemory, actions.ContainersToUpdate[corev1.ResourceMemory], applied,
			step{current: value(current.Memory), desired: value(newMemory), set: func() error { return setPod(&cgroups.ResourceConfig{Memory: newMemory}) }},
			step{})
		if err != nil {
			return err
		}
	}
	if len(actions.ContainersToUpdate[corev1.ResourceCPU]) > 0 || actions.UpdatePodResources {
		newQuota := orCurrent(desired.CPUQuota, current.CPUQuota)
		period := uint64(cgroups.QuotaPeriod)
		shares := desired.CPUShares
		err := m.resizeResource(ctx, pod, corev1.ResourceCPU, actions.ContainersToUpdate[corev1.ResourceCPU], applied,
			step{current: quotaValue(current.CPUQuota), desired: quotaValue(newQuota), set: func() error {
				return setPod(&cgroups.ResourceConfig{CPUQuota: newQuota, CPUPeriod: &period})
			}},
			step{current: sharesValue(current.CPUShares), desired: sharesValue(shares), set: func() error {
				return setPod(&cgroups.ResourceConfig{CPUShares: shares})
			}})
		if err != nil {
			return err
		}
	}
	return nil
}

// step is one pod cgroup value a resize moves from current to desired.
type step struct {
	current, desired int64
	set              func() error
}

// resizeResource moves one resource: the pod's limit and request up,
// the containers, then the pod's request and limit down.
func (m *Manager) resizeResource(ctx context.Context, pod *corev1.Pod, name corev1.ResourceName, updates []ContainerToUpdate, applied map[string]corev1.ResourceRequirements, limit, request step) error {
	for _, s := range []step{limit, request} {
		if s.set != nil && s.desired > s.current {
			if err := s.set(); err != nil {
				return err
			}
		}
	}
	for _, u := range updates {
		// The container has what an earlier step of this resize gave it
		// (memory before CPU), else what it ran with.
		current := u.Current
		if prev, ok := applied[u.ID.ID]; ok {
			current = kubecontainer.ResizeValuesOf(prev)
		}
		values := withResource(current, u.Desired, name)
		if err := m.updateContainer(ctx, pod, name, u, values); err != nil {
			return err
		}
		// What the runtime took is what the container runs with, whatever
		// ContainerStatus says later (a runtime may lag behind).
		applied[u.ID.ID] = values.Requirements()
	}
	for _, s := range []step{request, limit} {
		if s.set != nil && s.desired < s.current {
			if err := s.set(); err != nil {
				return err
			}
		}
	}
	return nil
}

// withResource is current with one resource (its request and limit) as
// desired has it.
func withResource(current, desired kubecontainer.ResizeValues, name corev1.ResourceName) kubecontainer.ResizeValues {
	switch name {
	case corev1.ResourceMemory:
		current.MemoryLimit, current.MemoryRequest = desired.MemoryLimit, desired.MemoryRequest
	case corev1.ResourceCPU:
		current.CPULimit, current.CPURequest = desired.CPULimit, desired.CPURequest
	}
	return current
}

// updateContainer gives a running container the resources values through
// CRI: one resource changed, the other as the container has it, so that
// the runtime never sees both move at once.
func (m *Manager) updateContainer(ctx context.Context, pod *corev1.Pod, name corev1.ResourceName, u ContainerToUpdate, values kubecontainer.ResizeValues) error {
	spec := &pod.Spec.Containers[u.Index]
	if u.Init {
		spec = &pod.Spec.InitContainers[u.Index]
	}
	container := spec.DeepCopy()
	container.Resources = values.Requirements()
	resources := containerResources(pod, container, m.host)
	if err := m.runtime.UpdateContainerResources(ctx, u.ID.ID, &runtimeapi.ContainerResources{Linux: resources}); err != nil {
		return fmt.Errorf("updating the %s of container %q of pod %s: %w", name, u.Name, klog.KObj(pod), err)
	}
	return nil
}

func orCurrent[T any](desired, current *T) *T {
	if desired != nil {
		return desired
	}
	return current
}

func value(v *int64) int64 {
	if v == nil {
		return math.MaxInt64
	}
	return *v
}

// quotaValue orders CFS quotas: none (zero or less) is the largest.
func quotaValue(v *int64) int64 {
	if v == nil || *v <= 0 {
		return math.MaxInt64
	}
	return *v
}

func sharesValue(v *uint64) int64 {
	if v == nil {
		return 0
	}
	return int64(*v)
}
