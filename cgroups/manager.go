package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/podutil"
)

// The kubelet's names for the cgroups above the pods' with the cgroupfs
// driver.
const (
	podsCgroupName       = "kubepods"
	burstableCgroupName  = "burstable"
	bestEffortCgroupName = "besteffort"
)

// Options configure a Manager.
type Options struct {
	// Root is the absolute cgroup path the tree goes under, such as
	// /nodelet.
	Root string
	// PodPidsLimit above zero limits each pod's processes.
	PodPidsLimit int64
	// NodeAllocatable is what the pods together may use: the kubepods
	// cgroup's limits (cpu, memory, pid, hugepages-*).
	NodeAllocatable corev1.ResourceList
}

// Manager creates, limits and removes the pod cgroups and the QoS tiers
// above them, in every hierarchy.
type Manager struct {
	root          string
	hierarchies   []Hierarchy
	podPidsLimit  int64
	hugePageSizes []int64
	// rmdir removes one empty cgroup; a fake hierarchy on a plain file
	// system replaces it.
	rmdir func(string) error
	// kill sends SIGKILL to a process left in a pod's cgroup; nil kills
	// nothing (tests on fake hierarchies).
	kill func(pid int) error

	mu sync.Mutex
	// burstable is the CPU (millicores) each Burstable pod asks for, which
	// the tier's shares follow.
	burstable map[types.UID]int64
	// burstableShares is the tier's shares last written.
	burstableShares uint64
}

// New detects the host's cgroup hierarchies from /proc/self/mountinfo and
// its huge page sizes, and returns a Manager with the tree made and its top
// limited.
func New(opts Options) (*Manager, error) {
	hierarchies, err := HostHierarchies()
	if err != nil {
		return nil, err
	}
	m, err := newManager(opts, hierarchies, HostHugePageSizes(), syscall.Rmdir)
	if err != nil {
		return nil, err
	}
	m.kill = func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
	return m, nil
}

func newManager(opts Options, hierarchies []Hierarchy, hugePageSizes []int64, rmdir func(string) error) (*Manager, error) {
	root := opts.Root
	if !path.IsAbs(root) || path.Clean(root) != root {
		return nil, fmt.Errorf("cgroup root %q is not a clean absolute path", root)
	}
	if len(hierarchies) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	hierarchies = slices.Clone(hierarchies)
	for i, h := range hierarchies {
		if h.Unified && len(h.Controllers) == 0 {
			hierarchies[i].Controllers = unifiedControllers(h.MountPoint)
		}
	}
	m := &Manager{
		root: root, hierarchies: hierarchies, podPidsLimit: opts.PodPidsLimit,
		hugePageSizes: hugePageSizes, rmdir: rmdir, burstable: map[types.UID]int64{},
	}
	for _, cgroup := range []string{root, m.podsCgroup(), m.qosCgroup(corev1.PodQOSBurstable), m.qosCgroup(corev1.PodQOSBestEffort)} {
		for _, h := range hierarchies {
			if err := m.ensure(h, cgroup); err != nil {
				return nil, err
			}
		}
	}
	if err := m.apply(m.podsCgroup(), NodeAllocatableConfig(opts.NodeAllocatable)); err != nil {
		return nil, fmt.Errorf("limiting the pods' cgroup to the node's allocatable resources: %w", err)
	}
	minShares := uint64(MinShares)
	if err := m.apply(m.qosCgroup(corev1.PodQOSBestEffort), &ResourceConfig{CPUShares: &minShares}); err != nil {
		return nil, err
	}
	m.burstableShares = MinShares
	if err := m.apply(m.qosCgroup(corev1.PodQOSBurstable), &ResourceConfig{CPUShares: &minShares}); err != nil {
		return nil, err
	}
	return m, nil
}

// Hierarchies returns the hierarchies the Manager keeps pod cgroups in.
func (m *Manager) Hierarchies() []Hierarchy { return slices.Clone(m.hierarchies) }

func (m *Manager) podsCgroup() string { return path.Join(m.root, podsCgroupName) }

// qosCgroup is the cgroup a pod of the class goes in: Guaranteed pods sit
// right in kubepods, the others in their tier.
func (m *Manager) qosCgroup(class corev1.PodQOSClass) string {
	switch class {
	case corev1.PodQOSBurstable:
		return path.Join(m.podsCgroup(), burstableCgroupName)
	case corev1.PodQOSBestEffort:
		return path.Join(m.podsCgroup(), bestEffortCgroupName)
	}
	return m.podsCgroup()
}

// legacyPodCgroup is where pods were put before the QoS tiers, right
// under the root; such pods keep their cgroup until they go.
func (m *Manager) legacyPodCgroup(uid types.UID) string {
	return path.Join(m.root, podPrefix+string(uid))
}

// podCgroups are every place a pod's cgroup may be.
func (m *Manager) podCgroups(uid types.UID) []string {
	name := podPrefix + string(uid)
	return []string{
		m.legacyPodCgroup(uid),
		path.Join(m.qosCgroup(corev1.PodQOSGuaranteed), name),
		path.Join(m.qosCgroup(corev1.PodQOSBurstable), name),
		path.Join(m.qosCgroup(corev1.PodQOSBestEffort), name),
	}
}

// PodCgroupParent is the pod's cgroup, as the sandbox's CgroupParent takes
// it with the cgroupfs driver: in its QoS tier, or where an older nodelet
// put it if it is still there.
func (m *Manager) PodCgroupParent(pod *corev1.Pod) string {
	legacy := m.legacyPodCgroup(pod.UID)
	if _, err := os.Stat(cgroupDir(m.hierarchies[0], legacy)); err == nil {
		return legacy
	}
	return path.Join(m.qosCgroup(podutil.PodQOS(pod)), podPrefix+string(pod.UID))
}

// EnsurePod makes sure the pod's cgroup exists in every hierarchy, limited
// by ResourceConfigForPod when it is made (a cgroup already there keeps its
// limits), and counts the pod in its tier's shares. It is idempotent.
func (m *Manager) EnsurePod(pod *corev1.Pod) error {
	if err := m.updateBurstable(pod.UID, BurstableCPUMilli(pod)); err != nil {
		return fmt.Errorf("updating the burstable tier for pod %s: %w", pod.UID, err)
	}
	cgroup := m.PodCgroupParent(pod)
	if m.exists(cgroup) {
		return nil
	}
	for _, h := range m.hierarchies {
		if err := m.ensure(h, cgroup); err != nil {
			return fmt.Errorf("creating the cgroup of pod %s: %w", pod.UID, err)
		}
	}
	if err := m.apply(cgroup, ResourceConfigForPod(pod, m.podPidsLimit)); err != nil {
		return fmt.Errorf("limiting the cgroup of pod %s: %w", pod.UID, err)
	}
	return nil
}

func (m *Manager) exists(cgroup string) bool {
	for _, h := range m.hierarchies {
		if _, err := os.Stat(cgroupDir(h, cgroup)); err != nil {
			return false
		}
	}
	return true
}

// updateBurstable sets the pod's share of the burstable tier (zero takes
// it out) and writes the tier's cpu.shares when their sum changes.
func (m *Manager) updateBurstable(uid types.UID, milliCPU int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if milliCPU > 0 {
		m.burstable[uid] = milliCPU
	} else {
		delete(m.burstable, uid)
	}
	var sum int64
	for _, cpu := range m.burstable {
		sum += cpu
	}
	shares := MilliCPUToShares(sum)
	if shares == m.burstableShares {
		return nil
	}
	if err := m.apply(m.qosCgroup(corev1.PodQOSBurstable), &ResourceConfig{CPUShares: &shares}); err != nil {
		return err
	}
	m.burstableShares = shares
	return nil
}

// RemovePod removes the pod's cgroup from every hierarchy, wherever it is,
// the cgroups the runtime made inside it first, and takes the pod out of
// its tier's shares. A cgroup that still holds processes cannot go: the
// error names it. What is already gone is not an error.
func (m *Manager) RemovePod(uid types.UID) error {
	var errs []error
	if err := m.updateBurstable(uid, 0); err != nil {
		errs = append(errs, err)
	}
	for _, cgroup := range m.podCgroups(uid) {
		for _, h := range m.hierarchies {
			if err := m.removeTree(cgroupDir(h, cgroup)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing the cgroup of pod %s: %w", uid, err)
	}
	return nil
}

// ListPods returns the pods that have a cgroup in any tier (or right under
// the root, as an older nodelet made them) in any hierarchy, sorted, so
// that the ones whose removal stopped half way are found too.
func (m *Manager) ListPods() ([]types.UID, error) {
	seen := map[types.UID]bool{}
	parents := []string{m.root, m.qosCgroup(corev1.PodQOSGuaranteed), m.qosCgroup(corev1.PodQOSBurstable), m.qosCgroup(corev1.PodQOSBestEffort)}
	for _, h := range m.hierarchies {
		for _, parent := range parents {
			dir := cgroupDir(h, parent)
			entries, err := os.ReadDir(dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing pod cgroups in %s: %w", dir, err)
			}
			for _, e := range entries {
				if uid, ok := strings.CutPrefix(e.Name(), podPrefix); ok && e.IsDir() && uid != "" {
					seen[types.UID(uid)] = true
				}
			}
		}
	}
	uids := make([]types.UID, 0, len(seen))
	for uid := range seen {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return uids, nil
}

// unifiedControllers reads the controllers a cgroup2 hierarchy's top
// offers; none when unreadable.
func unifiedControllers(mountPoint string) []string {
	data, err := os.ReadFile(filepath.Join(mountPoint, "cgroup.controllers"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// HostHugePageSizes are the huge page sizes the kernel offers, in bytes.
func HostHugePageSizes() []int64 {
	entries, err := os.ReadDir("/sys/kernel/mm/hugepages")
	if err != nil {
		return nil
	}
	var sizes []int64
	for _, e := range entries {
		kb, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "hugepages-"), "kB")
		if n, err := strconv.ParseInt(kb, 10, 64); ok && err == nil {
			sizes = append(sizes, n*1024)
		}
	}
	slices.Sort(sizes)
	return sizes
}
