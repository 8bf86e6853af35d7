package cgroups

// The fence around a companion's pod cgroup (Options.Within, Seal), on the
// fake hierarchies of cgroups_test.go: a pod cgroup the host's kubelet
// made, then removed as when it replaces the runtime's pod.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

const runtimePodCgroup = "/kubepods/burstable/pod0d4e6a52-runtime"

// newFencedManager is a Manager rooted at runtimePodCgroup/nodelet over
// fakeV1, whose runtime pod's cgroup the host's kubelet made in every
// hierarchy but the named systemd one.
func newFencedManager(t *testing.T) (*Manager, []Hierarchy) {
	t.Helper()
	hierarchies := fakeV1(t)
	for _, h := range hierarchies {
		if !h.has("name=systemd") {
			mustMkdir(t, cgroupDir(h, runtimePodCgroup))
		}
	}
	// Filled by the host's kubelet as it made each level.
	for _, dir := range []string{"/kubepods", "/kubepods/burstable", runtimePodCgroup} {
		writeFile(t, filepath.Join(cgroupDir(hierarchies[1], dir), "cpuset.cpus"), "0-3\n")
		writeFile(t, filepath.Join(cgroupDir(hierarchies[1], dir), "cpuset.mems"), "0\n")
	}
	m, err := newManager(Options{Root: runtimePodCgroup + "/nodelet", Within: runtimePodCgroup}, hierarchies, nil, fakeRmdir)
	if err != nil {
		t.Fatalf("newManager() error = %v", err)
	}
	return m, hierarchies
}

func TestFencedManagerMakesItsTreeInsideThePodsCgroup(t *testing.T) {
	m, hierarchies := newFencedManager(t)
	pod := bestEffortPod("uid-a")
	if err := m.EnsurePod(pod); err != nil {
		t.Fatalf("EnsurePod() error = %v", err)
	}
	want := runtimePodCgroup + "/nodelet/kubepods/besteffort/poduid-a"
	if got := m.PodCgroupParent(pod); got != want {
		t.Errorf("PodCgroupParent() = %q, want %q", got, want)
	}
	// The named hierarchy, where the host's kubelet made nothing, gets
	// what is missing, as without a fence.
	for _, h := range hierarchies {
		if _, err := os.Stat(cgroupDir(h, want)); err != nil {
			t.Errorf("pod cgroup missing in %s: %v", h.MountPoint, err)
		}
	}
}

// The host's kubelet removes the runtime pod's cgroup, ours inside it: a
// pod's cgroup is then refused, and neither it nor the pod's cgroup above
// it is made again, in any hierarchy the fence holds.
func TestFencedManagerNeverMakesTheGonePodsCgroupAgain(t *testing.T) {
	m, hierarchies := newFencedManager(t)
	for _, h := range hierarchies {
		if !h.has("name=systemd") {
			if err := os.RemoveAll(cgroupDir(h, runtimePodCgroup)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, pod := range []types.UID{"uid-new", "uid-g"} {
		err := m.EnsurePod(bestEffortPod(pod))
		if !errors.Is(err, ErrWithinGone) {
			t.Errorf("EnsurePod(%s) error = %v, want ErrWithinGone", pod, err)
		}
	}
	for _, h := range hierarchies {
		if h.has("name=systemd") {
			continue
		}
		if _, err := os.Stat(cgroupDir(h, runtimePodCgroup)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was made again in %s (stat: %v)", runtimePodCgroup, h.MountPoint, err)
		}
	}
}

func TestFencedManagerRefusesAGonePodsCgroupAtStart(t *testing.T) {
	_, err := newManager(Options{Root: runtimePodCgroup + "/nodelet", Within: runtimePodCgroup}, fakeV1(t), nil, fakeRmdir)
	if !errors.Is(err, ErrWithinGone) {
		t.Errorf("newManager() error = %v, want ErrWithinGone", err)
	}
}

func TestFenceMustBeAboveTheRoot(t *testing.T) {
	for _, within := range []string{"/", "kubepods", "/nodelet", "/nodelet/kubepods", "/other", "/nodelet/"} {
		if _, err := newManager(Options{Root: "/nodelet", Within: within}, fakeV1(t), nil, fakeRmdir); err == nil {
			t.Errorf("newManager(within %q) succeeded, want an error", within)
		}
	}
}

// Sealed (the runtime's pod replaced, its cgroup still there for a
// while): no pod cgroup is made or handed out, not even one that exists,
// while a pod's cgroup can still be removed.
func TestSealedManagerRefusesEveryPod(t *testing.T) {
	m, hierarchies := newFencedManager(t)
	kept := bestEffortPod("uid-kept")
	if err := m.EnsurePod(kept); err != nil {
		t.Fatalf("EnsurePod() error = %v", err)
	}
	reason := errors.New("the runtime's pod was replaced")
	m.Seal(reason)
	m.Seal(errors.New("a second reason"))
	for _, pod := range []types.UID{"uid-kept", "uid-new"} {
		if err := m.EnsurePod(bestEffortPod(pod)); !errors.Is(err, reason) {
			t.Errorf("EnsurePod(%s) on a sealed Manager error = %v, want the first reason", pod, err)
		}
	}
	memory := hierarchies[2]
	if _, err := os.Stat(filepath.Join(memory.MountPoint, m.PodCgroupParent(bestEffortPod("uid-new")))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a sealed Manager made a pod's cgroup (stat: %v)", err)
	}
	if err := m.RemovePod("uid-kept"); err != nil {
		t.Errorf("RemovePod() on a sealed Manager error = %v", err)
	}
}
