package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// The kubelet's names for the cgroups above the pods': with the cgroupfs
// driver they are the folders' names (/kubepods/burstable/pod<uid>), with
// the systemd driver the components of the slices' names
// (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice).
const (
	podsCgroupName       = "kubepods"
	burstableCgroupName  = "burstable"
	bestEffortCgroupName = "besteffort"
)

// Options configure a Manager.
type Options struct {
	// Root is the absolute cgroup path the tree goes under, such as
	// /nodelet, as --cgroup-root names it; with the systemd driver its
	// components name slices (/nodelet is nodelet.slice).
	Root string
	// Driver is how cgroups are made: DriverCgroupfs (the default, when
	// empty) or DriverSystemd.
	Driver string
	// Systemd is how the systemd driver reaches systemd; nil connects to
	// the machine's (New).
	Systemd Systemd
	// PodPidsLimit above zero limits each pod's processes.
	PodPidsLimit int64
	// NodeAllocatable is what the pods together may use: the kubepods
	// cgroup's limits (cpu, memory, pid, hugepages-*).
	NodeAllocatable corev1.ResourceList
	// Within is a cgroup above Root that someone else made and the
	// Manager never makes (fence.go): the pod's cgroup a companion node's
	// pods go inside. Empty: every ancestor of Root is made as needed.
	Within string
}

// Manager creates, limits and removes the pod cgroups and the QoS tiers
// above them, in every hierarchy.
type Manager struct {
	root string
	// rootName is root's components.
	rootName CgroupName
	// systemd is nil with the cgroupfs driver; with the systemd driver,
	// every cgroup of the tree is a slice systemd makes, changes and
	// stops, whose files are then written as the cgroupfs driver's.
	systemd Systemd
	// unified is true on the pure cgroup2 layout: the properties systemd
	// takes for the limits are cgroup2's there.
	unified       bool
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
	// unlimited are the pods whose cgroup was made but whose limits could
	// not all be written: the next EnsurePod writes them again.
	unlimited map[types.UID]bool
	// within is Options.Within, fencedIn the hierarchies it is fenced
	// in; sealed, once set, is why no pod cgroup may be made or used any
	// more (Seal).
	within   string
	fencedIn map[string]bool
	sealed   error
}

// New detects the host's cgroup hierarchies from /proc/self/mountinfo and
// its huge page sizes, and returns a Manager with the tree made and its top
// limited.
func New(opts Options) (*Manager, error) {
	hierarchies, err := HostHierarchies()
	if err != nil {
		return nil, err
	}
	if opts.Driver == DriverSystemd && opts.Systemd == nil {
		if opts.Systemd, err = ConnectSystemd(); err != nil {
			return nil, err
		}
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
	if err := validateWithin(opts.Within, root); err != nil {
		return nil, err
	}
	fencedIn, err := fenceHierarchies(opts.Within, hierarchies)
	if err != nil {
		return nil, err
	}
	if len(hierarchies) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	rootName := ParseCgroupfsName(root)
	switch opts.Driver {
	case "", DriverCgroupfs:
	case DriverSystemd:
		if opts.Systemd == nil {
			return nil, errors.New("the systemd cgroup driver needs a connection to systemd")
		}
		if err := ValidateSystemdName(rootName); err != nil {
			return nil, fmt.Errorf("cgroup root %q with the systemd driver: %w", root, err)
		}
	default:
		return nil, fmt.Errorf("unknown cgroup driver %q (want %s or %s)", opts.Driver, DriverCgroupfs, DriverSystemd)
	}
	hierarchies = slices.Clone(hierarchies)
	unified := len(hierarchies) == 1 && hierarchies[0].Unified
	for i, h := range hierarchies {
		// The hybrid layout's cgroup2 hierarchy may offer the
		// controllers no v1 hierarchy has (hugetlb, say). With the
		// systemd driver it is systemd's, which tracks processes there
		// and manages its cgroups' subtree_control: nodelet writes no
		// limits in it, as runc's v1 systemd manager writes none.
		if h.Unified && len(h.Controllers) == 0 && (unified || opts.Driver != DriverSystemd) {
			hierarchies[i].Controllers = unifiedControllers(h.MountPoint)
		}
	}
	m := &Manager{
		root: root, rootName: rootName, systemd: opts.Systemd, unified: unified,
		hierarchies: hierarchies, podPidsLimit: opts.PodPidsLimit,
		hugePageSizes: hugePageSizes, rmdir: rmdir, burstable: map[types.UID]int64{},
		unlimited: map[types.UID]bool{}, within: opts.Within, fencedIn: fencedIn,
	}
	if opts.Driver != DriverSystemd {
		m.systemd = nil
	}
	if err := m.setUpWithin(); err != nil {
		return nil, err
	}
	minShares := uint64(MinShares)
	for _, level := range []struct {
		name   CgroupName
		config *ResourceConfig
		what   string
	}{
		{m.child(), nil, "the cgroup root"},
		{m.child(podsCgroupName), NodeAllocatableConfig(opts.NodeAllocatable), "the pods' cgroup (to the node's allocatable resources)"},
		{m.child(podsCgroupName, burstableCgroupName), &ResourceConfig{CPUShares: &minShares}, "the burstable tier"},
		{m.child(podsCgroupName, bestEffortCgroupName), &ResourceConfig{CPUShares: &minShares}, "the besteffort tier"},
	} {
		if err := m.make(level.name, level.config); err != nil {
			return nil, fmt.Errorf("making %s: %w", level.what, err)
		}
		// Made before, the cgroup keeps its old limits until set.
		if err := m.set(m.path(level.name), level.config); err != nil {
			return nil, fmt.Errorf("limiting %s: %w", level.what, err)
		}
	}
	m.burstableShares = MinShares
	return m, nil
}

// child is the name of a cgroup under the root.
func (m *Manager) child(components ...string) CgroupName {
	return append(slices.Clone(m.rootName), components...)
}

// path is where the driver puts the cgroup of name, below each
// hierarchy's mount point.
func (m *Manager) path(name CgroupName) string {
	if m.systemd != nil {
		return name.Systemd()
	}
	return name.Cgroupfs()
}

// make creates the cgroup of name in every hierarchy (its parent must
// exist). With the systemd driver, systemd makes it first, as a slice
// with config's limits, and the hierarchies systemd leaves alone (cpuset,
// freezer, ...) get the folder the runtime expects, as runc does.
func (m *Manager) make(name CgroupName, config *ResourceConfig) error {
	defer kubeletmetrics.ObserveCgroupManagerOperation("create", time.Now())
	cgroup := m.path(name)
	if m.systemd != nil && cgroup != "/" {
		unit, parent := path.Base(cgroup), path.Base(path.Dir(cgroup))
		if parent == "/" {
			parent = "-.slice"
		}
		ctx, cancel := context.WithTimeout(context.Background(), systemdCallTimeout)
		defer cancel()
		if err := m.systemd.StartSlice(ctx, unit, sliceProperties(unit, parent, config, m.unified)); err != nil {
			return err
		}
	}
	for _, h := range m.hierarchies {
		if err := m.ensure(h, cgroup); err != nil {
			return err
		}
	}
	return nil
}

// set limits a cgroup to config: with the systemd driver through its
// slice's properties first (or systemd would put its own values back),
// then through the cgroup's files, as the kubelet's runc library does.
func (m *Manager) set(cgroup string, config *ResourceConfig) error {
	if config == nil {
		return nil
	}
	defer kubeletmetrics.ObserveCgroupManagerOperation("update", time.Now())
	if props := resourceProperties(config, m.unified); m.systemd != nil && cgroup != "/" && len(props) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), systemdCallTimeout)
		defer cancel()
		if err := m.systemd.SetProperties(ctx, path.Base(cgroup), props); err != nil {
			return err
		}
	}
	return m.apply(cgroup, config)
}

// Hierarchies returns the hierarchies the Manager keeps pod cgroups in.
func (m *Manager) Hierarchies() []Hierarchy { return slices.Clone(m.hierarchies) }

// qosName is the name of the cgroup a pod of the class goes in:
// Guaranteed pods sit right in kubepods, the others in their tier.
func (m *Manager) qosName(class corev1.PodQOSClass) CgroupName {
	switch class {
	case corev1.PodQOSBurstable:
		return m.child(podsCgroupName, burstableCgroupName)
	case corev1.PodQOSBestEffort:
		return m.child(podsCgroupName, bestEffortCgroupName)
	}
	return m.child(podsCgroupName)
}

func (m *Manager) qosCgroup(class corev1.PodQOSClass) string { return m.path(m.qosName(class)) }

func (m *Manager) podName(class corev1.PodQOSClass, uid types.UID) CgroupName {
	return append(m.qosName(class), podPrefix+string(uid))
}

// legacyPodCgroup is where pods were put before the QoS tiers, right
// under the root; such pods keep their cgroup until they go. Only the
// cgroupfs driver ever put them there.
func (m *Manager) legacyPodCgroup(uid types.UID) string {
	return path.Join(m.root, podPrefix+string(uid))
}

// podCgroups are every place a pod's cgroup may be.
func (m *Manager) podCgroups(uid types.UID) []string {
	var cgroups []string
	if m.systemd == nil {
		cgroups = append(cgroups, m.legacyPodCgroup(uid))
	}
	for _, class := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		cgroups = append(cgroups, m.path(m.podName(class, uid)))
	}
	return cgroups
}

// PodCgroupParent is the pod's cgroup, as the sandbox's CgroupParent takes
// it: in its QoS tier, or, with the cgroupfs driver, where an older
// nodelet put it if it is still there. With the systemd driver it is the
// slice's path (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice),
// whose last element is the slice runc puts the containers' scopes in,
// as the kubelet gives it.
func (m *Manager) PodCgroupParent(pod *corev1.Pod) string {
	if m.systemd == nil {
		legacy := m.legacyPodCgroup(pod.UID)
		if _, err := os.Stat(cgroupDir(m.hierarchies[0], legacy)); err == nil {
			return legacy
		}
	}
	return m.path(m.podName(podutil.PodQOS(pod), pod.UID))
}

// EnsurePod makes sure the pod's cgroup exists in every hierarchy, limited
// by ResourceConfigForPod when it is made (a cgroup already there keeps its
// limits, which an in-place resize may have changed, unless writing them
// failed when it was made), and counts the pod in its tier's shares. It is
// idempotent. A sealed Manager refuses every pod (Seal).
func (m *Manager) EnsurePod(pod *corev1.Pod) error {
	if err := m.sealedBy(); err != nil {
		return fmt.Errorf("the cgroup of pod %s: %w", pod.UID, err)
	}
	if err := m.updateBurstable(pod.UID, BurstableCPUMilli(pod)); err != nil {
		return fmt.Errorf("updating the burstable tier for pod %s: %w", pod.UID, err)
	}
	cgroup := m.PodCgroupParent(pod)
	if m.exists(cgroup) && !m.isUnlimited(pod.UID) {
		return nil
	}
	config := ResourceConfigForPod(pod, m.podPidsLimit)
	// Until the limits are written, the pod's cgroup is not done: a
	// failure below leaves it to the next call.
	m.setUnlimited(pod.UID, true)
	if err := m.make(m.podName(podutil.PodQOS(pod), pod.UID), config); err != nil {
		return fmt.Errorf("creating the cgroup of pod %s: %w", pod.UID, err)
	}
	if err := m.apply(cgroup, config); err != nil {
		return fmt.Errorf("limiting the cgroup of pod %s: %w", pod.UID, err)
	}
	m.setUnlimited(pod.UID, false)
	return nil
}

func (m *Manager) isUnlimited(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unlimited[uid]
}

func (m *Manager) setUnlimited(uid types.UID, unlimited bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if unlimited {
		m.unlimited[uid] = true
	} else {
		delete(m.unlimited, uid)
	}
}

// anyExists is true when the cgroup is in any hierarchy.
func (m *Manager) anyExists(cgroup string) bool {
	for _, h := range m.hierarchies {
		if _, err := os.Stat(cgroupDir(h, cgroup)); err == nil {
			return true
		}
	}
	return false
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
	if err := m.set(m.qosCgroup(corev1.PodQOSBurstable), &ResourceConfig{CPUShares: &shares}); err != nil {
		return err
	}
	m.burstableShares = shares
	return nil
}

// RemovePod removes the pod's cgroup from every hierarchy, wherever it is,
// the cgroups the runtime made inside it first, and takes the pod out of
// its tier's shares. With the systemd driver, systemd stops the pod's
// slice first (and the containers' scopes in it); what it leaves (the
// folders of the hierarchies it does not manage, processes it could not
// stop) goes as with the cgroupfs driver. A cgroup that still holds
// processes cannot go: the error names it. What is already gone is not an
// error.
func (m *Manager) RemovePod(uid types.UID) error {
	defer kubeletmetrics.ObserveCgroupManagerOperation("destroy", time.Now())
	var errs []error
	if err := m.updateBurstable(uid, 0); err != nil {
		errs = append(errs, err)
	}
	m.setUnlimited(uid, false)
	for _, cgroup := range m.podCgroups(uid) {
		if m.systemd != nil && m.anyExists(cgroup) {
			ctx, cancel := context.WithTimeout(context.Background(), systemdCallTimeout)
			err := m.systemd.StopUnit(ctx, path.Base(cgroup))
			cancel()
			if err != nil {
				errs = append(errs, err)
			}
		}
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
