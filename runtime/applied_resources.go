package runtime

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// appliedResources reads what the runtime reports it applied; nil when it
// reports nothing (as some runtimes do).
func appliedResources(reported *runtimeapi.ContainerResources) *kubecontainer.AppliedResources {
	linux := reported.GetLinux()
	if linux == nil {
		return nil
	}
	var applied kubecontainer.AppliedResources
	if linux.CpuPeriod > 0 && linux.CpuQuota > 0 {
		if milli := linux.CpuQuota * 1000 / linux.CpuPeriod; milli > 0 {
			applied.CPULimit = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if linux.CpuShares >= cgroups.MinShares {
		milli := int64(math.Ceil(float64(linux.CpuShares*1000) / cgroups.SharesPerCPU))
		applied.CPURequest = resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	if linux.MemoryLimitInBytes > 0 {
		applied.MemoryLimit = resource.NewQuantity(linux.MemoryLimitInBytes, resource.BinarySI)
	}
	if applied == (kubecontainer.AppliedResources{}) {
		return nil
	}
	return &applied
}
