package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestAdmitUnderPressure(t *testing.T) {
	node := func(pressures ...corev1.NodeConditionType) *corev1.Node {
		n := &corev1.Node{}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		for _, kind := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			status := corev1.ConditionFalse
			for _, p := range pressures {
				if p == kind {
					status = corev1.ConditionTrue
				}
			}
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: kind, Status: status})
		}
		return n
	}
	bestEffort := basePod()
	burstable := basePod()
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi")}
	critical := basePod()
	critical.Spec.Priority = ptr.To[int32](2000001000)
	tolerant := basePod()
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	admitted := Result{Admit: true}
	evicted := func(message string) Result { return Result{Reason: "Evicted", Message: message} }

	tests := map[string]struct {
		pod  *corev1.Pod
		node *corev1.Node
		want Result
	}{
		"no pressure":            {pod: bestEffort, node: node(), want: admitted},
		"no Node known yet":      {pod: bestEffort, node: nil, want: admitted},
		"disk pressure: refused": {pod: burstable, node: node(corev1.NodeDiskPressure), want: evicted("The node had condition: [DiskPressure]. ")},
		"PID pressure: refused":  {pod: burstable, node: node(corev1.NodePIDPressure), want: evicted("The node had condition: [PIDPressure]. ")},
		"memory pressure: a BestEffort pod is refused": {
			pod: bestEffort, node: node(corev1.NodeMemoryPressure), want: evicted("The node had condition: [MemoryPressure]. "),
		},
		"memory pressure: a Burstable pod comes in":                    {pod: burstable, node: node(corev1.NodeMemoryPressure), want: admitted},
		"memory pressure: a BestEffort pod that tolerates it comes in": {pod: tolerant, node: node(corev1.NodeMemoryPressure), want: admitted},
		"memory and disk pressure: even a Burstable pod is refused": {
			pod: burstable, node: node(corev1.NodeMemoryPressure, corev1.NodeDiskPressure), want: evicted("The node had condition: [MemoryPressure DiskPressure]. "),
		},
		"a critical pod comes in under any pressure": {
			pod: critical, node: node(corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure), want: admitted,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, admitUnderPressure(tc.pod, tc.node)); diff != "" {
				t.Errorf("admitUnderPressure (-want +got):\n%s", diff)
			}
		})
	}
}
