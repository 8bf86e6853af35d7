package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reason and message of a pod failed for running past its
// activeDeadlineSeconds, the kubelet's.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// Failure is why nodelet fails a pod that would otherwise run on.
type Failure struct {
	Reason  string
	Message string
}

// ActiveDeadline is when a pod with activeDeadlineSeconds must be done,
// counted from its startTime; zero when there is none (yet).
func ActiveDeadline(pod *corev1.Pod) time.Time {
	if pod.Spec.ActiveDeadlineSeconds == nil || pod.Status.StartTime == nil || pod.Status.StartTime.IsZero() {
		return time.Time{}
	}
	return pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
}

// DeadlineCheck is when the pod's reconcile must look at its deadline
// again: the deadline, or, for a pod that has none yet for want of a
// startTime (its first sync, whose status gives it one of now or later),
// activeDeadlineSeconds from now, which comes no later. Zero: never.
func DeadlineCheck(pod *corev1.Pod, now time.Time) time.Time {
	if deadline := ActiveDeadline(pod); !deadline.IsZero() || pod.Spec.ActiveDeadlineSeconds == nil {
		return deadline
	}
	return now.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
}

// DeadlineFailure is the pod's failure if it has run past its deadline at
// now, else nil. The spec's deadline may change while the pod runs; the
// current one counts.
func DeadlineFailure(pod *corev1.Pod, now time.Time) *Failure {
	deadline := ActiveDeadline(pod)
	if deadline.IsZero() || now.Before(deadline) {
		return nil
	}
	return &Failure{Reason: ReasonDeadlineExceeded, Message: MessageDeadlineExceeded}
}
