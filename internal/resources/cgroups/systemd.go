package cgroups

// The systemd driver's decisions, as pure functions: the kubelet's slice
// names for a cgroup name, the pod UID back out of a pod slice's name, and
// the unit properties that carry a ResourceConfig. The D-Bus calls that
// act on them are in systemd_dbus.go.

import (
	"fmt"
	"math"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// The cgroup drivers, as --cgroup-driver names them.
const (
	DriverCgroupfs = "cgroupfs"
	DriverSystemd  = "systemd"
)

const sliceSuffix = ".slice"

// CgroupName is a cgroup of the kubelet's tree as the list of its
// components ({"kubepods", "burstable", "pod<uid>"}), which each driver
// turns into a path of its own.
type CgroupName []string

// ParseCgroupfsName splits a cgroupfs path (/nodelet/kubepods) into its
// components; "/" is the empty name.
func ParseCgroupfsName(cgroupfs string) CgroupName {
	trimmed := strings.Trim(cgroupfs, "/")
	if trimmed == "" {
		return CgroupName{}
	}
	return CgroupName(strings.Split(trimmed, "/"))
}

// Cgroupfs is the name's cgroupfs path: /kubepods/burstable/pod<uid>.
func (n CgroupName) Cgroupfs() string {
	return "/" + path.Join(n...)
}

// Systemd is the path of the slice systemd makes for the name, each level
// a slice named after all the components above it joined by "-", a "-"
// inside a component written "_" (systemd reads "-" as a level):
// {"kubepods", "burstable", "pod12-34"} is
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice.
// The empty name is the root, "/".
func (n CgroupName) Systemd() string {
	if len(n) == 0 {
		return "/"
	}
	parts := make([]string, len(n))
	for i, component := range n {
		parts[i] = strings.ReplaceAll(component, "-", "_")
	}
	// The escaped components hold no "-": the expansion cannot fail.
	expanded, _ := ExpandSlice(strings.Join(parts, "-") + sliceSuffix)
	return expanded
}

// ValidateSystemdName refuses a name the systemd driver cannot map both
// ways: a component holding "_" (read back as "-"), ".", "/" or nothing.
func ValidateSystemdName(n CgroupName) error {
	for _, component := range n {
		if component == "" || strings.ContainsAny(component, "_./") {
			return fmt.Errorf("cgroup name component %q cannot be a systemd slice name (no '_', '.' or '/', and not empty)", component)
		}
	}
	return nil
}

// ParseSystemdName is the cgroup name of a slice, given by its unit name
// or its path (/system.slice, kubepods-burstable.slice): its last unit's
// levels, "_" read back as "-". "-.slice" and "/" are the root.
func ParseSystemdName(slice string) CgroupName {
	unit := strings.TrimSuffix(path.Base(slice), sliceSuffix)
	if unit == "" || unit == "-" || unit == "/" {
		return CgroupName{}
	}
	parts := strings.Split(unit, "-")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], "_", "-")
	}
	return CgroupName(parts)
}

// ExpandSlice is the cgroup path of a slice unit: every slice sits in the
// slice named by its name less the last "-" level, so a-b-c.slice is
// /a.slice/a-b.slice/a-b-c.slice; -.slice, the root slice, is /.
func ExpandSlice(slice string) (string, error) {
	name, ok := strings.CutSuffix(slice, sliceSuffix)
	if !ok || strings.Contains(name, "/") {
		return "", fmt.Errorf("invalid slice name %q", slice)
	}
	if name == "-" {
		return "/", nil
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
		return "", fmt.Errorf("invalid slice name %q", slice)
	}
	var b strings.Builder
	prefix := ""
	for _, level := range strings.Split(name, "-") {
		b.WriteString("/" + prefix + level + sliceSuffix)
		prefix += level + "-"
	}
	return b.String(), nil
}

// podSliceUID reads the pod UID out of the name of a pod's slice inside
// the tier slice parent (kubepods-burstable-pod12_34.slice in
// kubepods-burstable.slice is pod 12-34): false for anything else, such
// as a tier's slice or a container's scope.
func podSliceUID(parent, name string) (types.UID, bool) {
	prefix := strings.TrimSuffix(path.Base(parent), sliceSuffix) + "-" + podPrefix
	if parent == "/" {
		prefix = podPrefix
	}
	escaped, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", false
	}
	escaped, ok = strings.CutSuffix(escaped, sliceSuffix)
	if !ok || escaped == "" || strings.ContainsAny(escaped, "-.") {
		return "", false
	}
	return types.UID(strings.ReplaceAll(escaped, "_", "-")), true
}

// UnitProperty is one property of a systemd unit, by its D-Bus name, with
// a value of the D-Bus type systemd expects (uint64, bool, string,
// []string).
type UnitProperty struct {
	Name  string
	Value any
}

// unlimited is systemd's "infinity" for the limits given as uint64.
const unlimited = math.MaxUint64

// sliceProperties are the properties of a new slice, as runc gives the
// slices the kubelet makes through it: its description, the parent it
// wants, no default dependencies (it must not wait for, nor stop with,
// the system's targets), accounting on so that its controllers' cgroups
// exist, and its limits. No Delegate: systemd refuses it on slices; runc
// sets it on the containers' scopes.
func sliceProperties(unit, parent string, config *ResourceConfig, unified bool) []UnitProperty {
	props := []UnitProperty{
		{"Description", "nodelet " + unit},
		{"Wants", []string{parent}},
		{"DefaultDependencies", false},
		{"MemoryAccounting", true},
		{"CPUAccounting", true},
		{"TasksAccounting", true},
	}
	if unified {
		props = append(props, UnitProperty{"IOAccounting", true})
	} else {
		props = append(props, UnitProperty{"BlockIOAccounting", true})
	}
	return append(props, resourceProperties(config, unified)...)
}

// resourceProperties are the unit properties that carry config, as runc
// maps a cgroup's resources onto a systemd unit: CPUShares (CPUWeight on
// cgroup2, the kubelet's mapping), CPUQuotaPerSecUSec, MemoryLimit
// (MemoryMax on cgroup2) and TasksMax. Huge pages have no property: their
// files are written as the cgroupfs driver writes them.
func resourceProperties(config *ResourceConfig, unified bool) []UnitProperty {
	var props []UnitProperty
	if config == nil {
		return nil
	}
	if config.CPUShares != nil {
		if unified {
			props = append(props, UnitProperty{"CPUWeight", CPUSharesToWeight(*config.CPUShares)})
		} else {
			props = append(props, UnitProperty{"CPUShares", *config.CPUShares})
		}
	}
	if config.CPUQuota != nil {
		period := uint64(QuotaPeriod)
		if config.CPUPeriod != nil && *config.CPUPeriod > 0 {
			period = *config.CPUPeriod
		}
		props = append(props, UnitProperty{"CPUQuotaPerSecUSec", cpuQuotaPerSecUSec(*config.CPUQuota, period)})
	}
	if config.Memory != nil && *config.Memory > 0 {
		name := "MemoryLimit"
		if unified {
			name = "MemoryMax"
		}
		props = append(props, UnitProperty{name, uint64(*config.Memory)})
	}
	if config.PidsLimit != nil {
		tasks := uint64(unlimited)
		if *config.PidsLimit > 0 {
			tasks = uint64(*config.PidsLimit)
		}
		props = append(props, UnitProperty{"TasksMax", tasks})
	}
	return props
}

// cpuQuotaPerSecUSec is a CFS quota over period as systemd takes it: CPU
// time per second, in microseconds, rounded up to whole 10 ms (systemd
// keeps it as a percentage of a CPU; rounded down, the cgroup would get
// less than the quota). Zero or less is no limit.
func cpuQuotaPerSecUSec(quota int64, period uint64) uint64 {
	if quota <= 0 || period == 0 {
		return unlimited
	}
	perSec := uint64(quota) * 1000000 / period
	if rest := perSec % 10000; rest != 0 {
		perSec += 10000 - rest
	}
	return perSec
}
