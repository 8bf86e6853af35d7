package eviction

// The signals of a node that has a share of the machine, not the machine:
// a companion node in a DaemonSet pod (docs/installation.md, "As a DaemonSet").

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// NodeFsShare is nodefs.available of a node whose ephemeral storage is a
// share of the file system (capacityBytes), not its size: what the share
// has left after the pods' use (used, their writable layers, logs and
// local volumes), and never more than the file system itself has free —
// the host's other users may have taken it. Thresholds given as a
// percentage are then of the share, as the node's capacity is. fs is the
// file system's own observation.
func NodeFsShare(fs Observation, capacityBytes int64, used resource.Quantity) Observation {
	available := *resource.NewQuantity(capacityBytes, resource.BinarySI)
	available.Sub(used)
	if fs.Available.Cmp(available) < 0 {
		available = fs.Available.DeepCopy()
	}
	if available.Sign() < 0 {
		available = *resource.NewQuantity(0, resource.BinarySI)
	}
	return Observation{Available: available, Capacity: *resource.NewQuantity(capacityBytes, resource.BinarySI), Time: fs.Time}
}

// PodsEphemeralStorage is what the pods use of the node's ephemeral
// storage in all: the sum of each pod's measured use.
func PodsEphemeralStorage(usage Usage) resource.Quantity {
	total := *resource.NewQuantity(0, resource.BinarySI)
	for _, u := range usage {
		if u.EphemeralStorage != nil {
			total.Add(*u.EphemeralStorage)
		}
	}
	return total
}

// PIDShare is pid.available of a node whose processes are held to a
// cgroup's limit (maxPID, its pids.max) rather than the machine's: the
// limit less the tasks in the cgroup (its pids.current).
func PIDShare(maxPID, current int64, now time.Time) Observation {
	return Observation{
		Available: *resource.NewQuantity(max(maxPID-current, 0), resource.DecimalSI),
		Capacity:  *resource.NewQuantity(maxPID, resource.DecimalSI),
		Time:      now,
	}
}
