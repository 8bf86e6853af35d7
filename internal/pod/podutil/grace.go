package podutil

import corev1 "k8s.io/api/core/v1"

// TerminationGracePeriodSeconds is how long the pod's containers get to
// stop: the delete's own grace period once the pod is being deleted (a
// second delete may have shortened it), else the spec's, else the API's
// default of 30 seconds. The reconciler (to notice a shortened grace
// period) and the runtime (to stop the containers) both read it here, so
// they cannot disagree.
func TerminationGracePeriodSeconds(pod *corev1.Pod) int64 {
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}
