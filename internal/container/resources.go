package container

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AppliedResources are the compute resources the runtime says a container
// runs with (CRI ContainerStatus.resources), turned back into the Pod
// API's units as the kubelet does; a field is nil when the runtime set no
// such limit.
type AppliedResources struct {
	// CPULimit comes from the CFS quota over its period.
	CPULimit *resource.Quantity
	// CPURequest comes from the CPU shares.
	CPURequest *resource.Quantity
	// MemoryLimit is the memory limit in bytes.
	MemoryLimit *resource.Quantity
}

// ResizeValues are the four values of a container's resources a resize
// compares and applies, as the kubelet does: CPU in millicores, memory in
// bytes; zero is unset.
type ResizeValues struct {
	CPURequest    int64 `json:"cpuRequest,omitempty"`
	CPULimit      int64 `json:"cpuLimit,omitempty"`
	MemoryRequest int64 `json:"memoryRequest,omitempty"`
	MemoryLimit   int64 `json:"memoryLimit,omitempty"`
}

// ResizeValuesOf reads the values of a container's resources.
func ResizeValuesOf(r corev1.ResourceRequirements) ResizeValues {
	return ResizeValues{
		CPURequest:    r.Requests.Cpu().MilliValue(),
		CPULimit:      r.Limits.Cpu().MilliValue(),
		MemoryRequest: r.Requests.Memory().Value(),
		MemoryLimit:   r.Limits.Memory().Value(),
	}
}

// Requirements are the values as the Pod API writes resources, the unset
// ones left out.
func (v ResizeValues) Requirements() corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	add := func(list *corev1.ResourceList, name corev1.ResourceName, q *resource.Quantity) {
		if q.IsZero() {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = *q
	}
	add(&r.Requests, corev1.ResourceCPU, resource.NewMilliQuantity(v.CPURequest, resource.DecimalSI))
	add(&r.Requests, corev1.ResourceMemory, resource.NewQuantity(v.MemoryRequest, resource.BinarySI))
	add(&r.Limits, corev1.ResourceCPU, resource.NewMilliQuantity(v.CPULimit, resource.DecimalSI))
	add(&r.Limits, corev1.ResourceMemory, resource.NewQuantity(v.MemoryLimit, resource.BinarySI))
	return r
}
