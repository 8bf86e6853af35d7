package podstatus

import (
	corev1 "k8s.io/api/core/v1"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

// statusResources is a container's status.resources as the kubelet
// reports them: what the runtime applied to a running instance (its CPU
// and memory limits, its CPU request), the spec's (the allocation; nodelet
// resizes nothing in place) for the rest and for an instance that is not
// running. A CPU value at or below what the kernel can express keeps the
// spec's when the spec's is too, so that tiny values compare equal.
func statusResources(container *corev1.Container, instance *noderuntime.ContainerStatus) *corev1.ResourceRequirements {
	resources := container.Resources.DeepCopy()
	applied := instance.Resources
	if instance.State != noderuntime.ContainerRunning || applied == nil {
		return resources
	}
	if resources.Limits != nil {
		if applied.CPULimit != nil && (applied.CPULimit.MilliValue() > noderuntime.MinMilliCPULimit ||
			resources.Limits.Cpu().MilliValue() > noderuntime.MinMilliCPULimit) {
			resources.Limits[corev1.ResourceCPU] = applied.CPULimit.DeepCopy()
		}
		if applied.MemoryLimit != nil {
			resources.Limits[corev1.ResourceMemory] = applied.MemoryLimit.DeepCopy()
		}
	}
	if resources.Requests != nil && applied.CPURequest != nil &&
		(applied.CPURequest.MilliValue() > noderuntime.MinMilliCPURequest || resources.Requests.Cpu().MilliValue() > noderuntime.MinMilliCPURequest) {
		resources.Requests[corev1.ResourceCPU] = applied.CPURequest.DeepCopy()
	}
	return resources
}
