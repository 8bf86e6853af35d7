package podstatus

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DisruptionTargetPatch is the strategic merge patch of a pod's status that
// adds the kubelet's DisruptionTarget condition, said before nodelet stops
// the pod of its own accord (eviction, preemption) so that controllers can
// tell the disruption from a failure. The pod's UID is a precondition: a
// pod recreated under the same name is not marked.
func DisruptionTargetPatch(pod *corev1.Pod, message string, now time.Time) ([]byte, error) {
	condition := corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		ObservedGeneration: pod.Generation,
		Status:             corev1.ConditionTrue,
		Reason:             corev1.PodReasonTerminationByKubelet,
		Message:            message,
		LastTransitionTime: metav1.NewTime(now),
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []corev1.PodCondition{condition}},
	})
}
