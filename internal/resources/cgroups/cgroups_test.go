package cgroups

// parseMountInfo is tested as a pure function. The Manager runs against fake
// hierarchies in t.TempDir() (plain folders, with an rmdir that behaves as
// cgroupfs's: control files go with the cgroup, child cgroups and processes
// keep it), and, in TestRealHierarchies, against the host's /sys/fs/cgroup
// when the test runs as root.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

func TestParseMountInfo(t *testing.T) {
	tests := map[string]struct {
		mountinfo string
		want      []Hierarchy
		wantErr   bool
	}{
		"one v1 hierarchy per controller, a named one and the hybrid unified one": {
			mountinfo: `22 27 0:21 / /proc rw,relatime - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`,
			want: []Hierarchy{
				{MountPoint: "/sys/fs/cgroup/cpu", Controllers: []string{"cpu"}},
				{MountPoint: "/sys/fs/cgroup/cpuacct", Controllers: []string{"cpuacct"}},
				{MountPoint: "/sys/fs/cgroup/cpuset", Controllers: []string{"cpuset"}},
				{MountPoint: "/sys/fs/cgroup/memory", Controllers: []string{"memory"}},
				{MountPoint: "/sys/fs/cgroup/systemd", Controllers: []string{"name=systemd"}},
				{MountPoint: "/sys/fs/cgroup/unified", Unified: true},
			},
		},
		"pure v2 is one unified hierarchy": {
			mountinfo: `25 18 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`,
			want: []Hierarchy{{MountPoint: "/sys/fs/cgroup", Unified: true}},
		},
		"co-mounted controllers are one hierarchy; options that are not controllers are left out": {
			mountinfo: `30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,cpuacct,cpu
31 25 0:27 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid shared:11 - cgroup cgroup rw,net_cls,net_prio,clone_children
`,
			want: []Hierarchy{
				{MountPoint: "/sys/fs/cgroup/cpu,cpuacct", Controllers: []string{"cpu", "cpuacct"}},
				{MountPoint: "/sys/fs/cgroup/net_cls,net_prio", Controllers: []string{"net_cls", "net_prio"}},
			},
		},
		"a hierarchy mounted twice is kept once, at its first mount": {
			mountinfo: `32 31 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
90 27 0:29 / /var/lib/other/memory rw,relatime - cgroup cgroup rw,memory
`,
			want: []Hierarchy{{MountPoint: "/sys/fs/cgroup/memory", Controllers: []string{"memory"}}},
		},
		"escaped characters in a mount point are decoded": {
			mountinfo: `32 31 0:29 / /mnt/cgroup\040v2 rw,relatime - cgroup2 cgroup2 rw
`,
			want: []Hierarchy{{MountPoint: "/mnt/cgroup v2", Unified: true}},
		},
		"no cgroup mount gives no hierarchy": {
			mountinfo: `22 27 0:21 / /proc rw,relatime - proc proc rw
`,
		},
		"a line without its separator is an error": {
			mountinfo: `32 31 0:29 / /sys/fs/cgroup/memory rw,relatime cgroup cgroup rw,memory
`,
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseMountInfo(strings.NewReader(tc.mountinfo))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseMountInfo() error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseMountInfo() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeRmdir removes a cgroup as cgroupfs does: its control files go with
// it, but not while it has child cgroups or processes.
func fakeRmdir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			return &fs.PathError{Op: "rmdir", Path: dir, Err: syscall.ENOTEMPTY}
		}
	}
	if procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); strings.TrimSpace(string(procs)) != "" {
		return &fs.PathError{Op: "rmdir", Path: dir, Err: syscall.EBUSY}
	}
	return os.RemoveAll(dir)
}

// fakeV1 lays out a v1 host like the CI machine's: a cpuset hierarchy with
// CPUs and memory nodes at its top, a few others and the hybrid unified one.
func fakeV1(t *testing.T) []Hierarchy {
	t.Helper()
	base := t.TempDir()
	hierarchies := []Hierarchy{
		{MountPoint: filepath.Join(base, "cpu"), Controllers: []string{"cpu"}},
		{MountPoint: filepath.Join(base, "cpuset"), Controllers: []string{"cpuset"}},
		{MountPoint: filepath.Join(base, "memory"), Controllers: []string{"memory"}},
		{MountPoint: filepath.Join(base, "systemd"), Controllers: []string{"name=systemd"}},
		{MountPoint: filepath.Join(base, "unified"), Unified: true},
	}
	for _, h := range hierarchies {
		mustMkdir(t, h.MountPoint)
	}
	writeFile(t, filepath.Join(base, "cpuset", "cpuset.cpus"), "0-3\n")
	writeFile(t, filepath.Join(base, "cpuset", "cpuset.mems"), "0\n")
	return hierarchies
}

func newFakeManager(t *testing.T, root string, hierarchies []Hierarchy) *Manager {
	t.Helper()
	m, err := newManager(Options{Root: root}, hierarchies, nil, fakeRmdir)
	if err != nil {
		t.Fatalf("newManager() error = %v", err)
	}
	return m
}

func TestNewCreatesTheRootEverywhere(t *testing.T) {
	hierarchies := fakeV1(t)
	newFakeManager(t, "/nodelet/pods", hierarchies)

	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h.MountPoint, "nodelet", "pods")); err != nil {
			t.Errorf("root missing in %s: %v", h.MountPoint, err)
		}
	}
	cpuset := hierarchies[1].MountPoint
	for _, dir := range []string{"nodelet", "nodelet/pods"} {
		if got := readFile(t, filepath.Join(cpuset, dir, "cpuset.cpus")); got != "0-3\n" {
			t.Errorf("%s/cpuset.cpus = %q, want the parent's %q", dir, got, "0-3\n")
		}
		if got := readFile(t, filepath.Join(cpuset, dir, "cpuset.mems")); got != "0\n" {
			t.Errorf("%s/cpuset.mems = %q, want the parent's %q", dir, got, "0\n")
		}
	}
}

func TestNewRejectsBadRoots(t *testing.T) {
	for _, root := range []string{"", "nodelet", "/nodelet/", "/a/../nodelet"} {
		if _, err := newManager(Options{Root: root}, fakeV1(t), nil, fakeRmdir); err == nil {
			t.Errorf("newManager(%q) succeeded, want an error", root)
		}
	}
	if _, err := newManager(Options{Root: "/nodelet"}, nil, nil, fakeRmdir); err == nil {
		t.Error("newManager() without hierarchies succeeded, want an error")
	}
}

func TestEnsurePod(t *testing.T) {
	hierarchies := fakeV1(t)
	m := newFakeManager(t, "/nodelet", hierarchies)
	uid := types.UID("6f1d2c1e-0b7e-4e43-9d7f-2f1a0c9e1b11")

	if got, want := m.PodCgroupParent(bestEffortPod(uid)), "/nodelet/kubepods/besteffort/pod6f1d2c1e-0b7e-4e43-9d7f-2f1a0c9e1b11"; got != want {
		t.Errorf("PodCgroupParent() = %q, want %q", got, want)
	}
	for range 2 { // idempotent
		if err := m.EnsurePod(bestEffortPod(uid)); err != nil {
			t.Fatalf("EnsurePod() error = %v", err)
		}
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(uid)))); err != nil {
			t.Errorf("pod cgroup missing in %s: %v", h.MountPoint, err)
		}
	}
	podCpuset := filepath.Join(hierarchies[1].MountPoint, m.PodCgroupParent(bestEffortPod(uid)))
	if got := readFile(t, filepath.Join(podCpuset, "cpuset.cpus")); got != "0-3\n" {
		t.Errorf("pod cpuset.cpus = %q, want %q", got, "0-3\n")
	}
}

// A pod's cgroup is made alone in the tier New made; a tier gone since
// (removed by hand, say) is made again on the way, its cpuset filled as
// at start, rather than the pod failing.
func TestEnsurePodMakesATierRemovedSinceStart(t *testing.T) {
	hierarchies := fakeV1(t)
	m := newFakeManager(t, "/nodelet", hierarchies)
	cpuset := hierarchies[1].MountPoint
	tier := filepath.Join(cpuset, "nodelet", "kubepods", "besteffort")
	if err := os.RemoveAll(tier); err != nil {
		t.Fatal(err)
	}
	uid := types.UID("1b7e3c0a-tier")

	if err := m.EnsurePod(bestEffortPod(uid)); err != nil {
		t.Fatalf("EnsurePod() error = %v", err)
	}
	pod := filepath.Join(cpuset, m.PodCgroupParent(bestEffortPod(uid)))
	for _, dir := range []string{tier, pod} {
		if got := readFile(t, filepath.Join(dir, "cpuset.cpus")); got != "0-3\n" {
			t.Errorf("%s/cpuset.cpus = %q, want the top's %q", dir, got, "0-3\n")
		}
		if got := readFile(t, filepath.Join(dir, "cpuset.mems")); got != "0\n" {
			t.Errorf("%s/cpuset.mems = %q, want the top's %q", dir, got, "0\n")
		}
	}
}

func TestEnsurePodDelegatesV2Controllers(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "cgroup.controllers"), "cpuset cpu memory pids\n")
	// What the kernel offers each cgroup below the top as it is made.
	for _, dir := range []string{"nodelet", "nodelet/kubepods", "nodelet/kubepods/besteffort"} {
		mustMkdir(t, filepath.Join(base, dir))
		writeFile(t, filepath.Join(base, dir, "cgroup.controllers"), "cpu memory\n")
	}
	m := newFakeManager(t, "/nodelet", []Hierarchy{{MountPoint: base, Unified: true}})

	if err := m.EnsurePod(bestEffortPod("uid-1")); err != nil {
		t.Fatalf("EnsurePod() error = %v", err)
	}
	if got, want := readFile(t, filepath.Join(base, "cgroup.subtree_control")), "+cpuset +cpu +memory +pids"; got != want {
		t.Errorf("top subtree_control = %q, want %q", got, want)
	}
	// The levels down to the pod's tier delegate to the level below, the
	// tier to the pod.
	for _, dir := range []string{"nodelet", "nodelet/kubepods", "nodelet/kubepods/besteffort"} {
		if got, want := readFile(t, filepath.Join(base, dir, "cgroup.subtree_control")), "+cpu +memory"; got != want {
			t.Errorf("%s subtree_control = %q, want %q", dir, got, want)
		}
	}
}

func TestRemovePod(t *testing.T) {
	hierarchies := fakeV1(t)
	m := newFakeManager(t, "/nodelet", hierarchies)
	uid, other := types.UID("uid-1"), types.UID("uid-2")
	for _, u := range []types.UID{uid, other} {
		if err := m.EnsurePod(bestEffortPod(u)); err != nil {
			t.Fatal(err)
		}
	}
	// The runtime puts each container (and the sandbox) in a cgroup of its
	// own inside the pod's, in every hierarchy.
	for _, h := range hierarchies {
		for _, id := range []string{"sandbox-id", "container-id"} {
			dir := filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(uid)), id)
			mustMkdir(t, dir)
			writeFile(t, filepath.Join(dir, "cgroup.procs"), "")
		}
	}
	busy := filepath.Join(hierarchies[2].MountPoint, m.PodCgroupParent(bestEffortPod(uid)), "container-id")
	writeFile(t, filepath.Join(busy, "cgroup.procs"), "4242\n")

	err := m.RemovePod(uid)
	if err == nil || !strings.Contains(err.Error(), busy) || !strings.Contains(err.Error(), "still has processes") {
		t.Fatalf("RemovePod() with a process left = %v, want an error naming %s as busy", err, busy)
	}
	if !errors.Is(err, syscall.EBUSY) {
		t.Errorf("RemovePod() error %v does not wrap EBUSY", err)
	}
	for _, h := range hierarchies {
		_, statErr := os.Stat(filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(uid))))
		if stillThere := statErr == nil; stillThere != (h.MountPoint == hierarchies[2].MountPoint) {
			t.Errorf("after a busy removal, pod cgroup in %s present = %v", h.MountPoint, stillThere)
		}
	}

	writeFile(t, filepath.Join(busy, "cgroup.procs"), "")
	if err := m.RemovePod(uid); err != nil {
		t.Fatalf("RemovePod() error = %v", err)
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(uid)))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pod cgroup still in %s: %v", h.MountPoint, err)
		}
		if _, err := os.Stat(filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(other)))); err != nil {
			t.Errorf("the other pod's cgroup went from %s: %v", h.MountPoint, err)
		}
	}
	if err := m.RemovePod(uid); err != nil {
		t.Errorf("RemovePod() of a removed pod = %v, want nil", err)
	}
}

func TestListPods(t *testing.T) {
	hierarchies := fakeV1(t)
	m := newFakeManager(t, "/nodelet", hierarchies)
	for _, uid := range []types.UID{"uid-b", "uid-a"} {
		if err := m.EnsurePod(bestEffortPod(uid)); err != nil {
			t.Fatal(err)
		}
	}
	// A pod whose removal stopped half way, something that is not a pod,
	// and a file.
	mustMkdir(t, filepath.Join(hierarchies[2].MountPoint, "nodelet", "kubepods", "burstable", "poduid-c"))
	mustMkdir(t, filepath.Join(hierarchies[0].MountPoint, "nodelet", "system"))
	writeFile(t, filepath.Join(hierarchies[0].MountPoint, "nodelet", "podfile"), "")

	got, err := m.ListPods()
	if err != nil {
		t.Fatalf("ListPods() error = %v", err)
	}
	if diff := cmp.Diff([]types.UID{"uid-a", "uid-b", "uid-c"}, got); diff != "" {
		t.Errorf("ListPods() mismatch (-want +got):\n%s", diff)
	}
}

// TestRealHierarchies creates and removes /nodelet-test-<random> in the
// host's own cgroup hierarchies, with a process in a container cgroup to
// prove a cgroup made by EnsurePod takes tasks. It needs root.
func TestRealHierarchies(t *testing.T) {
	prereq.Root(t, "it makes cgroups in the host's hierarchies")
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	root := "/nodelet-test-" + hex.EncodeToString(suffix)
	m, err := New(Options{Root: root})
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

	uid := types.UID("0c3a9f4e-test")
	if err := m.EnsurePod(bestEffortPod(uid)); err != nil {
		t.Fatalf("EnsurePod() error = %v", err)
	}
	if got, err := m.ListPods(); err != nil || !cmp.Equal(got, []types.UID{uid}) {
		t.Fatalf("ListPods() = %v, %v; want [%s]", got, err, uid)
	}

	// Put a process in a container cgroup inside the pod's, in every
	// hierarchy, as runc does; cpuset refuses it unless the pod's cgroup got
	// CPUs and memory nodes.
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill() })
	for _, h := range m.Hierarchies() {
		if err := m.ensure(h, m.PodCgroupParent(bestEffortPod(uid))+"/container"); err != nil {
			t.Fatal(err)
		}
		procs := filepath.Join(cgroupDir(h, m.PodCgroupParent(bestEffortPod(uid))), "container", "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
			t.Fatalf("moving a process into %s: %v", procs, err)
		}
	}

	// A process left inside is SIGKILLed, as the kubelet kills what is
	// left in a pod's cgroup, and the cgroup goes: at once, or at a later
	// try when the rmdir came before the process had exited ("still has
	// processes"), as the reconciler tries again.
	exited := make(chan error, 1)
	go func() { exited <- sleep.Wait() }()
	await.Eventually(t, 30*time.Second, "the pod's cgroup removed with the process inside killed", func(context.Context) error {
		return m.RemovePod(uid)
	})
	select {
	case err := <-exited:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the process left in the pod's cgroup ended with %v, want killed by SIGKILL", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the process left in the pod's cgroup is still running after RemovePod succeeded")
	}
	for _, h := range m.Hierarchies() {
		if _, err := os.Stat(cgroupDir(h, m.PodCgroupParent(bestEffortPod(uid)))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pod cgroup still in %s: %v", h.MountPoint, err)
		}
	}
	if got, err := m.ListPods(); err != nil || len(got) != 0 {
		t.Errorf("ListPods() after removal = %v, %v; want none", got, err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// bestEffortPod is a pod that asks for nothing.
func bestEffortPod(uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
}

// A process left in a container's cgroup (one that outlived its
// container) is killed, as the kubelet kills it, and the pod's cgroup then
// goes: the fake kill takes the process out of the cgroup, as its exit
// does.
func TestRemovePodKillsWhatIsLeftInTheCgroup(t *testing.T) {
	hierarchies := fakeV1(t)
	m := newFakeManager(t, "/nodelet", hierarchies)
	uid := types.UID("uid-1")
	if err := m.EnsurePod(bestEffortPod(uid)); err != nil {
		t.Fatal(err)
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(uid)), "container-id")
		mustMkdir(t, dir)
		writeFile(t, filepath.Join(dir, "cgroup.procs"), "")
	}
	left := filepath.Join(hierarchies[2].MountPoint, m.PodCgroupParent(bestEffortPod(uid)), "container-id", "cgroup.procs")
	writeFile(t, left, "4242\n4343\n")
	var killed []int
	m.kill = func(pid int) error {
		killed = append(killed, pid)
		writeFile(t, left, "")
		return nil
	}

	if err := m.RemovePod(uid); err != nil {
		t.Fatalf("RemovePod() with processes left = %v, want them killed and the cgroup removed", err)
	}
	if want := []int{4242, 4343}; !slices.Equal(killed, want) {
		t.Errorf("killed %v, want %v", killed, want)
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h.MountPoint, m.PodCgroupParent(bestEffortPod(uid)))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pod cgroup still in %s: %v", h.MountPoint, err)
		}
	}
}
