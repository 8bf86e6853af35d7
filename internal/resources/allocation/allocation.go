// Package allocation keeps what the node allocated to each pod it admitted:
// the resources of its containers (and its pod-level resources) at which it
// was admitted or last resized, as the kubelet's allocation manager keeps
// them. A pod's spec says what it asks for; its allocation says what the
// node gave it, which admission counts for the other pods, the runtime
// applies, and status.containerStatuses[].allocatedResources report. They
// differ while a resize is pending.
//
// The functions here are pure; Store keeps the allocations on disk so that
// they survive a restart.
package allocation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// PodAllocation is what the node allocated to one pod.
type PodAllocation struct {
	// Resources are the pod-level resources (spec.resources) it was
	// admitted with; nil when it has none.
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Containers are the resources of each resizable container, by name.
	Containers map[string]corev1.ResourceRequirements `json:"containers,omitempty"`
	// Resized are the resources an in-place resize applied to a running
	// container instance, by container ID (the kubelet's actuated
	// resources). An instance without an entry runs with what it was
	// created with; a restarted container is a new instance, so entries
	// of gone instances are dropped when the next resize is recorded.
	Resized map[string]corev1.ResourceRequirements `json:"resized,omitempty"`
}

// IsResizable reports whether a container's resources may change in
// place: regular containers and sidecars. Other init containers ran to
// completion before the pod went on (and the API server does not let
// them be resized here, as nodelet's Node does not declare the
// InPlacePodVerticalScalingInitContainers feature).
func IsResizable(container *corev1.Container, init bool) bool {
	return !init || podutil.IsSidecar(container)
}

// FromPod is the allocation of a pod admitted as its spec asks.
func FromPod(pod *corev1.Pod) PodAllocation {
	a := PodAllocation{Containers: map[string]corev1.ResourceRequirements{}}
	if pod.Spec.Resources != nil {
		a.Resources = pod.Spec.Resources.DeepCopy()
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; IsResizable(c, true) {
			a.Containers[c.Name] = *c.Resources.DeepCopy()
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		a.Containers[c.Name] = *c.Resources.DeepCopy()
	}
	return a
}

// SameAs reports whether two allocations give the same resources; what
// resizes applied is not compared.
func (a PodAllocation) SameAs(b PodAllocation) bool {
	return equality.Semantic.DeepEqual(a.Resources, b.Resources) &&
		equality.Semantic.DeepEqual(a.Containers, b.Containers)
}

// Apply returns pod with its spec's resources replaced by the allocation:
// the pod as the node runs it. The pod is copied only when something
// differs, and updated then says so (the spec asks for a resize).
func Apply(pod *corev1.Pod, a PodAllocation) (allocated *corev1.Pod, updated bool) {
	copyOnce := func() {
		if !updated {
			pod = pod.DeepCopy()
			updated = true
		}
	}
	if !equality.Semantic.DeepEqual(pod.Spec.Resources, a.Resources) {
		copyOnce()
		pod.Spec.Resources = a.Resources.DeepCopy()
	}
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		if r, ok := a.Containers[name]; ok && !equality.Semantic.DeepEqual(pod.Spec.InitContainers[i].Resources, r) {
			copyOnce()
			pod.Spec.InitContainers[i].Resources = *r.DeepCopy()
		}
	}
	for i := range pod.Spec.Containers {
		name := pod.Spec.Containers[i].Name
		if r, ok := a.Containers[name]; ok && !equality.Semantic.DeepEqual(pod.Spec.Containers[i].Resources, r) {
			copyOnce()
			pod.Spec.Containers[i].Resources = *r.DeepCopy()
		}
	}
	return pod, updated
}
