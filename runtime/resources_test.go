package runtime

// containerResources is pure over the pod and the host's facts
// (hostResources): tables, no fakes.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestContainerResources(t *testing.T) {
	const capacity = 8 << 30 // 8 GiB
	resources := func(requests, limits corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
		}}}}
	}
	list := func(cpu, memory string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			l[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return l
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		want *runtimeapi.LinuxContainerResources
	}{
		"BestEffort gets the least CPU weight and dies first": {
			pod:  resources(nil, nil),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
		},
		"Burstable ranks by the share of memory it requests": {
			pod: resources(list("250m", "2Gi"), list("1", "4Gi")),
			want: &runtimeapi.LinuxContainerResources{
				CpuShares: 256, CpuPeriod: 100000, CpuQuota: 100000,
				MemoryLimitInBytes: 4 << 30, OomScoreAdj: 750,
			},
		},
		"a CPU limit without a request weighs as the limit": {
			pod:  resources(nil, list("2", "")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuPeriod: 100000, CpuQuota: 200000, OomScoreAdj: 999},
		},
		"a tiny CPU limit gets the kernel's minimum quota": {
			pod:  resources(list("1m", ""), list("1m", "")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999},
		},
		"Burstable requesting almost all memory stays above Guaranteed": {
			pod:  resources(list("", "8Gi"), nil),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 3},
		},
		"Guaranteed dies last": {
			pod: resources(list("2", "1Gi"), list("2", "1Gi")),
			want: &runtimeapi.LinuxContainerResources{
				CpuShares: 2048, CpuPeriod: 100000, CpuQuota: 200000,
				MemoryLimitInBytes: 1 << 30, OomScoreAdj: -997,
			},
		},
		"a node-critical pod dies last whatever its class": {
			pod: func() *corev1.Pod {
				p := resources(nil, nil)
				p.Spec.PriorityClassName = "system-node-critical"
				p.Spec.Priority = ptr.To[int32](2000001000)
				return p
			}(),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: -997},
		},
		"the API server's QoS class wins": {
			pod: func() *corev1.Pod {
				p := resources(nil, nil)
				p.Status.QOSClass = corev1.PodQOSGuaranteed
				return p
			}(),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: -997},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := containerResources(tc.pod, &tc.pod.Spec.Containers[0], hostResources{memoryCapacity: capacity})
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("containerResources() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerResourcesOnTheHost(t *testing.T) {
	const capacity = 8 << 30
	burstable := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			Limits: corev1.ResourceList{
				corev1.ResourceMemory:                    resource.MustParse("4Gi"),
				corev1.ResourceName("hugepages-2Mi"):     resource.MustParse("8Mi"),
				corev1.ResourceName("ephemeral-storage"): resource.MustParse("1Gi"),
			},
		},
	}}}}
	hugePages := []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 << 20}, {PageSize: "1GB"}}
	tests := map[string]struct {
		host hostResources
		want *runtimeapi.LinuxContainerResources
	}{
		"cgroup v1 without swap accounting leaves swap alone": {
			host: hostResources{memoryCapacity: capacity, hugePageSizes: []string{"2MB", "1GB"}},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 4 << 30, OomScoreAdj: 750, HugepageLimits: hugePages},
		},
		"cgroup v1 limits memory and swap together to the memory limit": {
			host: hostResources{memoryCapacity: capacity, swapController: true, hugePageSizes: []string{"2MB", "1GB"}},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 4 << 30, MemorySwapLimitInBytes: 4 << 30, OomScoreAdj: 750, HugepageLimits: hugePages},
		},
		"cgroup v2 kills the whole container on OOM and gives it no swap": {
			host: hostResources{memoryCapacity: capacity, cgroupV2: true, swapController: true, hugePageSizes: []string{"2MB", "1GB"}},
			want: &runtimeapi.LinuxContainerResources{
				CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 4 << 30, OomScoreAdj: 750, HugepageLimits: hugePages,
				Unified: map[string]string{"memory.oom.group": "1", "memory.swap.max": "0"},
			},
		},
		"cgroup v2 without swap accounting": {
			host: hostResources{memoryCapacity: capacity, cgroupV2: true},
			want: &runtimeapi.LinuxContainerResources{
				CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 4 << 30, OomScoreAdj: 750, HugepageLimits: []*runtimeapi.HugepageLimit{},
				Unified: map[string]string{"memory.oom.group": "1"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := containerResources(burstable, &burstable.Spec.Containers[0], tc.host)
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("containerResources() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerResourcesFromPodLevelResources(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"),
				corev1.ResourceName("hugepages-2Mi"): resource.MustParse("4Mi"),
			},
		},
		Containers: []corev1.Container{
			{Name: "bare"},
			{Name: "own", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}},
		},
	}}
	host := hostResources{memoryCapacity: 8 << 30, hugePageSizes: []string{"2MB"}}
	bare := containerResources(pod, &pod.Spec.Containers[0], host)
	if bare.CpuQuota != 200000 || bare.MemoryLimitInBytes != 2<<30 || bare.CpuShares != 2048 {
		t.Errorf("a container without limits: quota %d, memory %d, shares %d; want the pod's 200000, 2Gi and shares from the pod's CPU limit 2048",
			bare.CpuQuota, bare.MemoryLimitInBytes, bare.CpuShares)
	}
	if diff := cmp.Diff([]*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}}, bare.HugepageLimits, protocmp.Transform()); diff != "" {
		t.Errorf("huge pages of a container without limits (-want +got):\n%s", diff)
	}
	// 1Gi asked by the pod, none by its containers: 512Mi each.
	if bare.OomScoreAdj != 1000-1000*(512<<20)/(8<<30) {
		t.Errorf("OomScoreAdj = %d, want the pod's unclaimed request shared out: %d", bare.OomScoreAdj, 1000-1000*(512<<20)/(8<<30))
	}
	own := containerResources(pod, &pod.Spec.Containers[1], host)
	if own.MemoryLimitInBytes != 512<<20 || own.CpuQuota != 200000 {
		t.Errorf("a container with its own memory limit: memory %d, quota %d; want its own 512Mi and the pod's CPU limit", own.MemoryLimitInBytes, own.CpuQuota)
	}
}

func TestSidecarOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30
	always := corev1.ContainerRestartPolicyAlways
	memory := func(name, request string) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)}}}
	}
	small := memory("proxy", "100Mi")
	small.RestartPolicy = &always
	big := memory("cache", "5Gi")
	big.RestartPolicy = &always
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{small, big, memory("setup", "10Mi")},
		Containers:     []corev1.Container{memory("app", "1Gi"), memory("worker", "2Gi")},
	}}
	tests := map[string]struct {
		container *corev1.Container
		want      int64
	}{
		"a regular container ranks by its own request":                                            {container: &pod.Spec.Containers[0], want: 900},
		"a sidecar asking less than every regular container ranks as the least":                   {container: &pod.Spec.InitContainers[0], want: 900},
		"a sidecar asking more keeps its own, lower, score":                                       {container: &pod.Spec.InitContainers[1], want: 500},
		"an init container that is not a sidecar ranks by its own tiny request, above BestEffort": {container: &pod.Spec.InitContainers[2], want: 999},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := oomScoreAdj(pod, tc.container, capacity); got != tc.want {
				t.Errorf("oomScoreAdj() = %d, want %d", got, tc.want)
			}
		})
	}
}
