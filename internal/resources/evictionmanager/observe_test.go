package evictionmanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// Tests of the readings: a /proc and a root memory cgroup written to a
// temporary folder, and a
// stub StatsService returning fixed CRI container stats (no runtime).

func writeProc(t *testing.T, files map[string]string) host {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return host{procDir: dir}
}

func TestMemoryAvailableFromTheRootMemoryCgroup(t *testing.T) {
	for name, tc := range map[string]struct {
		unified bool
		files   map[string]string
		want    int64
	}{
		"cgroup v1: usage_in_bytes less total_inactive_file": {
			files: map[string]string{
				"memory.usage_in_bytes": "3221225472\n",
				"memory.stat":           "cache 2147483648\ninactive_file 1\ntotal_inactive_file 536870912\n",
			},
			// Used 3Gi, of which 512Mi inactive file pages: a 2.5Gi
			// working set of 4Gi.
			want: 1536 << 20,
		},
		"cgroup v2, top of the hierarchy: anon + file less inactive_file": {
			unified: true,
			files:   map[string]string{"memory.stat": "anon 1073741824\nfile 2147483648\ninactive_file 536870912\n"},
			want:    1536 << 20,
		},
		"cgroup v2 with memory.current": {
			unified: true,
			files:   map[string]string{"memory.current": "3221225472\n", "memory.stat": "anon 1\nfile 1\ninactive_file 536870912\n"},
			want:    1536 << 20,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := writeProc(t, tc.files)
			h.memoryCgroup, h.memoryUnified = h.procDir, tc.unified
			got, err := h.memoryAvailable(4<<30, time.Unix(1, 0))
			if err != nil {
				t.Fatal(err)
			}
			if got.Available.Value() != tc.want || got.Capacity.Value() != 4<<30 {
				t.Errorf("memory.available = %s of %s, want %d of 4Gi", &got.Available, &got.Capacity, tc.want)
			}
		})
	}
	h := writeProc(t, map[string]string{"memory.stat": "total_inactive_file 1\n"})
	h.memoryCgroup = h.procDir
	if _, err := h.memoryAvailable(4<<30, time.Unix(1, 0)); err == nil {
		t.Errorf("cgroup v1 without usage_in_bytes read no error")
	}
}

func TestMemoryRootPrefersV1sMemoryHierarchy(t *testing.T) {
	hybrid := []cgroups.Hierarchy{
		{MountPoint: "/sys/fs/cgroup/unified", Unified: true},
		{MountPoint: "/sys/fs/cgroup/cpu,cpuacct", Controllers: []string{"cpu", "cpuacct"}},
		{MountPoint: "/sys/fs/cgroup/memory", Controllers: []string{"memory"}},
	}
	if dir, unified := memoryRoot(hybrid, ""); dir != "/sys/fs/cgroup/memory" || unified {
		t.Errorf("hybrid: memoryRoot() = %q, %v; want v1's memory hierarchy", dir, unified)
	}
	if dir, unified := memoryRoot([]cgroups.Hierarchy{{MountPoint: "/sys/fs/cgroup", Unified: true, Controllers: []string{"memory"}}}, ""); dir != "/sys/fs/cgroup" || !unified {
		t.Errorf("v2: memoryRoot() = %q, %v; want the unified hierarchy", dir, unified)
	}
	// A companion node's memory is its DaemonSet pod's cgroup.
	if dir, _ := memoryRoot(hybrid, "/kubepods/burstable/podabc"); dir != "/sys/fs/cgroup/memory/kubepods/burstable/podabc" {
		t.Errorf("hybrid, a pod's cgroup: memoryRoot() = %q, want it in v1's memory hierarchy", dir)
	}
}

func TestPIDAvailableIsPIDMaxLessThreads(t *testing.T) {
	h := writeProc(t, map[string]string{"sys/kernel/pid_max": "32768\n", "loadavg": "0.10 0.20 0.30 2/768 12345\n"})
	got, err := h.pidAvailable(time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got.Available.Value() != 32000 || got.Capacity.Value() != 32768 {
		t.Errorf("pid.available = %s of %s, want 32000 of 32768", &got.Available, &got.Capacity)
	}
}

// fakeStats is a runtime's container stats and the IDs of the containers
// running.
type fakeStats struct {
	stats   []*runtimeapi.ContainerStats
	running []string
}

func (f fakeStats) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return f.stats, nil
}

func (f fakeStats) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if filter.GetState().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, fmt.Errorf("fakeStats lists running containers only, not %v", filter)
	}
	var list []*runtimeapi.Container
	for _, id := range f.running {
		list = append(list, &runtimeapi.Container{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	}
	return list, nil
}

// containerStat is the stats of container instance id of the pod.
func containerStat(id, podUID, name string, memory, disk uint64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes:    &runtimeapi.ContainerAttributes{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: map[string]string{criPodUIDLabel: podUID}},
		Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: memory}},
		WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: disk}},
	}
}

func TestPodUsageSumsRunningContainersByPod(t *testing.T) {
	usage, err := podUsage(context.Background(), fakeStats{
		stats: []*runtimeapi.ContainerStats{
			containerStat("a1", "a", "app", 100<<20, 1<<20),
			containerStat("a2", "a", "sidecar", 50<<20, 2<<20),
			// A dead instance of app: its layer is not pod a's usage.
			containerStat("a0", "a", "app", 0, 40<<20),
			containerStat("b1", "b", "app", 10<<20, 0),
			// Pod c's only instance is dead: measured, using nothing.
			containerStat("c0", "c", "app", 0, 5<<20),
			{Attributes: &runtimeapi.ContainerAttributes{Id: "x", Metadata: &runtimeapi.ContainerMetadata{Name: "not-a-pod"}}},
		},
		running: []string{"a1", "a2", "b1", "x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 3 {
		t.Fatalf("usage of %d pods, want 3: %v", len(usage), usage)
	}
	a := usage["a"]
	if a.Memory.Value() != 150<<20 || a.EphemeralStorage.Value() != 3<<20 || len(a.Containers) != 2 {
		t.Errorf("pod a: memory %s, disk %s, %d containers; want 150Mi, 3Mi, 2", a.Memory, a.EphemeralStorage, len(a.Containers))
	}
	if a.Containers[1].Name != "sidecar" || a.Containers[1].Memory.Value() != 50<<20 {
		t.Errorf("pod a's sidecar: %+v", a.Containers[1])
	}
	if c := usage["c"]; c.EphemeralStorage != nil || c.Memory != nil || len(c.Containers) != 0 {
		t.Errorf("pod c, its only instance dead: %+v, want no usage", c)
	}
}
