package cgroups

// The limits are pure functions of pods and resource lists: tables, no
// fakes.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/resources"
)

func TestMilliCPUToShares(t *testing.T) {
	for milli, want := range map[int64]uint64{0: 2, 1: 2, 2: 2, 100: 102, 250: 256, 1000: 1024, 1500: 1536, 256000: 262144, 1000000: 262144} {
		if got := MilliCPUToShares(milli); got != want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", milli, got, want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for milli, want := range map[int64]int64{0: 0, 1: 1000, 10: 1000, 100: 10000, 250: 25000, 1000: 100000, 2500: 250000} {
		if got := MilliCPUToQuota(milli, QuotaPeriod); got != want {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", milli, got, want)
		}
	}
}

func TestCPUSharesToWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{0: 1, 2: 1, 1024: 39, 102: 4, 262143: 9999, 262144: 10000, 300000: 10000} {
		if got := CPUSharesToWeight(shares); got != want {
			t.Errorf("CPUSharesToWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func container(name, requests, limits string) corev1.Container {
	return corev1.Container{Name: name, Resources: resources.Requirements(requests, limits)}
}

func TestResourceConfigForPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(c corev1.Container) corev1.Container { c.RestartPolicy = &always; return c }
	shares := func(v uint64) *uint64 { return &v }
	period := ptr.To[uint64](QuotaPeriod)
	noHugePages := map[int64]int64{}
	tests := map[string]struct {
		spec      corev1.PodSpec
		pidsLimit int64
		want      ResourceConfig
	}{
		"BestEffort gets the least shares and nothing else": {
			spec: corev1.PodSpec{Containers: []corev1.Container{container("a", "", "")}},
			want: ResourceConfig{CPUShares: shares(2), HugePageLimit: noHugePages},
		},
		"Guaranteed gets shares, quota and memory from its containers' sum": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a", "cpu=250m,memory=64Mi", "cpu=250m,memory=64Mi"),
				container("b", "cpu=250m,memory=64Mi", "cpu=250m,memory=64Mi"),
			}},
			want: ResourceConfig{CPUShares: shares(512), CPUQuota: ptr.To[int64](50000), CPUPeriod: period, Memory: ptr.To[int64](128 << 20), HugePageLimit: noHugePages},
		},
		"Burstable with every container limited gets quota and memory": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a", "cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi"),
				container("b", "", "cpu=300m,memory=64Mi"),
			}},
			want: ResourceConfig{CPUShares: shares(102), CPUQuota: ptr.To[int64](50000), CPUPeriod: period, Memory: ptr.To[int64](128 << 20), HugePageLimit: noHugePages},
		},
		"Burstable with one container unlimited in memory gets no memory limit": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a", "cpu=100m", "cpu=200m,memory=64Mi"),
				container("b", "", "cpu=300m"),
			}},
			want: ResourceConfig{CPUShares: shares(102), CPUQuota: ptr.To[int64](50000), CPUPeriod: period, HugePageLimit: noHugePages},
		},
		"an init container without limits lifts the pod's": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", "cpu=500m", "")},
				Containers:     []corev1.Container{container("a", "cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi")},
			},
			want: ResourceConfig{CPUShares: shares(512), HugePageLimit: noHugePages},
		},
		"an init container asking more than the containers sets the requests and limits": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", "cpu=1,memory=256Mi", "cpu=1,memory=256Mi")},
				Containers:     []corev1.Container{container("a", "cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi")},
			},
			want: ResourceConfig{CPUShares: shares(1024), CPUQuota: ptr.To[int64](100000), CPUPeriod: period, Memory: ptr.To[int64](256 << 20), HugePageLimit: noHugePages},
		},
		"a sidecar adds to the containers it runs beside": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar(container("proxy", "cpu=100m,memory=32Mi", "cpu=100m,memory=32Mi"))},
				Containers:     []corev1.Container{container("a", "cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi")},
			},
			want: ResourceConfig{CPUShares: shares(204), CPUQuota: ptr.To[int64](30000), CPUPeriod: period, Memory: ptr.To[int64](96 << 20), HugePageLimit: noHugePages},
		},
		"overhead is added": {
			spec: corev1.PodSpec{
				Overhead:   resources.List("cpu=250m,memory=120Mi"),
				Containers: []corev1.Container{container("a", "cpu=250m,memory=8Mi", "cpu=250m,memory=8Mi")},
			},
			want: ResourceConfig{CPUShares: shares(512), CPUQuota: ptr.To[int64](50000), CPUPeriod: period, Memory: ptr.To[int64](128 << 20), HugePageLimit: noHugePages},
		},
		"pod-level resources win over the containers'": {
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: resources.List("cpu=1,memory=1Gi"), Limits: resources.List("cpu=2,memory=2Gi")},
				Containers: []corev1.Container{container("a", "", "")},
			},
			want: ResourceConfig{CPUShares: shares(1024), CPUQuota: ptr.To[int64](200000), CPUPeriod: period, Memory: ptr.To[int64](2 << 30), HugePageLimit: noHugePages},
		},
		"huge pages and the pids limit": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a", "cpu=1,memory=1Gi,hugepages-2Mi=4Mi", "cpu=1,memory=1Gi,hugepages-2Mi=4Mi"),
			}},
			pidsLimit: 1024,
			want: ResourceConfig{CPUShares: shares(1024), CPUQuota: ptr.To[int64](100000), CPUPeriod: period, Memory: ptr.To[int64](1 << 30),
				PidsLimit: ptr.To[int64](1024), HugePageLimit: map[int64]int64{2 << 20: 4 << 20}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := ResourceConfigForPod(&corev1.Pod{Spec: tt.spec}, tt.pidsLimit)
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("ResourceConfigForPod() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBurstableCPUMilli(t *testing.T) {
	tests := map[string]struct {
		containers []corev1.Container
		want       int64
	}{
		"a Burstable pod counts its request": {containers: []corev1.Container{container("a", "cpu=300m", "")}, want: 300},
		"a Guaranteed pod does not count":    {containers: []corev1.Container{container("a", "cpu=1,memory=1Gi", "cpu=1,memory=1Gi")}},
		"a BestEffort pod does not count":    {containers: []corev1.Container{container("a", "", "")}},
	}
	for name, tt := range tests {
		if got := BurstableCPUMilli(&corev1.Pod{Spec: corev1.PodSpec{Containers: tt.containers}}); got != tt.want {
			t.Errorf("%s: BurstableCPUMilli() = %d, want %d", name, got, tt.want)
		}
	}
}

func TestNodeAllocatableConfig(t *testing.T) {
	got := NodeAllocatableConfig(resources.List("cpu=1500m,memory=3Gi,pid=4096,hugepages-1Gi=2Gi"))
	want := &ResourceConfig{CPUShares: ptr.To[uint64](1536), Memory: ptr.To[int64](3 << 30), PidsLimit: ptr.To[int64](4096), HugePageLimit: map[int64]int64{1 << 30: 2 << 30}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NodeAllocatableConfig() mismatch (-want +got):\n%s", diff)
	}
	if got := NodeAllocatableConfig(resources.List("cpu=2")); got.HugePageLimit != nil || got.Memory != nil {
		t.Errorf("NodeAllocatableConfig(cpu only) = %+v, want only shares", got)
	}
}

func TestConfigFiles(t *testing.T) {
	config := &ResourceConfig{
		CPUShares: ptr.To[uint64](1024), CPUQuota: ptr.To[int64](50000), CPUPeriod: ptr.To[uint64](QuotaPeriod),
		Memory: ptr.To[int64](64 << 20), PidsLimit: ptr.To[int64](100), HugePageLimit: map[int64]int64{2 << 20: 4 << 20},
	}
	sizes := []int64{2 << 20, 1 << 30}
	tests := map[string]struct {
		h      Hierarchy
		config *ResourceConfig
		want   []cgroupFile
	}{
		"v1 cpu": {h: Hierarchy{Controllers: []string{"cpu", "cpuacct"}}, config: config,
			want: []cgroupFile{{"cpu.shares", "1024"}, {"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "50000"}}},
		"v1 memory":                         {h: Hierarchy{Controllers: []string{"memory"}}, config: config, want: []cgroupFile{{"memory.limit_in_bytes", "67108864"}}},
		"v1 pids":                           {h: Hierarchy{Controllers: []string{"pids"}}, config: config, want: []cgroupFile{{"pids.max", "100"}}},
		"v1 hugetlb":                        {h: Hierarchy{Controllers: []string{"hugetlb"}}, config: config, want: []cgroupFile{{"hugetlb.2MB.limit_in_bytes", "4194304"}, {"hugetlb.1GB.limit_in_bytes", "0"}}},
		"v1 without the controllers":        {h: Hierarchy{Controllers: []string{"name=systemd"}}, config: config},
		"hybrid unified has no controllers": {h: Hierarchy{Unified: true}, config: config},
		"v2": {h: Hierarchy{Unified: true, Controllers: []string{"cpu", "memory", "pids", "hugetlb"}}, config: config,
			want: []cgroupFile{{"cpu.weight", "39"}, {"cpu.max", "50000 100000"}, {"memory.max", "67108864"}, {"pids.max", "100"},
				{"hugetlb.2MB.max", "4194304"}, {"hugetlb.1GB.max", "0"}}},
		"v2 shares only": {h: Hierarchy{Unified: true, Controllers: []string{"cpu", "memory"}}, config: &ResourceConfig{CPUShares: ptr.To[uint64](2)},
			want: []cgroupFile{{"cpu.weight", "1"}}},
		"v2 period without quota is unlimited": {h: Hierarchy{Unified: true, Controllers: []string{"cpu"}}, config: &ResourceConfig{CPUPeriod: ptr.To[uint64](QuotaPeriod)},
			want: []cgroupFile{{"cpu.max", "max 100000"}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := configFiles(tt.h, tt.config, sizes)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(cgroupFile{})); diff != "" {
				t.Errorf("configFiles() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
