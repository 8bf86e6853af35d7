package cgroups

// The limits of pod, QoS and node cgroups, as pure functions of the pods and
// of the node's allocatable resources, with the kubelet's formulas.

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// The CPU constants of the kubelet's cgroup mapping.
const (
	// MinShares is the least cpu.shares, the kernel's minimum; what a pod
	// that asks for no CPU gets, rather than the kernel's default of 1024.
	MinShares = 2
	// MaxShares is the kernel's largest cpu.shares.
	MaxShares = 262144
	// SharesPerCPU is the cpu.shares of one CPU.
	SharesPerCPU = 1024
	// QuotaPeriod is the CFS period, in microseconds.
	QuotaPeriod = 100000
	// MinQuotaPeriod is the least CFS quota the kernel takes, in
	// microseconds.
	MinQuotaPeriod = 1000
	// maxWeight is cgroup2's largest cpu.weight.
	maxWeight = 10000
)

// ResourcePIDs is the node-allocatable resource that limits the number of
// processes, as the kubelet names it.
const ResourcePIDs corev1.ResourceName = "pid"

// ResourceConfig is what a cgroup is limited to; nil fields are left as the
// kernel has them.
type ResourceConfig struct {
	CPUShares *uint64
	CPUQuota  *int64
	CPUPeriod *uint64
	// Memory is the memory limit in bytes.
	Memory    *int64
	PidsLimit *int64
	// HugePageLimit maps a huge page size in bytes to a limit in bytes.
	HugePageLimit map[int64]int64
}

// MilliCPUToShares converts a CPU request to cpu.shares.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / 1000
	return uint64(min(max(shares, MinShares), MaxShares))
}

// MilliCPUToQuota converts a CPU limit to a CFS quota over period; zero,
// no limit, stays zero.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, MinQuotaPeriod)
}

// CPUSharesToWeight maps cgroup v1's cpu.shares, [2, 262144], onto
// cgroup2's cpu.weight, [1, 10000], linearly, as the kubelet does for the
// cgroups it writes itself.
func CPUSharesToWeight(shares uint64) uint64 {
	if shares >= MaxShares {
		return maxWeight
	}
	shares = max(shares, MinShares)
	return 1 + (shares-MinShares)*(maxWeight-1)/(MaxShares-MinShares)
}

// ResourceConfigForPod is the pod cgroup's limits. CPU shares follow the
// pod's requests (init containers and sidecars counted as the scheduler
// counts them, overhead added, pod-level resources first when set). The
// CPU quota and the memory limit are set only when every container limits
// that resource (or the pod does): a Burstable pod with one unlimited
// container is not limited. A BestEffort pod gets the least shares.
// podPidsLimit above zero limits the processes.
func ResourceConfigForPod(pod *corev1.Pod, podPidsLimit int64) *ResourceConfig {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuLimitsDeclared, memoryLimitsDeclared := true, true
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			if containers[i].Resources.Limits.Cpu().IsZero() {
				cpuLimitsDeclared = false
			}
			if containers[i].Resources.Limits.Memory().IsZero() {
				memoryLimitsDeclared = false
			}
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuLimitsDeclared = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memoryLimitsDeclared = true
		}
	}

	shares := MilliCPUToShares(requests.Cpu().MilliValue())
	quota := MilliCPUToQuota(limits.Cpu().MilliValue(), QuotaPeriod)
	period := uint64(QuotaPeriod)
	memory := limits.Memory().Value()

	config := &ResourceConfig{HugePageLimit: HugePageLimits(requests)}
	switch podutil.PodQOS(pod) {
	case corev1.PodQOSGuaranteed:
		config.CPUShares, config.CPUQuota, config.CPUPeriod, config.Memory = &shares, &quota, &period, &memory
	case corev1.PodQOSBurstable:
		config.CPUShares = &shares
		if cpuLimitsDeclared {
			config.CPUQuota, config.CPUPeriod = &quota, &period
		}
		if memoryLimitsDeclared {
			config.Memory = &memory
		}
	default:
		minShares := uint64(MinShares)
		config.CPUShares = &minShares
	}
	if podPidsLimit > 0 {
		config.PidsLimit = &podPidsLimit
	}
	return config
}

// HugePageLimits maps each huge page size in list (hugepages-2Mi) to its
// amount in bytes.
func HugePageLimits(list corev1.ResourceList) map[int64]int64 {
	limits := map[int64]int64{}
	for name, amount := range list {
		size, ok := hugePageSize(name)
		if !ok {
			continue
		}
		limits[size] = amount.Value()
	}
	return limits
}

func hugePageSize(name corev1.ResourceName) (int64, bool) {
	s, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, false
	}
	return q.Value(), true
}

// BurstableCPUMilli is the CPU the pod adds to the Burstable tier's
// shares: its request if it is Burstable, else nothing.
func BurstableCPUMilli(pod *corev1.Pod) int64 {
	if podutil.PodQOS(pod) != corev1.PodQOSBurstable {
		return 0
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return requests.Cpu().MilliValue()
}

// NodeAllocatableConfig is the limits of the cgroup all pods share
// (kubepods): CPU shares for the allocatable CPU, the allocatable memory,
// processes and huge pages (those it names; without any, huge pages are
// left as they are).
func NodeAllocatableConfig(allocatable corev1.ResourceList) *ResourceConfig {
	config := &ResourceConfig{}
	if hugePages := HugePageLimits(allocatable); len(hugePages) > 0 {
		config.HugePageLimit = hugePages
	}
	if q, ok := allocatable[corev1.ResourceCPU]; ok {
		shares := MilliCPUToShares(q.MilliValue())
		config.CPUShares = &shares
	}
	if q, ok := allocatable[corev1.ResourceMemory]; ok {
		memory := q.Value()
		config.Memory = &memory
	}
	if q, ok := allocatable[ResourcePIDs]; ok {
		pids := q.Value()
		config.PidsLimit = &pids
	}
	return config
}

// HugePageSizeName is how cgroup file names (and CRI) spell a huge page size: 2MB,
// 1GB, 64KB.
func HugePageSizeName(size int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return strconv.FormatInt(size, 10) + units[i]
}
