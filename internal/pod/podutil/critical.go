package podutil

import corev1 "k8s.io/api/core/v1"

// The kubelet's marks of a pod the node must keep running.
const (
	// SystemCriticalPriority is the priority from which a pod is critical
	// (system-cluster-critical's; system-node-critical's is above it).
	SystemCriticalPriority int32 = 2000000000
	// SystemNodeCritical is the priority class of the pods a node cannot
	// work without.
	SystemNodeCritical = "system-node-critical"
	// MirrorPodAnnotation marks the API server's copy of a static pod.
	MirrorPodAnnotation = "kubernetes.io/config.mirror"
)

// IsCritical reports whether a pod is critical as the kubelet counts it: a
// static or mirror pod, or one whose priority is at least SystemCriticalPriority.
// Such a pod is never evicted, and may preempt others on admission.
func IsCritical(pod *corev1.Pod) bool {
	if IsMirrorPod(pod) || IsStaticPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// IsNodeCritical reports whether a critical pod is also of the
// system-node-critical class, which the OOM killer spares most.
func IsNodeCritical(pod *corev1.Pod) bool {
	return IsCritical(pod) && pod.Spec.PriorityClassName == SystemNodeCritical
}

// Preemptable reports whether preemptor may have preemptee stopped to make
// room for it: a critical pod may stop any pod that is not, and otherwise
// only a strictly higher priority may stop a lower one.
func Preemptable(preemptor, preemptee *corev1.Pod) bool {
	if IsCritical(preemptor) && !IsCritical(preemptee) {
		return true
	}
	if preemptor.Spec.Priority == nil || preemptee.Spec.Priority == nil {
		return false
	}
	return *preemptor.Spec.Priority > *preemptee.Spec.Priority
}
