// Package admission decides, before anything is made for a pod on the
// node, whether the node may run it at all, as the kubelet's pod admit
// handlers do; and, when its sandbox is about to be made, whether the
// runtime can give the pod what its spec asks of the sandbox.
//
// Everything here is a pure function over plain values: what the node is
// (its OS, kernel version, allowed sysctls, the runtime's handlers) is
// read at the edges and passed in.
package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's reasons for refusing a pod, which `kubectl get pods`
// shows as the pod's status.
const (
	// ReasonPodOSSelectorNodeLabelDoesNotMatch: the pod's
	// kubernetes.io/os label names another OS than the node's.
	ReasonPodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	// ReasonPodOSNotSupported: the pod's spec.os names another OS.
	ReasonPodOSNotSupported = "PodOSNotSupported"
	// ReasonSysctlForbidden: a sysctl is neither safe nor allowed, or
	// belongs to a namespace the pod shares with the host.
	ReasonSysctlForbidden = "SysctlForbidden"
	// ReasonDynamicResourcesNotSupported is nodelet's own: the pod claims
	// dynamic resources (spec.resourceClaims), which nodelet cannot
	// prepare; running it without them would ignore the claim.
	ReasonDynamicResourcesNotSupported = "DynamicResourcesNotSupported"
	// ReasonHostPortsNotSupported is nodelet's own: the pod holds host
	// ports on a node whose address and ports are its host's, shared with
	// another agent's pods (a companion node), which nodelet cannot see:
	// the ports could be taken already, or be taken from under it.
	ReasonHostPortsNotSupported = "HostPortsNotSupported"
)

// rejectedPrefix starts the message of a refused pod's status; the event
// carries the message without it, as the kubelet's.
const rejectedPrefix = "Pod was rejected: "

// Result is admission's answer for one pod.
type Result struct {
	Admit bool
	// Reason and Message say why a pod is refused: the reason of its
	// Failed status and event, and the event's words.
	Reason  string
	Message string
	// Preempt are the pods to stop before an admitted critical pod may
	// start, when the node had no room for it; PreemptFor is the first
	// resource it lacked, which the kubelet's preemption metric counts.
	Preempt    []*corev1.Pod
	PreemptFor corev1.ResourceName
}

// StatusMessage is the message of a refused pod's status.
func (r Result) StatusMessage() string { return rejectedPrefix + r.Message }

// Node is what admission knows of this node.
type Node struct {
	// OS is the node's operating system as Go names it ("linux").
	OS string
	// KernelVersion is the running kernel's release ("6.1.0-18-amd64");
	// which sysctls are safe depends on it. Empty when unknown: the
	// sysctls that need a minimum version are then not safe.
	KernelVersion string
	// AllowedUnsafeSysctls are the --allowed-unsafe-sysctls patterns: a
	// name, or a prefix ending in '*'.
	AllowedUnsafeSysctls []string
	// HostPortsShared is true when the node's address and ports are its
	// host's, shared with another agent's pods: pods that hold host ports
	// are refused.
	HostPortsShared bool
}

// Admitter holds one node's admission rules, prepared once.
type Admitter struct {
	node    Node
	sysctls *sysctlAllowlist
}

// New prepares the rules for node; its sysctl patterns must be valid.
func New(node Node) (*Admitter, error) {
	// The safe sysctls are always allowed, as the kubelet appends them to
	// the unsafe ones the administrator allows.
	patterns := append(safeSysctls(node.KernelVersion), node.AllowedUnsafeSysctls...)
	allowlist, err := newSysctlAllowlist(patterns)
	if err != nil {
		return nil, err
	}
	return &Admitter{node: node, sysctls: allowlist}, nil
}

// NewForNode prepares admission for a node from what it reports of itself
// (its OS and kernel release: the Node's nodeInfo, read once with the
// machine's other facts, so that the sysctls judged safe are those of the
// kernel the Node names) and from its options: the
// --allowed-unsafe-sysctls patterns and --host-ports-shared.
func NewForNode(nodeOS, kernelRelease string, allowedUnsafeSysctls []string, hostPortsShared bool) (*Admitter, error) {
	admitter, err := New(Node{
		OS:                   nodeOS,
		KernelVersion:        kernelRelease,
		AllowedUnsafeSysctls: allowedUnsafeSysctls,
		HostPortsShared:      hostPortsShared,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up pod admission: %w", err)
	}
	return admitter, nil
}

// Admit decides whether the node may run pod beside the pods admitted
// before it (not terminal, not refused), with the kubelet's checks that
// nodelet has, in the kubelet's order: sysctls; the pod's OS label and
// field; what nodelet cannot do at all; then the general predicates
// against the Node: resources against its allocatable, node affinity,
// host ports, NoExecute taints.
func (a *Admitter) Admit(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) Result {
	if r := admitUnderPressure(pod, node); !r.Admit {
		return r
	}
	if r := a.sysctls.admit(pod); !r.Admit {
		return r
	}
	if r := admitOS(pod, a.node.OS); !r.Admit {
		return r
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return Result{
			Reason:  ReasonDynamicResourcesNotSupported,
			Message: "nodelet cannot prepare dynamic resources: the pod's spec.resourceClaims cannot be honoured on this node",
		}
	}
	if ports := podHostPorts(pod); a.node.HostPortsShared && len(ports) > 0 {
		return Result{
			Reason: ReasonHostPortsNotSupported,
			Message: fmt.Sprintf("the node shares its host's address and ports with the host's other pods, which nodelet cannot see: the pod's host port %d/%s cannot be held on it",
				ports[0].port, ports[0].protocol),
		}
	}
	return admitOnNode(pod, node, admitted)
}

// admitOS refuses a pod meant for another OS. The label check reads the
// pod's own labels, not its nodeSelector, as the kubelet does; the node's
// label is taken to be its OS whatever the Node says.
func admitOS(pod *corev1.Pod, nodeOS string) Result {
	if os, ok := pod.Labels[corev1.LabelOSStable]; ok && os != nodeOS {
		return Result{
			Reason:  ReasonPodOSSelectorNodeLabelDoesNotMatch,
			Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
		}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return Result{
			Reason:  ReasonPodOSNotSupported,
			Message: "Failed to admit pod as the OS field doesn't match node OS",
		}
	}
	return Result{Admit: true}
}

// WasAdmitted reports whether a pod was admitted before: the runtime holds
// something of it, or its status shows a container that ran. Such a pod is
// not judged again, as the kubelet judges a pod once, when it first sees
// it.
func WasAdmitted(pod *corev1.Pod, hasRuntimeState bool) bool {
	if hasRuntimeState {
		return true
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, s := range statuses {
			if s.ContainerID != "" {
				return true
			}
		}
	}
	return false
}
