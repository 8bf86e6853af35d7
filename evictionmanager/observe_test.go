package evictionmanager

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Tests of the readings: a /proc written to a temporary folder, and a
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

func TestMemoryAvailableIsCapacityLessWorkingSet(t *testing.T) {
	h := writeProc(t, map[string]string{"meminfo": "MemTotal:       4194304 kB\nMemFree:        1048576 kB\nInactive(file):  524288 kB\n"})
	// Used 3Gi, of which 512Mi inactive file pages: a 2.5Gi working set.
	got, err := h.memoryAvailable(4<<30, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got.Available.Value() != 1536<<20 || got.Capacity.Value() != 4<<30 {
		t.Errorf("memory.available = %s of %s, want 1536Mi of 4Gi", &got.Available, &got.Capacity)
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

type statsFunc func() []*runtimeapi.ContainerStats

func (f statsFunc) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return f(), nil
}

func TestPodUsageSumsContainersByPod(t *testing.T) {
	stat := func(uid, name string, memory, disk uint64) *runtimeapi.ContainerStats {
		return &runtimeapi.ContainerStats{
			Attributes:    &runtimeapi.ContainerAttributes{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: map[string]string{criPodUIDLabel: uid}},
			Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: memory}},
			WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: disk}},
		}
	}
	usage, err := podUsage(context.Background(), statsFunc(func() []*runtimeapi.ContainerStats {
		return []*runtimeapi.ContainerStats{
			stat("a", "app", 100<<20, 1<<20),
			stat("a", "sidecar", 50<<20, 2<<20),
			stat("b", "app", 10<<20, 0),
			{Attributes: &runtimeapi.ContainerAttributes{Metadata: &runtimeapi.ContainerMetadata{Name: "not-a-pod"}}},
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 2 {
		t.Fatalf("usage of %d pods, want 2: %v", len(usage), usage)
	}
	a := usage["a"]
	if a.Memory.Value() != 150<<20 || a.EphemeralStorage.Value() != 3<<20 || len(a.Containers) != 2 {
		t.Errorf("pod a: memory %s, disk %s, %d containers; want 150Mi, 3Mi, 2", a.Memory, a.EphemeralStorage, len(a.Containers))
	}
	if a.Containers[1].Name != "sidecar" || a.Containers[1].Memory.Value() != 50<<20 {
		t.Errorf("pod a's sidecar: %+v", a.Containers[1])
	}
}
