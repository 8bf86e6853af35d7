package runtime

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestAppliedResourcesTurnCgroupSettingsBackIntoQuantities(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := []struct {
		name     string
		reported *runtimeapi.ContainerResources
		want     *kubecontainer.AppliedResources
	}{
		{name: "nothing reported", reported: nil, want: nil},
		{name: "no Linux part", reported: &runtimeapi.ContainerResources{}, want: nil},
		{name: "no quota, minimal shares (BestEffort)",
			reported: &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: -1, CpuShares: 2}},
			want:     &kubecontainer.AppliedResources{CPURequest: q("2m")}},
		{name: "quota, shares and memory",
			reported: &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{
				CpuPeriod: 100000, CpuQuota: 50000, CpuShares: 102, MemoryLimitInBytes: 128 << 20}},
			want: &kubecontainer.AppliedResources{CPULimit: q("500m"), CPURequest: q("100m"), MemoryLimit: q("128Mi")}},
		{name: "shares below the kernel's minimum say nothing",
			reported: &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpuShares: 1}},
			want:     nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appliedResources(tt.reported)
			if (got == nil) != (tt.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if got == nil {
				return
			}
			for _, f := range []struct {
				name      string
				got, want *resource.Quantity
			}{{"CPULimit", got.CPULimit, tt.want.CPULimit}, {"CPURequest", got.CPURequest, tt.want.CPURequest}, {"MemoryLimit", got.MemoryLimit, tt.want.MemoryLimit}} {
				if (f.got == nil) != (f.want == nil) || (f.got != nil && f.got.Cmp(*f.want) != 0) {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
		})
	}
}
