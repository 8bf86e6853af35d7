package cgroups

// The Manager's QoS tree and limits against fake hierarchies in
// t.TempDir() (fakeV1, and a fake pure v2 one; see cgroups_test.go), and
// against the host's own cgroupfs as root in TestRealLimits.

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/google/go-cmp/cmp"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
	"github.com/nodelet/nodelet/internal/testutil/resources"
)

func podWith(uid types.UID, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Spec: corev1.PodSpec{Containers: containers}}
}

var (
	guaranteed = podWith("uid-g", container("a", "cpu=500m,memory=64Mi", "cpu=500m,memory=64Mi"))
	burstable  = podWith("uid-b", container("a", "cpu=250m,memory=32Mi", "cpu=1,memory=128Mi"))
	bestEffort = podWith("uid-e", container("a", "", ""))
)

// newQOSManager is a Manager over fakeV1 plus a pids hierarchy (the sixth),
// under /nodelet unless opts names a root.
func newQOSManager(t *testing.T, opts Options) (*Manager, []Hierarchy) {
	t.Helper()
	hierarchies := fakeV1(t)
	pids := Hierarchy{MountPoint: filepath.Join(filepath.Dir(hierarchies[0].MountPoint), "pids"), Controllers: []string{"pids"}}
	mustMkdir(t, pids.MountPoint)
	hierarchies = append(hierarchies, pids)
	if opts.Root == "" {
		opts.Root = "/nodelet"
	}
	m, err := newManager(opts, hierarchies, nil, fakeRmdir)
	if err != nil {
		t.Fatalf("newManager() error = %v", err)
	}
	return m, hierarchies
}

func TestPodsGoInTheirQOSTier(t *testing.T) {
	m, hierarchies := newQOSManager(t, Options{})
	for pod, want := range map[*corev1.Pod]string{
		guaranteed: "/nodelet/kubepods/poduid-g",
		burstable:  "/nodelet/kubepods/burstable/poduid-b",
		bestEffort: "/nodelet/kubepods/besteffort/poduid-e",
	} {
		if got := m.PodCgroupParent(pod); got != want {
			t.Errorf("PodCgroupParent(%s) = %q, want %q", pod.UID, got, want)
		}
		if err := m.EnsurePod(pod); err != nil {
			t.Fatalf("EnsurePod(%s) error = %v", pod.UID, err)
		}
		for _, h := range hierarchies {
			if _, err := os.Stat(cgroupDir(h, want)); err != nil {
				t.Errorf("pod %s's cgroup missing in %s: %v", pod.UID, h.MountPoint, err)
			}
		}
	}
	got, err := m.ListPods()
	if err != nil || !cmp.Equal(got, []types.UID{"uid-b", "uid-e", "uid-g"}) {
		t.Errorf("ListPods() = %v, %v; want the three pods", got, err)
	}
}

func TestPodLimitsAreWrittenWhenTheCgroupIsMade(t *testing.T) {
	m, hierarchies := newQOSManager(t, Options{PodPidsLimit: 64})
	cpu, memory, pids := hierarchies[0], hierarchies[2], hierarchies[5]
	if err := m.EnsurePod(guaranteed); err != nil {
		t.Fatal(err)
	}
	dir := "/nodelet/kubepods/poduid-g"
	for file, want := range map[string]string{
		filepath.Join(cgroupDir(cpu, dir), "cpu.shares"):               "512",
		filepath.Join(cgroupDir(cpu, dir), "cpu.cfs_quota_us"):         "50000",
		filepath.Join(cgroupDir(cpu, dir), "cpu.cfs_period_us"):        "100000",
		filepath.Join(cgroupDir(memory, dir), "memory.limit_in_bytes"): "67108864",
		filepath.Join(cgroupDir(pids, dir), "pids.max"):                "64",
	} {
		if got := readFile(t, file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}

	// A cgroup already there keeps what it has.
	shares := filepath.Join(cgroupDir(cpu, dir), "cpu.shares")
	writeFile(t, shares, "777")
	if err := m.EnsurePod(guaranteed); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, shares); got != "777" {
		t.Errorf("cpu.shares of an existing pod cgroup = %q, want it kept as %q", got, "777")
	}
}

func TestPodLimitsThatFailedAreWrittenByTheNextEnsurePod(t *testing.T) {
	m, hierarchies := newQOSManager(t, Options{})
	memory := hierarchies[2]
	dir := "/nodelet/kubepods/poduid-g"
	limit := filepath.Join(cgroupDir(memory, dir), "memory.limit_in_bytes")
	// A folder where the limit's file goes: writing the limit fails once
	// the cgroup is made.
	mustMkdir(t, limit)
	if err := m.EnsurePod(guaranteed); err == nil {
		t.Fatal("EnsurePod() = nil with the memory limit unwritable, want an error")
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(cgroupDir(h, dir)); err != nil {
			t.Fatalf("the pod's cgroup is not made in %s: %v", h.MountPoint, err)
		}
	}
	if err := os.Remove(limit); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(guaranteed); err != nil {
		t.Fatalf("EnsurePod() again = %v", err)
	}
	if got := readFile(t, limit); got != "67108864" {
		t.Errorf("memory.limit_in_bytes after the retry = %q, want 67108864", got)
	}
	// Done once: a later change is the cgroup's own again.
	writeFile(t, limit, "1")
	if err := m.EnsurePod(guaranteed); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, limit); got != "1" {
		t.Errorf("memory.limit_in_bytes = %q after a third EnsurePod, want it kept as 1", got)
	}
}

func TestQOSTiersShares(t *testing.T) {
	m, hierarchies := newQOSManager(t, Options{NodeAllocatable: resources.List("cpu=2,memory=1Gi,pid=1000")})
	cpu := hierarchies[0]
	read := func(cgroup, file string) string {
		t.Helper()
		return readFile(t, filepath.Join(cgroupDir(cpu, cgroup), file))
	}
	if got := read("/nodelet/kubepods/besteffort", "cpu.shares"); got != "2" {
		t.Errorf("besteffort cpu.shares = %q, want 2", got)
	}
	if got := read("/nodelet/kubepods/burstable", "cpu.shares"); got != "2" {
		t.Errorf("burstable cpu.shares without pods = %q, want 2", got)
	}
	if got := read("/nodelet/kubepods", "cpu.shares"); got != "2048" {
		t.Errorf("kubepods cpu.shares = %q, want 2048 for 2 CPUs", got)
	}
	if got := readFile(t, filepath.Join(cgroupDir(hierarchies[2], "/nodelet/kubepods"), "memory.limit_in_bytes")); got != "1073741824" {
		t.Errorf("kubepods memory.limit_in_bytes = %q, want 1Gi", got)
	}
	if got := readFile(t, filepath.Join(cgroupDir(hierarchies[5], "/nodelet/kubepods"), "pids.max")); got != "1000" {
		t.Errorf("kubepods pids.max = %q, want 1000", got)
	}

	other := podWith("uid-b2", container("a", "cpu=750m", ""))
	for _, pod := range []*corev1.Pod{guaranteed, burstable, bestEffort, other} {
		if err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
	}
	if got := read("/nodelet/kubepods/burstable", "cpu.shares"); got != "1024" {
		t.Errorf("burstable cpu.shares with 250m and 750m = %q, want 1024", got)
	}
	if err := m.RemovePod(other.UID); err != nil {
		t.Fatal(err)
	}
	if got := read("/nodelet/kubepods/burstable", "cpu.shares"); got != "256" {
		t.Errorf("burstable cpu.shares after a pod went = %q, want 256", got)
	}
}

func TestPodsOfTheOldLayoutAreKeptAndRemoved(t *testing.T) {
	m, hierarchies := newQOSManager(t, Options{})
	// An older nodelet put the pod right under the root.
	for _, h := range hierarchies {
		mustMkdir(t, cgroupDir(h, "/nodelet/poduid-b/sandbox"))
	}
	if got, want := m.PodCgroupParent(burstable), "/nodelet/poduid-b"; got != want {
		t.Errorf("PodCgroupParent() of a pod of the old layout = %q, want %q", got, want)
	}
	if err := m.EnsurePod(burstable); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cgroupDir(hierarchies[0], "/nodelet/kubepods/burstable/poduid-b")); err == nil {
		t.Error("EnsurePod made a second cgroup for a pod of the old layout")
	}
	if got, err := m.ListPods(); err != nil || !cmp.Equal(got, []types.UID{"uid-b"}) {
		t.Errorf("ListPods() = %v, %v; want the old layout's pod", got, err)
	}
	if err := m.RemovePod(burstable.UID); err != nil {
		t.Fatal(err)
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(cgroupDir(h, "/nodelet/poduid-b")); err == nil {
			t.Errorf("the old layout's pod cgroup is still in %s", h.MountPoint)
		}
	}
}

func TestPureV2Limits(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	m, err := newManager(Options{Root: "/nodelet", PodPidsLimit: 32, NodeAllocatable: resources.List("cpu=4,memory=2Gi")},
		[]Hierarchy{{MountPoint: base, Unified: true}}, nil, fakeRmdir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(burstable); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"nodelet/kubepods/cpu.weight":                    "157",
		"nodelet/kubepods/memory.max":                    "2147483648",
		"nodelet/kubepods/besteffort/cpu.weight":         "1",
		"nodelet/kubepods/burstable/cpu.weight":          "10",
		"nodelet/kubepods/burstable/poduid-b/cpu.weight": "10",
		"nodelet/kubepods/burstable/poduid-b/cpu.max":    "100000 100000",
		"nodelet/kubepods/burstable/poduid-b/memory.max": "134217728",
		"nodelet/kubepods/burstable/poduid-b/pids.max":   "32",
	} {
		if got := readFile(t, filepath.Join(base, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

// TestUnifiedDirs: on a fake pure v2 layout the root and each pod's
// folder are found wherever the pod's cgroup is; on fakeV1 (hybrid, with
// its controller-less cgroup2 hierarchy) none is.
func TestUnifiedDirs(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "cgroup.controllers"), "cpu io memory pids\n")
	m := newFakeManager(t, "/nodelet", []Hierarchy{{MountPoint: base, Unified: true}})
	if err := m.EnsurePod(burstable); err != nil {
		t.Fatal(err)
	}
	// An older nodelet's pod, right under the root.
	mustMkdir(t, filepath.Join(base, "nodelet/poduid-old"))
	if dir, ok := m.UnifiedRootDir(); dir != base || !ok {
		t.Errorf("UnifiedRootDir() = %q, %v; want %q", dir, ok, base)
	}
	for uid, want := range map[types.UID]string{
		burstable.UID: filepath.Join(base, "nodelet/kubepods/burstable/poduid-b"),
		"uid-old":     filepath.Join(base, "nodelet/poduid-old"),
		"uid-none":    "",
	} {
		if dir, ok := m.UnifiedPodDir(uid); dir != want || ok != (want != "") {
			t.Errorf("UnifiedPodDir(%s) = %q, %v; want %q", uid, dir, ok, want)
		}
	}

	hybrid, _ := newQOSManager(t, Options{})
	if err := hybrid.EnsurePod(burstable); err != nil {
		t.Fatal(err)
	}
	if dir, ok := hybrid.UnifiedRootDir(); ok {
		t.Errorf("UnifiedRootDir() on the hybrid layout = %q, want none", dir)
	}
	if dir, ok := hybrid.UnifiedPodDir(burstable.UID); ok {
		t.Errorf("UnifiedPodDir() on the hybrid layout = %q, want none", dir)
	}
}

// TestRealLimits makes the tree under /nodelet-test-<random> in the host's
// own hierarchies and reads back a Burstable pod's limits and its tier's
// shares from the kernel. It needs root.
func TestRealLimits(t *testing.T) {
	prereq.Root(t, "it makes cgroups in the host's hierarchies")
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	root := "/nodelet-test-" + hex.EncodeToString(suffix)
	m, err := New(Options{Root: root, PodPidsLimit: 50, NodeAllocatable: resources.List("cpu=1,memory=1Gi")})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	t.Cleanup(func() {
		for _, h := range m.Hierarchies() {
			if err := m.removeTree(cgroupDir(h, root)); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})
	if err := m.EnsurePod(burstable); err != nil {
		t.Fatalf("EnsurePod() error = %v", err)
	}
	pod := m.PodCgroupParent(burstable)
	want := map[string]map[string]string{
		"cpu": {
			pod + "/cpu.shares": "256", pod + "/cpu.cfs_quota_us": "100000", pod + "/cpu.cfs_period_us": "100000",
			root + "/kubepods/burstable/cpu.shares": "256", root + "/kubepods/besteffort/cpu.shares": "2",
			root + "/kubepods/cpu.shares": "1024",
		},
		"memory": {pod + "/memory.limit_in_bytes": "134217728", root + "/kubepods/memory.limit_in_bytes": "1073741824"},
		"pids":   {pod + "/pids.max": "50"},
	}
	if v2 := m.Hierarchies()[0].Unified && len(m.Hierarchies()) == 1; v2 {
		want = map[string]map[string]string{
			"cpu": {
				pod + "/cpu.weight": "10", pod + "/cpu.max": "100000 100000",
				root + "/kubepods/burstable/cpu.weight": "10", root + "/kubepods/besteffort/cpu.weight": "1",
			},
			"memory": {pod + "/memory.max": "134217728", root + "/kubepods/memory.max": "1073741824"},
			"pids":   {pod + "/pids.max": "50"},
		}
	}
	for controller, files := range want {
		for _, h := range m.Hierarchies() {
			if !h.has(controller) {
				continue
			}
			for file, value := range files {
				got, err := os.ReadFile(cgroupDir(h, file))
				if err != nil {
					t.Errorf("reading %s: %v", file, err)
					continue
				}
				if strings.TrimSpace(string(got)) != value {
					t.Errorf("%s in %s = %q, want %q", file, h.MountPoint, strings.TrimSpace(string(got)), value)
				}
			}
		}
	}
	if err := m.RemovePod(burstable.UID); err != nil {
		t.Fatalf("RemovePod() error = %v", err)
	}
}

func TestEnforceExistingLimitsACgroupItDidNotMake(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	m, err := newManager(Options{Root: "/nodelet", NodeAllocatable: resources.List("cpu=4,memory=2Gi")},
		[]Hierarchy{{MountPoint: base, Unified: true}}, nil, fakeRmdir)
	if err != nil {
		t.Fatal(err)
	}
	limits := resources.List("cpu=500m,memory=256Mi")
	if err := m.EnforceExisting("/system.slice", limits); err == nil || !strings.Contains(err.Error(), `cgroup "/system.slice" has some missing paths`) {
		t.Fatalf("EnforceExisting on a missing cgroup: %v, want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(base, "system.slice")); !os.IsNotExist(err) {
		t.Errorf("the missing cgroup was made (stat: %v)", err)
	}
	mustMkdir(t, filepath.Join(base, "system.slice"))
	if err := m.EnforceExisting("/system.slice", limits); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"system.slice/cpu.weight": "20", // 512 shares
		"system.slice/memory.max": "268435456",
	} {
		if got := readFile(t, filepath.Join(base, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}
