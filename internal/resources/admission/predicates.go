package admission

import (
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// The scheduler's predicates the kubelet checks again on admission, by
// their plugin names (the pod's reason) and failure words (its message,
// after "Predicate <name> failed: ").
const (
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"

	nodeAffinityFailure    = "node(s) didn't match Pod's node affinity/selector"
	nodePortsFailure       = "node(s) didn't have free ports for the requested pod ports"
	taintTolerationFailure = "node(s) had taints that the pod didn't tolerate"
)

// predicateFailure is the kubelet's result for a failed predicate.
func predicateFailure(name, failure string) Result {
	return Result{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, failure)}
}

// matchesNodeAffinity: the pod's nodeSelector and required node affinity
// (its terms ORed, each term's expressions and fields ANDed) accept the
// node. An affinity that cannot be parsed matches no node.
func matchesNodeAffinity(pod *corev1.Pod, node *corev1.Node) bool {
	match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return err == nil && match
}

// toleratesNoExecuteTaints: the kubelet looks only at the node's NoExecute
// taints on admission; NoSchedule ones are the scheduler's business, and a
// pod bound by hand past them runs.
func toleratesNoExecuteTaints(pod *corev1.Pod, node *corev1.Node) bool {
	_, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute },
		false) // TaintTolerationComparisonOperators is alpha, off in v1.36
	return !untolerated
}

// bindAllHostIP is the host IP of a port given without one: every address.
const bindAllHostIP = "0.0.0.0"

// hostPort is a port a pod holds on the host, its IP and protocol
// defaulted as the scheduler defaults them.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

// podHostPorts are the host ports a pod holds for as long as it runs
// (podutil.HostPorts, which the sandbox maps), each IP defaulted as the
// scheduler defaults it.
func podHostPorts(pod *corev1.Pod) []hostPort {
	var ports []hostPort
	for _, p := range podutil.HostPorts(pod) {
		hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
		if hp.ip == "" {
			hp.ip = bindAllHostIP
		}
		ports = append(ports, hp)
	}
	return ports
}

// conflicts: two host ports of one protocol and number clash when their
// IPs are the same or either is 0.0.0.0 (every address).
func (p hostPort) conflicts(q hostPort) bool {
	if p.protocol != q.protocol || p.port != q.port {
		return false
	}
	return p.ip == q.ip || p.ip == bindAllHostIP || q.ip == bindAllHostIP
}

// fitsHostPorts: none of the pod's host ports is held by an admitted pod.
// A pod's own ports never clash with each other here.
func fitsHostPorts(pod *corev1.Pod, admitted []*corev1.Pod) bool {
	want := podHostPorts(pod)
	if len(want) == 0 {
		return true
	}
	for _, other := range admitted {
		for _, held := range podHostPorts(other) {
			for _, p := range want {
				if p.conflicts(held) {
					return false
				}
			}
		}
	}
	return true
}

// admitOnNode is the kubelet's general predicates against the Node and the
// pods admitted before: resources, node affinity, ports, then NoExecute
// taints. All are judged, and the first failure is the answer, as the
// kubelet reports it; but a critical pod is admitted past resources alone
// by stopping other pods (admitCritical).
func admitOnNode(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) Result {
	short := fitResources(pod, node.Status.Allocatable, admitted)
	var others []Result
	if !matchesNodeAffinity(pod, node) {
		others = append(others, predicateFailure(ReasonNodeAffinity, nodeAffinityFailure))
	}
	if !fitsHostPorts(pod, admitted) {
		others = append(others, predicateFailure(ReasonNodePorts, nodePortsFailure))
	}
	if !toleratesNoExecuteTaints(pod, node) {
		others = append(others, predicateFailure(ReasonTaintToleration, taintTolerationFailure))
	}
	switch {
	case len(short) == 0 && len(others) == 0:
		return Result{Admit: true}
	case len(short) > 0 && podutil.IsCritical(pod):
		return admitCritical(pod, admitted, short, others)
	case len(short) > 0:
		return short[0].result()
	default:
		return others[0]
	}
}
