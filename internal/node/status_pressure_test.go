package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Pure test: the pressure conditions as the eviction manager reports them.

func TestPressureCondition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pressure []corev1.NodeConditionType
		cond     corev1.NodeConditionType
		status   corev1.ConditionStatus
		reason   string
		message  string
	}{
		{name: "no memory pressure", cond: corev1.NodeMemoryPressure, status: corev1.ConditionFalse, reason: "KubeletHasSufficientMemory", message: "kubelet has sufficient memory available"},
		{name: "memory pressure", pressure: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, cond: corev1.NodeMemoryPressure, status: corev1.ConditionTrue, reason: "KubeletHasInsufficientMemory", message: "kubelet has insufficient memory available"},
		{name: "disk pressure", pressure: []corev1.NodeConditionType{corev1.NodeDiskPressure}, cond: corev1.NodeDiskPressure, status: corev1.ConditionTrue, reason: "KubeletHasDiskPressure", message: "kubelet has disk pressure"},
		{name: "memory pressure is not disk pressure", pressure: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, cond: corev1.NodeDiskPressure, status: corev1.ConditionFalse, reason: "KubeletHasNoDiskPressure", message: "kubelet has no disk pressure"},
		{name: "PID pressure", pressure: []corev1.NodeConditionType{corev1.NodePIDPressure}, cond: corev1.NodePIDPressure, status: corev1.ConditionTrue, reason: "KubeletHasInsufficientPID", message: "kubelet has insufficient PID available"},
		{name: "no PID pressure", cond: corev1.NodePIDPressure, status: corev1.ConditionFalse, reason: "KubeletHasSufficientPID", message: "kubelet has sufficient PID available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pressureCondition(tc.pressure, tc.cond)
			if got.Type != tc.cond || got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.message {
				t.Errorf("pressureCondition() = %+v, want %s %s %s %q", got, tc.cond, tc.status, tc.reason, tc.message)
			}
		})
	}
}
