package runtime

// The cgroup settings of one container, as the kubelet computes them for
// the CRI's LinuxContainerResources.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// OOM score adjustments of the kubelet's QoS policy.
const (
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
)

// hostResources are the host's facts a container's resources depend on.
type hostResources struct {
	// memoryCapacity is the node's memory in bytes, which ranks Burstable
	// containers for the OOM killer; zero when unknown.
	memoryCapacity int64
	// cgroupV2 is true on the unified hierarchy alone.
	cgroupV2 bool
	// swapController is true when the kernel accounts swap per cgroup, so
	// that a cgroup's swap can be limited.
	swapController bool
	// hugePageSizes are the huge page sizes the host has, as CRI spells
	// them (2MB, 1GB).
	hugePageSizes []string
}

// containerResources computes the cgroup settings of a container as the
// kubelet does: CPU shares from the request (the limit when there is no
// request), a CFS quota from the CPU limit, the memory limit (the pod's
// own limits standing in for the ones a container leaves out), huge page
// limits (every size the host has, zero unless asked), no swap, on cgroup
// v2 the whole container killed on OOM, and an OOM score adjustment by QoS
// class.
func containerResources(pod *corev1.Pod, container *corev1.Container, host hostResources) *runtimeapi.LinuxContainerResources {
	cpuRequest, hasRequest := container.Resources.Requests[corev1.ResourceCPU]
	cpuLimit, memoryLimit := container.Resources.Limits.Cpu(), container.Resources.Limits.Memory()
	podLevel := resourcehelper.IsPodLevelResourcesSet(pod)
	if podLevel && cpuLimit.IsZero() {
		cpuLimit = pod.Spec.Resources.Limits.Cpu()
	}
	if podLevel && memoryLimit.IsZero() {
		memoryLimit = pod.Spec.Resources.Limits.Memory()
	}
	shares := cgroups.MilliCPUToShares(cpuRequest.MilliValue())
	if !hasRequest {
		shares = cgroups.MilliCPUToShares(cpuLimit.MilliValue())
	}
	resources := &runtimeapi.LinuxContainerResources{
		CpuShares:          int64(shares),
		CpuPeriod:          cgroups.QuotaPeriod,
		CpuQuota:           cgroups.MilliCPUToQuota(cpuLimit.MilliValue(), cgroups.QuotaPeriod),
		MemoryLimitInBytes: memoryLimit.Value(),
		OomScoreAdj:        oomScoreAdj(pod, container, host.memoryCapacity),
		HugepageLimits:     hugePageLimits(pod, container, podLevel, host.hugePageSizes),
	}
	if host.cgroupV2 {
		// One process killed leaves the others of a container that cannot
		// work without it.
		resources.Unified = map[string]string{"memory.oom.group": "1"}
	}
	// No swap: the kubelet's NoSwap behaviour. cgroup v1 limits memory
	// and swap together, so that sum is the memory limit; v2 limits swap
	// itself.
	switch {
	case !host.swapController:
	case host.cgroupV2:
		if resources.Unified == nil {
			resources.Unified = map[string]string{}
		}
		resources.Unified["memory.swap.max"] = "0"
	default:
		resources.MemorySwapLimitInBytes = resources.MemoryLimitInBytes
	}
	return resources
}

// hugePageLimits limits every huge page size to what the container (else
// the pod, with pod-level resources) asks, zero when it asks none.
func hugePageLimits(pod *corev1.Pod, container *corev1.Container, podLevel bool, sizes []string) []*runtimeapi.HugepageLimit {
	asked := map[string]uint64{}
	add := func(list corev1.ResourceList) {
		for size, limit := range cgroups.HugePageLimits(list) {
			asked[cgroups.HugePageSizeName(size)] = uint64(limit)
		}
	}
	if podLevel {
		add(pod.Spec.Resources.Limits)
	}
	add(container.Resources.Limits)
	limits := make([]*runtimeapi.HugepageLimit, 0, len(sizes))
	for _, size := range sizes {
		limits = append(limits, &runtimeapi.HugepageLimit{PageSize: size, Limit: asked[size]})
	}
	return limits
}

// oomScoreAdj ranks containers for the OOM killer: node-critical and
// Guaranteed last, BestEffort first, Burstable in between by the share of
// the node's memory they request (with pod-level requests, the part no
// container claims shared out among them all). A sidecar ranks no higher
// than the regular container least likely to be killed, so that it is not
// killed before the containers it serves.
func oomScoreAdj(pod *corev1.Pod, container *corev1.Container, memoryCapacity int64) int64 {
	if podutil.IsNodeCritical(pod) {
		return guaranteedOOMScoreAdj
	}
	switch podutil.PodQOS(pod) {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return bestEffortOOMScoreAdj - 1
	}
	var unclaimed int64
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		unclaimed = unclaimedPodMemoryPerContainer(pod)
	}
	adj := 1000 - 1000*(container.Resources.Requests.Memory().Value()+unclaimed)/memoryCapacity
	if isSidecar(pod, container) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for _, c := range pod.Spec.Containers[1:] {
			least = min(least, c.Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*(least+unclaimed)/memoryCapacity)
	}
	// Below a Guaranteed container using all of the node's memory would
	// rank a Burstable one above Guaranteed ones.
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	// Burstable always ranks above BestEffort.
	if adj == bestEffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

// unclaimedPodMemoryPerContainer is the pod-level memory request that no
// container's request covers, divided among all the containers.
func unclaimedPodMemoryPerContainer(pod *corev1.Pod) int64 {
	podRequest := pod.Spec.Resources.Requests.Memory().Value()
	if podRequest == 0 {
		return 0
	}
	containers := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return (podRequest - containers.Memory().Value()) / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
}

// isSidecar reports whether container is one of the pod's init containers
// that runs beside the others.
func isSidecar(pod *corev1.Pod, container *corev1.Container) bool {
	if !podutil.IsSidecar(container) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == container.Name {
			return true
		}
	}
	return false
}

// hostResourcesOnce reads the host's facts once.
var hostResourcesOnce = sync.OnceValue(func() hostResources {
	host := hostResources{memoryCapacity: readMemTotal()}
	var fs unix.Statfs_t
	host.cgroupV2 = unix.Statfs("/sys/fs/cgroup", &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC
	if host.cgroupV2 {
		// The root cgroup has no memory.swap.max; nodelet's own cgroup
		// shows whether the controller accounts swap.
		host.swapController = fileExists(filepath.Join("/sys/fs/cgroup", ownCgroupV2(), "memory.swap.max"))
	} else {
		host.swapController = fileExists("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	}
	for _, size := range cgroups.HostHugePageSizes() {
		host.hugePageSizes = append(host.hugePageSizes, cgroups.HugePageSizeName(size))
	}
	return host
})

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ownCgroupV2 is this process's cgroup in the unified hierarchy.
func ownCgroupV2() string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "/"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if cgroup, ok := strings.CutPrefix(line, "0::"); ok {
			return cgroup
		}
	}
	return "/"
}

// readMemTotal is the node's memory in bytes; zero when unknown.
func readMemTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kib * 1024
		}
	}
	return 0
}
