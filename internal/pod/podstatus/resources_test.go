package podstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestStatusResourcesReportWhatTheRuntimeApplied(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	list := func(cpu, memory string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = *q(cpu)
		}
		if memory != "" {
			l[corev1.ResourceMemory] = *q(memory)
		}
		return l
	}
	burstable := corev1.ResourceRequirements{Requests: list("100m", "64Mi"), Limits: list("500m", "128Mi")}
	tests := []struct {
		name    string
		spec    corev1.ResourceRequirements
		state   kubecontainer.ContainerState
		applied *kubecontainer.AppliedResources
		want    corev1.ResourceRequirements
	}{
		{name: "the runtime applied the spec", spec: burstable, state: kubecontainer.ContainerRunning,
			applied: &kubecontainer.AppliedResources{CPULimit: q("500m"), CPURequest: q("100m"), MemoryLimit: q("128Mi")},
			want:    burstable},
		{name: "the runtime runs it with other limits", spec: burstable, state: kubecontainer.ContainerRunning,
			applied: &kubecontainer.AppliedResources{CPULimit: q("250m"), CPURequest: q("200m"), MemoryLimit: q("256Mi")},
			want:    corev1.ResourceRequirements{Requests: list("200m", "64Mi"), Limits: list("250m", "256Mi")}},
		{name: "not running: the spec", spec: burstable, state: kubecontainer.ContainerExited,
			applied: &kubecontainer.AppliedResources{CPULimit: q("250m"), MemoryLimit: q("256Mi")},
			want:    burstable},
		{name: "nothing reported: the spec", spec: burstable, state: kubecontainer.ContainerRunning, want: burstable},
		{name: "BestEffort stays empty", state: kubecontainer.ContainerRunning,
			applied: &kubecontainer.AppliedResources{CPURequest: q("2m")}, want: corev1.ResourceRequirements{}},
		{name: "a CPU limit below what a quota expresses keeps the spec's", spec: corev1.ResourceRequirements{Limits: list("1m", "")},
			state: kubecontainer.ContainerRunning, applied: &kubecontainer.AppliedResources{CPULimit: q("10m")},
			want: corev1.ResourceRequirements{Limits: list("1m", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			container := &corev1.Container{Name: "app", Resources: tt.spec}
			got := statusResources(container, &kubecontainer.ContainerStatus{State: tt.state, Resources: tt.applied})
			if !equality.Semantic.DeepEqual(*got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
