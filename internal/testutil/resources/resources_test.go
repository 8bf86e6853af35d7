package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestList(t *testing.T) {
	if got := List(""); got != nil {
		t.Errorf(`List("") = %v, want nil`, got)
	}
	got := List("cpu=100m,memory=64Mi")
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	if len(got) != len(want) || !got.Cpu().Equal(*want.Cpu()) || !got.Memory().Equal(*want.Memory()) {
		t.Errorf("List = %v, want %v", got, want)
	}
	r := Requirements("cpu=1", "")
	if r.Limits != nil || r.Requests.Cpu().MilliValue() != 1000 {
		t.Errorf(`Requirements("cpu=1", "") = %+v, want 1 CPU requested, no limits`, r)
	}
}
