package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// cgroupFile is one control file's name and the value written to it.
type cgroupFile struct {
	name, value string
}

// apply writes config to cgroup's control files in every hierarchy whose
// controller each limit needs.
func (m *Manager) apply(cgroup string, config *ResourceConfig) error {
	var errs []error
	for _, h := range m.hierarchies {
		dir := cgroupDir(h, cgroup)
		for _, f := range configFiles(h, config, m.hugePageSizes) {
			if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.value), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("writing %q to %s: %w", f.value, filepath.Join(dir, f.name), err))
			}
		}
	}
	return errors.Join(errs...)
}

// configFiles are the control files that carry config in h, in the order
// they are written: cgroup v1's (cpu.shares, cpu.cfs_quota_us,
// memory.limit_in_bytes, ...) or cgroup2's (cpu.weight from the shares,
// cpu.max, memory.max, ...). A hierarchy without the controller carries
// nothing. Huge page limits cover every size the host has, a size config
// leaves out limited to nothing, as the kubelet does; a nil
// HugePageLimit leaves them all as they are.
func configFiles(h Hierarchy, config *ResourceConfig, hugePageSizes []int64) []cgroupFile {
	var files []cgroupFile
	add := func(name, value string) { files = append(files, cgroupFile{name, value}) }
	if h.has("cpu") {
		if config.CPUShares != nil {
			if h.Unified {
				add("cpu.weight", strconv.FormatUint(CPUSharesToWeight(*config.CPUShares), 10))
			} else {
				add("cpu.shares", strconv.FormatUint(*config.CPUShares, 10))
			}
		}
		switch {
		case h.Unified && (config.CPUQuota != nil || config.CPUPeriod != nil):
			quota, period := "max", strconv.FormatUint(QuotaPeriod, 10)
			if config.CPUQuota != nil && *config.CPUQuota > 0 {
				quota = strconv.FormatInt(*config.CPUQuota, 10)
			}
			if config.CPUPeriod != nil {
				period = strconv.FormatUint(*config.CPUPeriod, 10)
			}
			add("cpu.max", quota+" "+period)
		case !h.Unified:
			// The period first: the kernel checks a quota against it.
			if config.CPUPeriod != nil {
				add("cpu.cfs_period_us", strconv.FormatUint(*config.CPUPeriod, 10))
			}
			if config.CPUQuota != nil && *config.CPUQuota != 0 {
				add("cpu.cfs_quota_us", strconv.FormatInt(*config.CPUQuota, 10))
			}
		}
	}
	if h.has("memory") && config.Memory != nil && *config.Memory > 0 {
		if h.Unified {
			add("memory.max", strconv.FormatInt(*config.Memory, 10))
		} else {
			add("memory.limit_in_bytes", strconv.FormatInt(*config.Memory, 10))
		}
	}
	if h.has("pids") && config.PidsLimit != nil {
		value := "max"
		if *config.PidsLimit > 0 {
			value = strconv.FormatInt(*config.PidsLimit, 10)
		}
		add("pids.max", value)
	}
	if h.has("hugetlb") && config.HugePageLimit != nil {
		for _, size := range hugePageSizes {
			file := "hugetlb." + HugePageSizeName(size) + ".limit_in_bytes"
			if h.Unified {
				file = "hugetlb." + HugePageSizeName(size) + ".max"
			}
			add(file, strconv.FormatInt(config.HugePageLimit[size], 10))
		}
	}
	return files
}

// EnforceExisting limits a cgroup nodelet did not make, such as the one of
// the system's daemons, to limits (cpu as shares, memory, pid, huge
// pages), as the kubelet enforces --system-reserved on
// --system-reserved-cgroup. The cgroup must exist in every hierarchy that
// carries one of the limits: nodelet never makes it, since what runs in it
// is not nodelet's. With the systemd driver the cgroup is named as a
// slice (system.slice, or /system.slice), as the kubelet takes it there,
// and its unit's properties are set too.
func (m *Manager) EnforceExisting(cgroup string, limits corev1.ResourceList) error {
	if m.systemd != nil {
		cgroup = ParseSystemdName(cgroup).Systemd()
	}
	config := NodeAllocatableConfig(limits)
	var missing []string
	for _, h := range m.hierarchies {
		if len(configFiles(h, config, m.hugePageSizes)) == 0 {
			continue
		}
		if dir := cgroupDir(h, cgroup); !isDir(dir) {
			missing = append(missing, dir)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroup %q has some missing paths: %v", cgroup, missing)
	}
	return m.set(cgroup, config)
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
