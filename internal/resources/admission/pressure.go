package admission

import (
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// ReasonEvicted is the kubelet's reason for a pod refused while the node
// is under pressure: its eviction manager's.
const ReasonEvicted = "Evicted"

// pressureConditions are the Node's conditions that refuse pods, in the
// order the Node lists them.
var pressureConditions = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// admitUnderPressure refuses the pod, as the kubelet's eviction manager
// does before any other check, when the node is under pressure and cannot
// take it: a critical pod always comes in; under memory pressure alone, a
// pod that is not BestEffort, or tolerates the memory-pressure taint; under
// any other pressure, no other pod.
func admitUnderPressure(pod *corev1.Pod, node *corev1.Node) Result {
	var under []corev1.NodeConditionType
	if node != nil {
		for _, kind := range pressureConditions {
			for _, c := range node.Status.Conditions {
				if c.Type == kind && c.Status == corev1.ConditionTrue {
					under = append(under, kind)
				}
			}
		}
	}
	if len(under) == 0 || podutil.IsCritical(pod) {
		return Result{Admit: true}
	}
	if len(under) == 1 && under[0] == corev1.NodeMemoryPressure {
		if podutil.PodQOS(pod) != corev1.PodQOSBestEffort || toleratesMemoryPressure(pod) {
			return Result{Admit: true}
		}
	}
	return Result{Reason: ReasonEvicted, Message: fmt.Sprintf("The node had condition: %v. ", under)}
}

func toleratesMemoryPressure(pod *corev1.Pod) bool {
	taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
	// TaintTolerationComparisonOperators is alpha, off in v1.36.
	return schedulingcorev1.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, taint, false)
}
