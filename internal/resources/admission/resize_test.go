package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAdmitResize(t *testing.T) {
	admitter, err := New(Node{OS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	// The running pod asks 500m and 1Gi; the node (2 CPUs, 4Gi) also runs
	// a pod allocated 1 CPU and 2Gi.
	running := func() *corev1.Pod {
		p := podAsking("running", "cpu", "500m", "memory", "1Gi")
		p.UID = "running"
		return p
	}
	other := podAsking("other", "cpu", "1", "memory", "2Gi")
	other.UID = "other"
	accepted := ResizeResult{Accepted: true}
	tests := map[string]struct {
		desired func(*corev1.Pod)
		others  []*corev1.Pod
		want    ResizeResult
	}{
		"a decrease is accepted": {
			desired: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("cpu", "100m", "memory", "512Mi") },
			others:  []*corev1.Pod{other},
			want:    accepted,
		},
		"an increase that fits beside the others' allocations is accepted": {
			desired: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("cpu", "1", "memory", "2Gi") },
			others:  []*corev1.Pod{other},
			want:    accepted,
		},
		"the pod's own allocation is not counted against it": {
			desired: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("cpu", "1", "memory", "2Gi") },
			others:  []*corev1.Pod{other, running()},
			want:    accepted,
		},
		"an increase the others' allocations leave no room for is deferred, with the kubelet's words": {
			desired: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("cpu", "1500m", "memory", "1Gi") },
			others:  []*corev1.Pod{other},
			want:    deferred(Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}),
		},
		"requests above the node's allocatable are deferred, as the kubelet v1.36 defers them": {
			desired: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = requests("cpu", "1", "memory", "8Gi") },
			want:    deferred(Result{Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory, requested: 8589934592, used: 0, capacity: 4294967296"}),
		},
		"a resize of pod-level resources is infeasible": {
			desired: func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			},
			want: infeasible("InPlacePodLevelResourcesVerticalScaling is disabled"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			allocated := running()
			desired := running()
			tc.desired(desired)
			got := admitter.AdmitResize(desired, allocated, roomyNode(), tc.others)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AdmitResize (-want +got):\n%s", diff)
			}
		})
	}
}
