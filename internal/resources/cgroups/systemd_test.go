package cgroups

// The systemd driver's pure decisions: slice names and unit properties.
// The Manager over a fake systemd is in systemd_manager_test.go.

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestCgroupNameToSystemd(t *testing.T) {
	for name, tc := range map[string]struct {
		name CgroupName
		want string
	}{
		"the root":              {CgroupName{}, "/"},
		"the pods' cgroup":      {CgroupName{"kubepods"}, "/kubepods.slice"},
		"a tier":                {CgroupName{"kubepods", "burstable"}, "/kubepods.slice/kubepods-burstable.slice"},
		"a pod, dashes escaped": {CgroupName{"kubepods", "burstable", "pod1234-abcd-5678-efgh"}, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678_efgh.slice"},
		"a guaranteed pod":      {CgroupName{"kubepods", "pod12-34"}, "/kubepods.slice/kubepods-pod12_34.slice"},
		"under a root with a dash": {CgroupName{"nodelet-e2e", "kubepods"},
			"/nodelet_e2e.slice/nodelet_e2e-kubepods.slice"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.name.Systemd(); got != tc.want {
				t.Errorf("Systemd() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseSystemdName(t *testing.T) {
	for in, want := range map[string]CgroupName{
		"system.slice":  {"system"},
		"/system.slice": {"system"},
		"-.slice":       {},
		"/":             {},
		"/kubepods.slice/kubepods-burstable.slice": {"kubepods", "burstable"},
		"kubepods-besteffort-pod12_34.slice":       {"kubepods", "besteffort", "pod12-34"},
	} {
		if got := ParseSystemdName(in); !cmp.Equal(got, want) {
			t.Errorf("ParseSystemdName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCgroupfsName(t *testing.T) {
	for in, want := range map[string]CgroupName{
		"/":            {},
		"/nodelet":     {"nodelet"},
		"/a/b":         {"a", "b"},
		"/nodelet-e2e": {"nodelet-e2e"},
	} {
		if got := ParseCgroupfsName(in); !cmp.Equal(got, want) {
			t.Errorf("ParseCgroupfsName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExpandSlice(t *testing.T) {
	for in, want := range map[string]string{
		"-.slice":        "/",
		"a.slice":        "/a.slice",
		"a-b-c.slice":    "/a.slice/a-b.slice/a-b-c.slice",
		"system.slice":   "/system.slice",
		"a-b_c_d.slice":  "/a.slice/a-b_c_d.slice",
		"kubepods.slice": "/kubepods.slice",
	} {
		got, err := ExpandSlice(in)
		if err != nil || got != want {
			t.Errorf("ExpandSlice(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"a", "a.scope", ".slice", "-a.slice", "a-.slice", "a--b.slice", "a/b.slice"} {
		if got, err := ExpandSlice(bad); err == nil {
			t.Errorf("ExpandSlice(%q) = %q, want an error", bad, got)
		}
	}
}

func TestValidateSystemdName(t *testing.T) {
	for _, ok := range []CgroupName{{}, {"nodelet"}, {"nodelet-e2e-2", "kubepods"}} {
		if err := ValidateSystemdName(ok); err != nil {
			t.Errorf("ValidateSystemdName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []CgroupName{{"node_let"}, {"kubelet.slice"}, {""}} {
		if err := ValidateSystemdName(bad); err == nil {
			t.Errorf("ValidateSystemdName(%q) = nil, want an error", bad)
		}
	}
}

func TestPodSliceUID(t *testing.T) {
	for name, tc := range map[string]struct {
		parent, entry string
		want          types.UID
		ok            bool
	}{
		"a burstable pod":       {"/kubepods.slice/kubepods-burstable.slice", "kubepods-burstable-pod12_34.slice", "12-34", true},
		"a guaranteed pod":      {"/kubepods.slice", "kubepods-pod12_34.slice", "12-34", true},
		"a tier is no pod":      {"/kubepods.slice", "kubepods-burstable.slice", "", false},
		"a pod of another tier": {"/kubepods.slice/kubepods-burstable.slice", "kubepods-besteffort-pod1.slice", "", false},
		"a container's scope":   {"/kubepods.slice/kubepods-burstable.slice", "cri-containerd-abc.scope", "", false},
		"no UID":                {"/kubepods.slice", "kubepods-pod.slice", "", false},
		"under a root":          {"/n.slice/n-kubepods.slice", "n-kubepods-pod9.slice", "9", true},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := podSliceUID(tc.parent, tc.entry)
			if got != tc.want || ok != tc.ok {
				t.Errorf("podSliceUID(%q, %q) = %q, %v; want %q, %v", tc.parent, tc.entry, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestResourceProperties(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	i := func(v int64) *int64 { return &v }
	for name, tc := range map[string]struct {
		config  *ResourceConfig
		unified bool
		want    []UnitProperty
	}{
		"nothing": {&ResourceConfig{}, false, nil},
		"a guaranteed pod on cgroup v1": {
			&ResourceConfig{CPUShares: u(512), CPUQuota: i(50000), CPUPeriod: u(100000), Memory: i(64 << 20), PidsLimit: i(100)}, false,
			[]UnitProperty{{"CPUShares", uint64(512)}, {"CPUQuotaPerSecUSec", uint64(500000)}, {"MemoryLimit", uint64(64 << 20)}, {"TasksMax", uint64(100)}},
		},
		"the same on cgroup v2": {
			&ResourceConfig{CPUShares: u(512), CPUQuota: i(50000), CPUPeriod: u(100000), Memory: i(64 << 20), PidsLimit: i(100)}, true,
			[]UnitProperty{{"CPUWeight", uint64(20)}, {"CPUQuotaPerSecUSec", uint64(500000)}, {"MemoryMax", uint64(64 << 20)}, {"TasksMax", uint64(100)}},
		},
		"a fraction of 10 ms rounds up": {
			&ResourceConfig{CPUQuota: i(33333), CPUPeriod: u(100000)}, false,
			[]UnitProperty{{"CPUQuotaPerSecUSec", uint64(340000)}},
		},
		"no quota is unlimited": {
			&ResourceConfig{CPUQuota: i(-1)}, false,
			[]UnitProperty{{"CPUQuotaPerSecUSec", uint64(math.MaxUint64)}},
		},
		"pids unlimited": {
			&ResourceConfig{PidsLimit: i(-1)}, false,
			[]UnitProperty{{"TasksMax", uint64(math.MaxUint64)}},
		},
		"no memory limit sets none": {
			&ResourceConfig{Memory: i(0)}, false, nil,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resourceProperties(tc.config, tc.unified)); diff != "" {
				t.Errorf("resourceProperties() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSliceProperties(t *testing.T) {
	shares := uint64(2)
	got := sliceProperties("kubepods-besteffort.slice", "kubepods.slice", &ResourceConfig{CPUShares: &shares}, false)
	want := []UnitProperty{
		{"Description", "nodelet kubepods-besteffort.slice"},
		{"Wants", []string{"kubepods.slice"}},
		{"DefaultDependencies", false},
		{"MemoryAccounting", true},
		{"CPUAccounting", true},
		{"TasksAccounting", true},
		{"BlockIOAccounting", true},
		{"CPUShares", uint64(2)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sliceProperties() mismatch (-want +got):\n%s", diff)
	}
	for _, p := range got {
		if p.Name == "Delegate" {
			t.Errorf("a slice got Delegate, which systemd refuses on slices")
		}
	}
}
