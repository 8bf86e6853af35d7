package admission

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The kubelet's reasons for a pod the node has no room for: "OutOf" and
// the resource's name, extended resources included ("OutOfexample.com/gpu").
const (
	insufficientResourcePrefix   = "OutOf"
	ReasonOutOfCPU               = "OutOfcpu"
	ReasonOutOfMemory            = "OutOfmemory"
	ReasonOutOfEphemeralStorage  = "OutOfephemeral-storage"
	ReasonOutOfPods              = "OutOfpods"
	insufficientResourceTemplate = "Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d"
)

// amounts are resources as the kubelet compares them: CPU in millicores,
// everything else (memory, ephemeral storage, hugepages, extended
// resources) in whole units.
type amounts map[corev1.ResourceName]int64

// resourceAmounts turns a resource list into amounts, keeping only what
// the kubelet counts: CPU, memory, ephemeral storage and the scalar
// resources (extended, hugepages, other *kubernetes.io/ ones).
func resourceAmounts(list corev1.ResourceList) amounts {
	out := amounts{}
	for name, q := range list {
		switch {
		case name == corev1.ResourceCPU:
			out[name] = q.MilliValue()
		case name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage, name == corev1.ResourcePods:
			out[name] = q.Value()
		case isScalarResourceName(name):
			out[name] = q.Value()
		}
	}
	return out
}

// podRequests is what a pod asks of the node, as the kubelet counts it:
// the larger of its long-running containers together (regular ones and
// sidecars) and the peak of its init containers (each with the sidecars
// started before it), plus its overhead; or its pod-level requests when
// spec.resources sets them. For a pod already admitted, its status's
// resources count where a resize made them larger.
func podRequests(pod *corev1.Pod, admitted bool) amounts {
	return resourceAmounts(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		UseStatusResources: admitted,
		InPlacePodLevelResourcesVerticalScalingEnabled: admitted,
	}))
}

// insufficientResource is one resource a pod does not fit in.
type insufficientResource struct {
	name                      corev1.ResourceName
	requested, used, capacity int64
}

func (r insufficientResource) result() Result {
	reason := insufficientResourcePrefix + string(r.name)
	return Result{Reason: reason, Message: fmt.Sprintf(insufficientResourceTemplate, r.name, r.requested, r.used, r.capacity)}
}

// fitResources lists the resources the node's allocatable has no room for
// pod in, beside the pods already admitted, in the kubelet's order: the
// pod count, CPU, memory, ephemeral storage, then the scalar resources
// (by name here, where the kubelet's order is a map's). A resource the pod
// does not ask for always fits; an extended resource the node does not
// list is not checked, as the kubelet leaves such cluster-level resources
// to whatever provides them.
func fitResources(pod *corev1.Pod, allocatable corev1.ResourceList, admitted []*corev1.Pod) []insufficientResource {
	capacity := resourceAmounts(allocatable)
	used := amounts{}
	for _, other := range admitted {
		for name, v := range podRequests(other, true) {
			used[name] += v
		}
	}
	var out []insufficientResource
	if pods := int64(len(admitted)); pods+1 > capacity[corev1.ResourcePods] {
		out = append(out, insufficientResource{name: corev1.ResourcePods, requested: 1, used: pods, capacity: capacity[corev1.ResourcePods]})
	}
	requests := podRequests(pod, false)
	delete(requests, corev1.ResourcePods)
	names := make([]corev1.ResourceName, 0, len(requests))
	for name := range requests {
		if _, known := capacity[name]; !known && isExtendedResourceName(name) {
			continue
		}
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := resourceRank(names[i]), resourceRank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		want := requests[name]
		if want > 0 && want > capacity[name]-used[name] {
			out = append(out, insufficientResource{name: name, requested: want, used: used[name], capacity: capacity[name]})
		}
	}
	return out
}

// resourceRank orders the resources as the kubelet checks them.
func resourceRank(name corev1.ResourceName) int {
	switch name {
	case corev1.ResourceCPU:
		return 0
	case corev1.ResourceMemory:
		return 1
	case corev1.ResourceEphemeralStorage:
		return 2
	default:
		return 3
	}
}

// isNativeResource: unprefixed names and those under *kubernetes.io/.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName: a resource outside kubernetes.io whose quota
// name ("requests.<name>") is a qualified name, as the API defines it.
func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isScalarResourceName: the resources counted beside CPU, memory and
// ephemeral storage: extended ones, hugepages, and other prefixed native
// ones (attachable volumes among them).
func isScalarResourceName(name corev1.ResourceName) bool {
	return isExtendedResourceName(name) ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) ||
		strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}
