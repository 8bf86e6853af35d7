package admission

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// The kubelet's words for a pod stopped to make room for a critical one,
// and for a critical pod that no set of pods could make room for.
const (
	ReasonPreempting = "Preempting"
	// PreemptedMessage is the stopped pod's event and status message.
	PreemptedMessage = "Preempted in order to admit critical pod"
	// PreemptedDisruptionMessage is its DisruptionTarget condition's.
	PreemptedDisruptionMessage = "Pod was preempted by Kubelet to accommodate a critical pod."
	// ReasonUnexpectedAdmissionError refuses a critical pod when no pods
	// can be stopped to make room for it.
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// requirement is how much more of one resource the node must free.
type requirement struct {
	name     corev1.ResourceName
	quantity int64
}

type requirements []requirement

func (r insufficientResource) requirement() requirement {
	return requirement{name: r.name, quantity: r.requested - (r.capacity - r.used)}
}

// preemptionCandidate is a pod that could be stopped, with what stopping
// it frees.
type preemptionCandidate struct {
	pod      *corev1.Pod
	requests amounts
}

func newCandidate(pod *corev1.Pod) preemptionCandidate {
	requests := podRequests(pod, true)
	requests[corev1.ResourcePods] = 1
	return preemptionCandidate{pod: pod, requests: requests}
}

// after is what is still needed once the candidates are stopped.
func (reqs requirements) after(candidates ...preemptionCandidate) requirements {
	var left requirements
	for _, req := range reqs {
		for _, c := range candidates {
			req.quantity -= c.requests[req.name]
		}
		if req.quantity > 0 {
			left = append(left, req)
		}
	}
	return left
}

// distance is how far stopping one candidate leaves each requirement from
// met, as the fraction still missing, squared and summed, so that every
// resource weighs the same whatever its unit.
func (reqs requirements) distance(c preemptionCandidate) float64 {
	var d float64
	for _, req := range reqs {
		if missing := req.quantity - c.requests[req.name]; missing > 0 {
			f := float64(missing) / float64(req.quantity)
			d += f * f
		}
	}
	return d
}

func (reqs requirements) String() string {
	var b strings.Builder
	b.WriteString("[")
	for _, req := range reqs {
		fmt.Fprintf(&b, "(res: %v, q: %d), ", req.name, req.quantity)
	}
	b.WriteString("]")
	return b.String()
}

// errNoPodsToPreempt: even stopping every pod the critical pod may stop
// would not make room for it.
var errNoPodsToPreempt = errors.New("no set of running pods found to reclaim resources")

// podsToPreempt chooses the pods to stop so that preemptor fits, as the
// kubelet does: as few and as small Guaranteed pods as it takes once every
// Burstable and BestEffort pod is counted as stopped, then the fewest
// Burstable ones given those, then the BestEffort ones for the rest; so a
// Guaranteed pod is stopped only when nothing else would do. Only pods
// preemptor may preempt are candidates.
func podsToPreempt(preemptor *corev1.Pod, admitted []*corev1.Pod, needs requirements) ([]*corev1.Pod, error) {
	var bestEffort, burstable, guaranteed []preemptionCandidate
	for _, pod := range admitted {
		if !podutil.Preemptable(preemptor, pod) {
			continue
		}
		switch podutil.PodQOS(pod) {
		case corev1.PodQOSBestEffort:
			bestEffort = append(bestEffort, newCandidate(pod))
		case corev1.PodQOSBurstable:
			burstable = append(burstable, newCandidate(pod))
		default:
			guaranteed = append(guaranteed, newCandidate(pod))
		}
	}
	all := append(append(append([]preemptionCandidate{}, bestEffort...), burstable...), guaranteed...)
	if left := needs.after(all...); len(left) > 0 {
		return nil, fmt.Errorf("%w: %v", errNoPodsToPreempt, left)
	}
	lowerTiers := append(append([]preemptionCandidate{}, bestEffort...), burstable...)
	guaranteedOut, err := closestCandidates(guaranteed, needs.after(lowerTiers...))
	if err != nil {
		return nil, err
	}
	burstableOut, err := closestCandidates(burstable, needs.after(append(append([]preemptionCandidate{}, bestEffort...), guaranteedOut...)...))
	if err != nil {
		return nil, err
	}
	bestEffortOut, err := closestCandidates(bestEffort, needs.after(append(append([]preemptionCandidate{}, burstableOut...), guaranteedOut...)...))
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, c := range append(append(bestEffortOut, burstableOut...), guaranteedOut...) {
		out = append(out, c.pod)
	}
	return out, nil
}

// closestCandidates takes, one at a time, the candidate that leaves the
// needs closest to met (the one asking less memory, then CPU, on a tie)
// until nothing is needed.
func closestCandidates(candidates []preemptionCandidate, needs requirements) ([]preemptionCandidate, error) {
	pool := append([]preemptionCandidate{}, candidates...)
	var chosen []preemptionCandidate
	for len(needs) > 0 {
		if len(pool) == 0 {
			return nil, fmt.Errorf("%w: %v", errNoPodsToPreempt, needs)
		}
		best := 0
		bestDistance := needs.distance(pool[0])
		for i := 1; i < len(pool); i++ {
			d := needs.distance(pool[i])
			if d < bestDistance || (d == bestDistance && asksLess(pool[i], pool[best])) {
				best, bestDistance = i, d
			}
		}
		chosen = append(chosen, pool[best])
		needs = needs.after(pool[best])
		pool = append(pool[:best], pool[best+1:]...)
	}
	return chosen, nil
}

// asksLess: a asks for less memory than b, or as much and less CPU.
func asksLess(a, b preemptionCandidate) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		if a.requests[name] != b.requests[name] {
			return a.requests[name] < b.requests[name]
		}
	}
	return false
}

// admitCritical is the answer for a critical pod the node has no room for:
// refused for any failure other than resources, as a critical pod is
// never refused for resources alone; else admitted with the pods to stop
// first, or refused when no pods can be stopped to make room.
func admitCritical(pod *corev1.Pod, admitted []*corev1.Pod, short []insufficientResource, others []Result) Result {
	if len(others) > 0 {
		return others[0]
	}
	var needs requirements
	for _, r := range short {
		needs = append(needs, r.requirement())
	}
	victims, err := podsToPreempt(pod, admitted, needs)
	if err != nil {
		return Result{
			Reason:  ReasonUnexpectedAdmissionError,
			Message: fmt.Sprintf("Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: %v", err),
		}
	}
	return Result{Admit: true, Preempt: victims, PreemptFor: short[0].name}
}
