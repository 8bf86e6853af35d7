//go:build linux

// Tests of volume usage against real files in t.TempDir() and, as root,
// the tmpfs volumes SetUpPod mounts; a fake clock moves the stats period.
package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

const mib = 1 << 20

func writeBytes(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWalkUsageCountsBlocksAndHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	writeBytes(t, filepath.Join(dir, "data"), mib)
	if err := os.Link(filepath.Join(dir, "data"), filepath.Join(dir, "again")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A sparse file takes almost nothing, whatever its size.
	sparse, err := os.Create(filepath.Join(dir, "sub", "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(100 * mib); err != nil {
		t.Fatal(err)
	}
	sparse.Close()

	bytes, inodes, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The root, data (linked twice), sub and sparse.
	if inodes != 4 {
		t.Errorf("inodes = %d, want 4 (a hard link counted once)", inodes)
	}
	if bytes < mib || bytes >= 2*mib {
		t.Errorf("bytes = %d, want at least 1 MiB (data once) and under 2 MiB (not twice, not the sparse size)", bytes)
	}
}

func TestMeasureUsageOfAFileSystem(t *testing.T) {
	dir := t.TempDir()
	u, err := measureUsage(dir, usageFileSystem, start)
	if err != nil {
		t.Fatal(err)
	}
	if u.walked || u.fs.capacity == 0 || u.fs.available > u.fs.capacity || u.fs.used > u.fs.capacity {
		t.Errorf("measureUsage(statfs) = %+v, want the file system's figures, not walked", u)
	}
	if !u.at.Equal(start) {
		t.Errorf("measured at %v, want %v", u.at, start)
	}
}

func TestMeasureUsageOfAMissingVolume(t *testing.T) {
	if _, err := measureUsage(filepath.Join(t.TempDir(), "gone"), usageWalk, start); err == nil {
		t.Errorf("measureUsage of a missing folder succeeded")
	}
}

func volumeStatsByName(stats []statsapi.VolumeStats) map[string]statsapi.VolumeStats {
	out := map[string]statsapi.VolumeStats{}
	for _, s := range stats {
		out[s.Name] = s
	}
	return out
}

func TestPodVolumeStatsAreMeasuredOncePerPeriod(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{StatsPeriod: time.Minute}, rootCAConfigMap("shop", rootCA))
	pod := makePod(
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir()}}},
		apiAccessVolume(),
	)
	paths, _ := setUp(t, e, pod)
	writeBytes(t, filepath.Join(paths["scratch"], "first"), mib)
	ctx := context.Background()

	stats := volumeStatsByName(e.m.PodVolumeStats(ctx)[podUID])
	if _, ok := stats["host"]; ok || len(stats) != 2 {
		t.Fatalf("volume stats of %v, want scratch and %s (a hostPath is the node's, not reported)", stats, apiAccess)
	}
	scratch := stats["scratch"]
	if used := *scratch.UsedBytes; used < mib || used >= 2*mib {
		t.Errorf("scratch usedBytes = %d, want about 1 MiB", used)
	}
	if *scratch.InodesUsed != 2 || *scratch.CapacityBytes == 0 || scratch.PVCRef != nil || !scratch.Time.Time.Equal(start) {
		t.Errorf("scratch = %+v, want 2 inodes used, the capacity of its file system, no pvcRef, measured at %v", scratch.FsStats, start)
	}
	// The token's tmpfs: its files, on a file system of its own size.
	if api := stats[apiAccess]; *api.UsedBytes == 0 || *api.CapacityBytes == *scratch.CapacityBytes {
		t.Errorf("%s = %+v, want some bytes used on the tmpfs", apiAccess, api.FsStats)
	}

	// Within the period, what was measured is served.
	writeBytes(t, filepath.Join(paths["scratch"], "second"), 2*mib)
	e.clock.Step(30 * time.Second)
	if got := *volumeStatsByName(e.m.PodVolumeStats(ctx)[podUID])["scratch"].UsedBytes; got != *scratch.UsedBytes {
		t.Errorf("usedBytes within the period = %d, want the cached %d", got, *scratch.UsedBytes)
	}
	// Once it has passed, the volume is measured again.
	e.clock.Step(30 * time.Second)
	if got := *volumeStatsByName(e.m.PodVolumeStats(ctx)[podUID])["scratch"].UsedBytes; got < 3*mib {
		t.Errorf("usedBytes after the period = %d, want at least 3 MiB", got)
	}

	if err := e.m.TearDownPod(ctx, podUID); err != nil {
		t.Fatal(err)
	}
	if got := e.m.PodVolumeStats(ctx)[podUID]; len(got) != 0 {
		t.Errorf("volume stats of a torn down pod: %v", got)
	}
}

func TestPodVolumeStatsOff(t *testing.T) {
	e := newTestEnv(t, Options{StatsPeriod: -1})
	pod := makePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	setUp(t, e, pod)
	if got := e.m.PodVolumeStats(context.Background()); len(got) != 0 {
		t.Errorf("volume stats with a negative period: %v, want none", got)
	}
}
