package runtime

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// AppliedResources are the compute resources the runtime says a container
// runs with (CRI ContainerStatus.resources), turned back into the Pod
// API's units as the kubelet does; a field is nil when the runtime set no
// such limit.
type AppliedResources struct {
	// CPULimit comes from the CFS quota over its period.
	CPULimit *resource.Quantity
	// CPURequest comes from the CPU shares.
	CPURequest *resource.Quantity
	// MemoryLimit is the memory limit in bytes.
	MemoryLimit *resource.Quantity
}

// The smallest CPU limit a CFS quota expresses (the least quota over
// its period) and the CPU request at which shares bottom out: the
// kubelet shows the spec's value rather than these when both the spec and
// the runtime are at or below them.
const (
	MinMilliCPULimit   = cgroups.MinQuotaPeriod * 1000 / cgroups.QuotaPeriod
	MinMilliCPURequest = cgroups.MinShares
)

// appliedResources reads what the runtime reports it applied; nil when it
// reports nothing (as some runtimes do).
func appliedResources(reported *runtimeapi.ContainerResources) *AppliedResources {
	linux := reported.GetLinux()
	if linux == nil {
		return nil
	}
	var applied AppliedResources
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
	if applied == (AppliedResources{}) {
		return nil
	}
	return &applied
}
