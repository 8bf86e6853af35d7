package cgroups

// The Manager with the systemd driver, against fake hierarchies in
// t.TempDir() (fakeV1) and a fake systemd (fakeSystemd, in place of the
// D-Bus connection): systemd makes a slice's folders in the hierarchies
// it manages, as it does on a v1 host, and keeps each unit's properties.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/google/go-cmp/cmp"

	"github.com/nodelet/nodelet/internal/testutil/resources"
)

type fakeSystemd struct {
	t *testing.T
	// managed are the hierarchies systemd makes slices' folders in.
	managed []Hierarchy

	mu      sync.Mutex
	props   map[string]map[string]any
	started []string
	stopped []string
	failOn  string
}

func newFakeSystemd(t *testing.T, hierarchies []Hierarchy) *fakeSystemd {
	var managed []Hierarchy
	for _, h := range hierarchies {
		if h.Unified || h.has("cpu") || h.has("memory") || h.has("pids") || h.has("name=systemd") {
			managed = append(managed, h)
		}
	}
	return &fakeSystemd{t: t, managed: managed, props: map[string]map[string]any{}}
}

func (s *fakeSystemd) StartSlice(_ context.Context, unit string, props []UnitProperty) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if unit == s.failOn {
		return errors.New("fake systemd refuses " + unit)
	}
	if _, ok := s.props[unit]; ok {
		return nil
	}
	dir, err := ExpandSlice(unit)
	if err != nil {
		return err
	}
	for _, h := range s.managed {
		if err := os.MkdirAll(cgroupDir(h, dir), 0o755); err != nil {
			return err
		}
	}
	s.started = append(s.started, unit)
	s.props[unit] = map[string]any{}
	for _, p := range props {
		s.props[unit][p.Name] = p.Value
	}
	return nil
}

func (s *fakeSystemd) SetProperties(_ context.Context, unit string, props []UnitProperty) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.props[unit]; !ok {
		s.props[unit] = map[string]any{}
	}
	for _, p := range props {
		s.props[unit][p.Name] = p.Value
	}
	return nil
}

func (s *fakeSystemd) StopUnit(_ context.Context, unit string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, unit)
	delete(s.props, unit)
	dir, err := ExpandSlice(unit)
	if err != nil {
		return err
	}
	for _, h := range s.managed {
		_ = os.RemoveAll(cgroupDir(h, dir))
	}
	return nil
}

func (s *fakeSystemd) prop(unit, name string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.props[unit][name]
}

func newSystemdManager(t *testing.T, opts Options) (*Manager, []Hierarchy, *fakeSystemd) {
	t.Helper()
	hierarchies := fakeV1(t)
	pids := Hierarchy{MountPoint: filepath.Join(filepath.Dir(hierarchies[0].MountPoint), "pids"), Controllers: []string{"pids"}}
	mustMkdir(t, pids.MountPoint)
	hierarchies = append(hierarchies, pids)
	systemd := newFakeSystemd(t, hierarchies)
	if opts.Root == "" {
		opts.Root = "/"
	}
	opts.Driver, opts.Systemd = DriverSystemd, systemd
	m, err := newManager(opts, hierarchies, nil, fakeRmdir)
	if err != nil {
		t.Fatalf("newManager() error = %v", err)
	}
	return m, hierarchies, systemd
}

func TestSystemdDriverMakesTheTreeAsSlices(t *testing.T) {
	_, hierarchies, systemd := newSystemdManager(t, Options{NodeAllocatable: resources.List("cpu=2,memory=1Gi")})
	if want := []string{"kubepods.slice", "kubepods-burstable.slice", "kubepods-besteffort.slice"}; !cmp.Equal(systemd.started, want) {
		t.Errorf("slices started = %q, want %q", systemd.started, want)
	}
	if got := systemd.prop("kubepods.slice", "CPUShares"); got != uint64(2048) {
		t.Errorf("kubepods.slice CPUShares = %v, want 2048", got)
	}
	if got := systemd.prop("kubepods.slice", "MemoryLimit"); got != uint64(1<<30) {
		t.Errorf("kubepods.slice MemoryLimit = %v, want 1Gi", got)
	}
	if got := systemd.prop("kubepods-besteffort.slice", "Wants"); !cmp.Equal(got, []string{"kubepods.slice"}) {
		t.Errorf("kubepods-besteffort.slice Wants = %v, want kubepods.slice", got)
	}
	// Every hierarchy has the tiers, those systemd leaves alone too, and
	// their files are written where systemd put them.
	for _, h := range hierarchies {
		if _, err := os.Stat(cgroupDir(h, "/kubepods.slice/kubepods-burstable.slice")); err != nil {
			t.Errorf("burstable tier missing in %s: %v", h.MountPoint, err)
		}
	}
	if got := readFile(t, filepath.Join(cgroupDir(hierarchies[0], "/kubepods.slice"), "cpu.shares")); got != "2048" {
		t.Errorf("kubepods.slice cpu.shares = %q, want 2048", got)
	}
	if got := readFile(t, filepath.Join(cgroupDir(hierarchies[1], "/kubepods.slice/kubepods-besteffort.slice"), "cpuset.cpus")); got != "0-3\n" {
		t.Errorf("the besteffort tier's cpuset.cpus = %q, want its parent's", got)
	}
}

func TestSystemdDriverPodSlices(t *testing.T) {
	m, hierarchies, systemd := newSystemdManager(t, Options{PodPidsLimit: 64})
	pod := podWith("12-34", container("a", "cpu=250m,memory=32Mi", "cpu=500m,memory=64Mi"))
	want := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice"
	if got := m.PodCgroupParent(pod); got != want {
		t.Errorf("PodCgroupParent() = %q, want %q", got, want)
	}
	if err := m.EnsurePod(pod); err != nil {
		t.Fatal(err)
	}
	unit := "kubepods-burstable-pod12_34.slice"
	for name, value := range map[string]any{
		"CPUShares": uint64(256), "CPUQuotaPerSecUSec": uint64(500000), "MemoryLimit": uint64(64 << 20),
		"TasksMax": uint64(64), "Wants": []string{"kubepods-burstable.slice"},
	} {
		if got := systemd.prop(unit, name); !cmp.Equal(got, value) {
			t.Errorf("%s %s = %v, want %v", unit, name, got, value)
		}
	}
	for file, want := range map[string]string{
		filepath.Join(cgroupDir(hierarchies[0], want), "cpu.shares"):            "256",
		filepath.Join(cgroupDir(hierarchies[0], want), "cpu.cfs_quota_us"):      "50000",
		filepath.Join(cgroupDir(hierarchies[2], want), "memory.limit_in_bytes"): "67108864",
		filepath.Join(cgroupDir(hierarchies[5], want), "pids.max"):              "64",
	} {
		if got := readFile(t, file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// The tier's shares follow its pods, through systemd as through the file.
	if got := systemd.prop("kubepods-burstable.slice", "CPUShares"); got != uint64(256) {
		t.Errorf("kubepods-burstable.slice CPUShares = %v, want 256", got)
	}
	got, err := m.ListPods()
	if err != nil || !cmp.Equal(got, []types.UID{"12-34"}) {
		t.Errorf("ListPods() = %v, %v; want [12-34]", got, err)
	}

	// The runtime's scope inside, in a hierarchy systemd leaves alone: it
	// goes with the pod.
	mustMkdir(t, filepath.Join(cgroupDir(hierarchies[1], want), "cri-containerd-abc.scope"))
	if err := m.RemovePod(pod.UID); err != nil {
		t.Fatalf("RemovePod() error = %v", err)
	}
	if !slices.Contains(systemd.stopped, unit) {
		t.Errorf("stopped units = %q, want %s among them", systemd.stopped, unit)
	}
	for _, h := range hierarchies {
		if _, err := os.Stat(cgroupDir(h, want)); !os.IsNotExist(err) {
			t.Errorf("pod slice still in %s (stat: %v)", h.MountPoint, err)
		}
	}
	if got := systemd.prop("kubepods-burstable.slice", "CPUShares"); got != uint64(MinShares) {
		t.Errorf("kubepods-burstable.slice CPUShares after the pod went = %v, want %d", got, MinShares)
	}
	if got, err := m.ListPods(); err != nil || len(got) != 0 {
		t.Errorf("ListPods() after removal = %v, %v; want none", got, err)
	}
}

func TestSystemdDriverGuaranteedAndBestEffortPods(t *testing.T) {
	m, _, systemd := newSystemdManager(t, Options{})
	for pod, unit := range map[*corev1.Pod]string{
		guaranteed: "kubepods-poduid_g.slice",
		bestEffort: "kubepods-besteffort-poduid_e.slice",
	} {
		if err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(systemd.started, unit) {
			t.Errorf("slices started = %q, want %s", systemd.started, unit)
		}
	}
	got, err := m.ListPods()
	if err != nil || !cmp.Equal(got, []types.UID{"uid-e", "uid-g"}) {
		t.Errorf("ListPods() = %v, %v; want uid-e and uid-g (the tiers are no pods)", got, err)
	}
}

func TestSystemdDriverUnderARoot(t *testing.T) {
	m, hierarchies, systemd := newSystemdManager(t, Options{Root: "/nodelet-x"})
	if want := []string{"nodelet_x.slice", "nodelet_x-kubepods.slice", "nodelet_x-kubepods-burstable.slice", "nodelet_x-kubepods-besteffort.slice"}; !cmp.Equal(systemd.started, want) {
		t.Errorf("slices started = %q, want %q", systemd.started, want)
	}
	if got, want := m.PodCgroupParent(bestEffort), "/nodelet_x.slice/nodelet_x-kubepods.slice/nodelet_x-kubepods-besteffort.slice/nodelet_x-kubepods-besteffort-poduid_e.slice"; got != want {
		t.Errorf("PodCgroupParent() = %q, want %q", got, want)
	}
	if _, err := os.Stat(cgroupDir(hierarchies[1], "/nodelet_x.slice/nodelet_x-kubepods.slice")); err != nil {
		t.Errorf("the pods' slice missing in cpuset: %v", err)
	}
}

func TestSystemdDriverRefusals(t *testing.T) {
	hierarchies := fakeV1(t)
	for name, opts := range map[string]Options{
		"a root that cannot be a slice name": {Root: "/node_let", Driver: DriverSystemd, Systemd: newFakeSystemd(t, hierarchies)},
		"no connection to systemd":           {Root: "/", Driver: DriverSystemd},
		"an unknown driver":                  {Root: "/", Driver: "openrc"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := newManager(opts, hierarchies, nil, fakeRmdir); err == nil {
				t.Errorf("newManager() = nil error, want a refusal")
			}
		})
	}
	systemd := newFakeSystemd(t, hierarchies)
	systemd.failOn = "kubepods.slice"
	_, err := newManager(Options{Root: "/", Driver: DriverSystemd, Systemd: systemd}, hierarchies, nil, fakeRmdir)
	if err == nil || !strings.Contains(err.Error(), "fake systemd refuses kubepods.slice") {
		t.Errorf("newManager() with systemd refusing the pods' slice = %v, want its error", err)
	}
}

func TestSystemdDriverEnforcesAReservedSlice(t *testing.T) {
	m, hierarchies, systemd := newSystemdManager(t, Options{})
	limits := resources.List("cpu=500m,memory=256Mi")
	if err := m.EnforceExisting("system.slice", limits); err == nil || !strings.Contains(err.Error(), "missing paths") {
		t.Fatalf("EnforceExisting on a missing slice: %v, want it refused", err)
	}
	for _, h := range hierarchies {
		mustMkdir(t, cgroupDir(h, "/system.slice"))
	}
	if err := m.EnforceExisting("system.slice", limits); err != nil {
		t.Fatal(err)
	}
	if got := systemd.prop("system.slice", "MemoryLimit"); got != uint64(256<<20) {
		t.Errorf("system.slice MemoryLimit = %v, want 256Mi", got)
	}
	if got := readFile(t, filepath.Join(cgroupDir(hierarchies[0], "/system.slice"), "cpu.shares")); got != "512" {
		t.Errorf("system.slice cpu.shares = %q, want 512", got)
	}
}

func TestSystemdDriverWritesNoLimitsInTheHybridUnifiedHierarchy(t *testing.T) {
	for driver, want := range map[string]bool{DriverCgroupfs: true, DriverSystemd: false} {
		t.Run(driver, func(t *testing.T) {
			hierarchies := fakeV1(t)
			unified := hierarchies[4]
			// This host's hybrid cgroup2 offers hugetlb, which no v1
			// hierarchy carries.
			writeFile(t, filepath.Join(unified.MountPoint, "cgroup.controllers"), "hugetlb\n")
			opts := Options{Root: "/", Driver: driver}
			if driver == DriverSystemd {
				opts.Systemd = newFakeSystemd(t, hierarchies)
			}
			m, err := newManager(opts, hierarchies, []int64{2 << 20}, fakeRmdir)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.EnsurePod(guaranteed); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(cgroupDir(unified, m.PodCgroupParent(guaranteed)), "hugetlb.2MB.max")
			if _, err := os.Stat(file); (err == nil) != want {
				t.Errorf("%s written = %v, want %v", file, err == nil, want)
			}
		})
	}
}
