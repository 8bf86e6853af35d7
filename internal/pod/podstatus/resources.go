package podstatus

import (
	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// The smallest CPU limit a CFS quota expresses (the least quota over
// its period) and the CPU request at which shares bottom out: the
// kubelet shows the spec's value rather than these when both the spec and
// the runtime are at or below them.
const (
	minMilliCPULimit   = cgroups.MinQuotaPeriod * 1000 / cgroups.QuotaPeriod
	minMilliCPURequest = cgroups.MinShares
)

// statusResources is a container's status.resources as the kubelet
// reports them: what the runtime applied to a running instance (its CPU
// and memory limits, its CPU request), the spec's (the allocation; nodelet
// resizes nothing in place) for the rest and for an instance that is not
// running. A CPU value at or below what the kernel can express keeps the
// spec's when the spec's is too, so that tiny values compare equal.
func statusResources(container *corev1.Container, instance *kubecontainer.ContainerStatus) *corev1.ResourceRequirements {
	resources := container.Resources.DeepCopy()
	applied := instance.Resources
	if instance.State != kubecontainer.ContainerRunning || applied == nil {
		return resources
	}
	if resources.Limits != nil {
		if applied.CPULimit != nil && (applied.CPULimit.MilliValue() > minMilliCPULimit ||
			resources.Limits.Cpu().MilliValue() > minMilliCPULimit) {
			resources.Limits[corev1.ResourceCPU] = applied.CPULimit.DeepCopy()
		}
		if applied.MemoryLimit != nil {
			resources.Limits[corev1.ResourceMemory] = applied.MemoryLimit.DeepCopy()
		}
	}
	if resources.Requests != nil && applied.CPURequest != nil &&
		(applied.CPURequest.MilliValue() > minMilliCPURequest || resources.Requests.Cpu().MilliValue() > minMilliCPURequest) {
		resources.Requests[corev1.ResourceCPU] = applied.CPURequest.DeepCopy()
	}
	return resources
}
