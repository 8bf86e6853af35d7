package node

// Pure tests: allocatable, the pods' cgroup limits and status.images from
// plain values, and nodeStatus putting them on the Node.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/resources/eviction"
)

func resources(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

func hardThresholds(t *testing.T, statements map[string]string) []eviction.Threshold {
	t.Helper()
	thresholds, err := eviction.ParseThresholdConfig([]string{eviction.EnforcePods}, statements, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return thresholds
}

func TestAllocatable(t *testing.T) {
	capacity := resources("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi", "pods", "110")
	for _, tc := range []struct {
		name     string
		config   AllocatableConfig
		capacity corev1.ResourceList
		want     corev1.ResourceList
	}{
		{
			name:   "nothing kept: allocatable is capacity",
			config: AllocatableConfig{},
			want:   capacity,
		},
		{
			name: "system-reserved, kube-reserved and the hard thresholds add up",
			config: AllocatableConfig{
				SystemReserved:         resources("cpu", "500m", "memory", "1Gi", "ephemeral-storage", "1Gi"),
				KubeReserved:           resources("cpu", "250m", "memory", "512Mi"),
				HardEvictionThresholds: hardThresholds(t, map[string]string{"memory.available": "100Mi", "nodefs.available": "25%", "imagefs.available": "15%"}),
			},
			want: resources("cpu", "3250m", "memory", "6556Mi", "ephemeral-storage", "74Gi", "pods", "110"),
		},
		{
			name:   "a reservation over capacity leaves zero",
			config: AllocatableConfig{SystemReserved: resources("cpu", "6", "pid", "1000")},
			want:   resources("cpu", "0", "memory", "8Gi", "ephemeral-storage", "100Gi", "pods", "110"),
		},
		{
			name:     "huge pages are taken from memory, and keep their capacity",
			config:   AllocatableConfig{KubeReserved: resources("memory", "1Gi")},
			capacity: resources("memory", "8Gi", "hugepages-2Mi", "2Gi", "example.com/dongle", "2"),
			want:     resources("memory", "5Gi", "hugepages-2Mi", "2Gi", "example.com/dongle", "2"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.capacity
			if c == nil {
				c = capacity
			}
			got := tc.config.Allocatable(c)
			if diff := cmp.Diff(tc.want, got, nodeQuantityEqual); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRefusesReservationsOverCapacity(t *testing.T) {
	capacity := resources("cpu", "2", "memory", "1Gi")
	ok := AllocatableConfig{SystemReserved: resources("cpu", "1"), KubeReserved: resources("cpu", "1")}
	if err := ok.Validate(capacity); err != nil {
		t.Errorf("a reservation equal to the capacity: %v", err)
	}
	over := AllocatableConfig{SystemReserved: resources("memory", "512Mi"), HardEvictionThresholds: hardThresholds(t, map[string]string{"memory.available": "600Mi"})}
	want := `invalid Node Allocatable configuration. Resource "memory" has a reservation of 1112Mi but capacity of 1Gi. Expected capacity >= reservation.`
	if err := over.Validate(capacity); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestPodsCgroupLimits(t *testing.T) {
	capacity := resources("cpu", "4", "memory", "8Gi", "pid", "4194304")
	reserved := AllocatableConfig{
		SystemReserved:         resources("cpu", "1", "memory", "1Gi", "pid", "1000"),
		KubeReserved:           resources("memory", "512Mi"),
		HardEvictionThresholds: hardThresholds(t, map[string]string{"memory.available": "100Mi"}),
	}
	for _, tc := range []struct {
		name    string
		enforce []string
		want    corev1.ResourceList
	}{
		{
			name:    "pods enforced: capacity less the reservations, not the eviction thresholds",
			enforce: []string{eviction.EnforcePods},
			want:    resources("cpu", "3", "memory", "6656Mi", "pid", "4193304"),
		},
		{
			name:    "not enforced: the capacity",
			enforce: []string{eviction.EnforceNone},
			want:    capacity,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := reserved
			config.EnforceNodeAllocatable = tc.enforce
			got := config.PodsCgroupLimits(capacity)
			if diff := cmp.Diff(tc.want, got, nodeQuantityEqual); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsCgroupCapacity(t *testing.T) {
	got := PodsCgroupCapacity(MachineInfo{MilliCPUs: 4000, MemoryBytes: 8 << 30, EphemeralStorageBytes: 100 << 30, MaxPID: 32768})
	if diff := cmp.Diff(resources("cpu", "4", "memory", "8Gi", "pid", "32768"), got, nodeQuantityEqual); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if _, ok := PodsCgroupCapacity(MachineInfo{MilliCPUs: 1000, MemoryBytes: 1})[ResourcePID]; ok {
		t.Error("an unknown PID limit is in the capacity")
	}
}

func TestNodeImages(t *testing.T) {
	image := func(id string, size uint64, tags, digests []string) *runtimeapi.Image {
		return &runtimeapi.Image{Id: id, Size: size, RepoTags: tags, RepoDigests: digests}
	}
	got := nodeImages([]*runtimeapi.Image{
		image("sha256:small", 10, []string{"small:1"}, nil),
		image("sha256:big", 300, []string{"big:1", "big:latest"}, []string{"big@sha256:d"}),
		image("sha256:many", 200, []string{"m:1", "m:2", "m:3", "m:4"}, []string{"m@sha256:a", "m@sha256:b"}),
		image("sha256:tie-a", 10, nil, []string{"a@sha256:a"}),
	})
	want := []corev1.ContainerImage{
		{Names: []string{"big@sha256:d", "big:1", "big:latest"}, SizeBytes: 300},
		{Names: []string{"m@sha256:a", "m@sha256:b", "m:1", "m:2", "m:3"}, SizeBytes: 200},
		{Names: []string{"a@sha256:a"}, SizeBytes: 10},
		{Names: []string{"small:1"}, SizeBytes: 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}

	var many []*runtimeapi.Image
	for i := range 60 {
		many = append(many, image(string(rune('A'+i)), uint64(i), nil, nil))
	}
	if got := nodeImages(many); len(got) != 50 || got[0].SizeBytes != 59 || got[49].SizeBytes != 10 {
		t.Errorf("of 60 images, got %d from size %d to %d; want the 50 largest, 59 to 10", len(got), got[0].SizeBytes, got[len(got)-1].SizeBytes)
	}
}

func TestNodeStatusAllocatableAndImages(t *testing.T) {
	facts := nodeTestFacts()
	facts.allocatable = AllocatableConfig{
		KubeReserved:           resources("cpu", "100m", "memory", "1Gi"),
		HardEvictionThresholds: hardThresholds(t, map[string]string{"nodefs.available": "10Gi"}),
	}
	rt := readyRuntimeState(nodeT0)
	rt.images, rt.imagesRead = []*runtimeapi.Image{{Id: "sha256:x", Size: 7, RepoTags: []string{"x:1"}}}, true
	node := newNode("node-a", "node-a", facts, rt, nodeT0)
	node.Status.Allocatable["example.com/dongle"] = resource.MustParse("3")
	node.Status.Capacity["example.com/dongle"] = resource.MustParse("4")

	status, _ := nodeStatus(node, facts, rt, nodeT0, 0)
	want := resources("cpu", "1900m", "memory", "3Gi", "ephemeral-storage", "90Gi", "pods", "110", "example.com/dongle", "3")
	if diff := cmp.Diff(want, status.Allocatable, nodeQuantityEqual); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ContainerImage{{Names: []string{"x:1"}, SizeBytes: 7}}, status.Images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}
