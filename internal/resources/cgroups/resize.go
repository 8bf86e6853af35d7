package cgroups

// A pod cgroup's CPU and memory limits read back and changed in place, for
// an in-place resize.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodConfig reads what the pod's cgroup is limited to now, from the first
// hierarchy carrying each controller: CPU shares (from cgroup2's weight,
// the mapping inverted), the CFS quota (-1 when unlimited) and the memory
// limit (math.MaxInt64 when unlimited, as cgroup v1's largest value is).
func (m *Manager) PodConfig(pod *corev1.Pod) (*ResourceConfig, error) {
	cgroup := m.PodCgroupParent(pod)
	config := &ResourceConfig{}
	read := func(h Hierarchy, file string) (string, error) {
		data, err := os.ReadFile(filepath.Join(cgroupDir(h, cgroup), file))
		if err != nil {
			return "", fmt.Errorf("reading the cgroup of pod %s: %w", pod.UID, err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	for _, h := range m.hierarchies {
		if h.has("cpu") && config.CPUShares == nil {
			if err := readCPU(h, read, config); err != nil {
				return nil, err
			}
		}
		if h.has("memory") && config.Memory == nil {
			file := "memory.limit_in_bytes"
			if h.Unified {
				file = "memory.max"
			}
			s, err := read(h, file)
			if err != nil {
				return nil, err
			}
			memory := parseLimit(s)
			config.Memory = &memory
		}
	}
	return config, nil
}

func readCPU(h Hierarchy, read func(Hierarchy, string) (string, error), config *ResourceConfig) error {
	quota := int64(-1)
	var shares uint64
	if h.Unified {
		s, err := read(h, "cpu.weight")
		if err != nil {
			return err
		}
		weight, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("reading cpu.weight %q: %w", s, err)
		}
		shares = weightToShares(weight)
		s, err = read(h, "cpu.max")
		if err != nil {
			return err
		}
		if fields := strings.Fields(s); len(fields) > 0 && fields[0] != "max" {
			if quota, err = strconv.ParseInt(fields[0], 10, 64); err != nil {
				return fmt.Errorf("reading cpu.max %q: %w", s, err)
			}
		}
	} else {
		s, err := read(h, "cpu.shares")
		if err != nil {
			return err
		}
		if shares, err = strconv.ParseUint(s, 10, 64); err != nil {
			return fmt.Errorf("reading cpu.shares %q: %w", s, err)
		}
		s, err = read(h, "cpu.cfs_quota_us")
		if err != nil {
			return err
		}
		if quota, err = strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Errorf("reading cpu.cfs_quota_us %q: %w", s, err)
		}
	}
	config.CPUShares, config.CPUQuota = &shares, &quota
	return nil
}

// parseLimit reads a memory limit: "max", or a number of bytes.
func parseLimit(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if s == "max" || err != nil {
		return math.MaxInt64
	}
	return v
}

// weightToShares inverts CPUSharesToWeight, closely enough to order
// values: a resize only needs to know which way a value moves.
func weightToShares(weight uint64) uint64 {
	weight = max(weight, 1)
	return MinShares + (weight-1)*(MaxShares-MinShares)/(maxWeight-1)
}

// SetPodConfig writes config's set fields to the pod's cgroup (and, with
// the systemd driver, to its slice's properties).
func (m *Manager) SetPodConfig(pod *corev1.Pod, config *ResourceConfig) error {
	if config.CPUShares != nil {
		if err := m.updateBurstable(pod.UID, BurstableCPUMilli(pod)); err != nil {
			return fmt.Errorf("updating the burstable tier for pod %s: %w", pod.UID, err)
		}
	}
	return m.set(m.PodCgroupParent(pod), config)
}
