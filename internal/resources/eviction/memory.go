package eviction

// memory.available as the kubelet observes it: the node's capacity less
// the root cgroup's working set, as cAdvisor computes it from the root
// memory cgroup's files.

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// RootMemory is what was read of the root memory cgroup.
type RootMemory struct {
	// Unified is true on cgroup v2.
	Unified bool
	// Usage is memory.usage_in_bytes (v1) or memory.current (v2); nil
	// where the file is not there, as at the top of a v2 hierarchy.
	Usage *uint64
	// Stat is memory.stat.
	Stat map[string]uint64
}

// ParseMemoryStat reads memory.stat's "key value" lines.
func ParseMemoryStat(data []byte) (map[string]uint64, error) {
	stat := map[string]uint64{}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(scanner.Text()), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("memory.stat's %s: %w", key, err)
		}
		stat[key] = v
	}
	return stat, scanner.Err()
}

// WorkingSet is the root cgroup's working set, cAdvisor's: the usage less
// the inactive file pages (total_inactive_file on v1, inactive_file on
// v2), never below zero. Where v2's root has no memory.current, the usage
// is its anonymous and file pages (anon + file), as runc's cgroup library
// counts it to match v1's usage_in_bytes.
func (r RootMemory) WorkingSet() uint64 {
	inactiveKey := "total_inactive_file"
	if r.Unified {
		inactiveKey = "inactive_file"
	}
	var usage uint64
	switch {
	case r.Usage != nil:
		usage = *r.Usage
	case r.Unified:
		usage = r.Stat["anon"] + r.Stat["file"]
	}
	if inactive := r.Stat[inactiveKey]; inactive < usage {
		return usage - inactive
	}
	return 0
}

// MemoryAvailable is the memory.available observation: capacity less the
// working set, never below zero.
func MemoryAvailable(capacityBytes int64, workingSet uint64, now time.Time) Observation {
	available := int64(0)
	if workingSet < uint64(max(capacityBytes, 0)) {
		available = capacityBytes - int64(workingSet)
	}
	return Observation{
		Available: *resource.NewQuantity(available, resource.BinarySI),
		Capacity:  *resource.NewQuantity(capacityBytes, resource.BinarySI),
		Time:      now,
	}
}
