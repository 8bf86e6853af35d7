package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// messagePodLevelResize is the kubelet's answer to a resize of pod-level
// resources where its InPlacePodLevelResourcesVerticalScaling gate is
// off: nodelet does not resize the pod's own resources in place, and its
// Node does not declare the feature, so the API server refuses such a
// resize before it reaches the node.
const messagePodLevelResize = "InPlacePodLevelResourcesVerticalScaling is disabled"

// ResizeResult is the answer to a resize of a running pod: accepted (the
// node allocates what the spec now asks), or pending with the kubelet's
// reason — Infeasible (it never can), or the reason of the admission
// check that defers it (OutOfcpu, OutOfmemory, ...: not now, the other
// pods' allocations leave no room), which the PodResizePending condition
// says as Deferred and the event says as it is — and the message.
type ResizeResult struct {
	Accepted bool
	Reason   string
	Message  string
}

func infeasible(message string) ResizeResult {
	return ResizeResult{Reason: corev1.PodReasonInfeasible, Message: message}
}

func deferred(r Result) ResizeResult {
	return ResizeResult{Reason: r.Reason, Message: r.Message}
}

// AdmitResize decides whether the node can give a running pod what its
// spec now asks (desired) in place of what it allocated (allocated, the
// same pod with the allocation's resources), beside the other pods at
// their allocations, as the kubelet judges a resize: first the cases it
// never accepts (Infeasible), then its admission predicates with the
// resized pod, any failure of which defers the resize. A resize frees no
// room by stopping other pods.
//
// The kubelet's other infeasible cases do not arise here: nodelet runs no
// swap, and has no static CPU or memory manager.
func (a *Admitter) AdmitResize(desired, allocated *corev1.Pod, node *corev1.Node, others []*corev1.Pod) ResizeResult {
	if !equality.Semantic.DeepEqual(desired.Spec.Resources, allocated.Spec.Resources) {
		return infeasible(messagePodLevelResize)
	}
	rest := make([]*corev1.Pod, 0, len(others))
	for _, p := range others {
		if p.UID != desired.UID {
			rest = append(rest, p)
		}
	}
	if short := fitResources(desired, node.Status.Allocatable, rest); len(short) > 0 {
		return deferred(short[0].result())
	}
	if r := admitOnNode(desired, node, rest); !r.Admit {
		return deferred(r)
	}
	return ResizeResult{Accepted: true}
}
