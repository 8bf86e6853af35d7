package volume

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// What the stats of a pod's volumes report, and when they are measured
// again: decisions over plain values. The measuring is in usage_linux.go,
// the cache in stats.go.

// DefaultStatsPeriod is how long a volume's measured usage is served
// before it is measured again, the kubelet's volumeStatsAggPeriod.
const DefaultStatsPeriod = time.Minute

// usageMethod is how a volume's usage is measured, as the kubelet's
// metrics providers measure each type.
type usageMethod int

const (
	// usageNone: not reported (hostPath: the node's files, not the
	// pod's; the kubelet reports none either).
	usageNone usageMethod = iota
	// usageWalk: the files under the volume are counted (the kubelet's
	// du), and the file system it lies on gives capacity and what is
	// free: emptyDir and the volumes written from the API, which share
	// the node's file system or a small tmpfs.
	usageWalk
	// usageFileSystem: the volume is a file system of its own, whose
	// statfs is its usage (the kubelet's statfs, for local volumes).
	usageFileSystem
	// usageCSI: the volume's driver is asked (NodeGetVolumeStats), when
	// its node service has GET_VOLUME_STATS; else none is reported, as
	// by the kubelet.
	usageCSI
	// usageDevice: a local block volume's device, whose size is its
	// capacity and nothing else (the kubelet's metricsBlock: used,
	// available and inodes are reported as zero).
	usageDevice
)

// volumeUsageMethod is how vol's usage is measured.
func volumeUsageMethod(vol *corev1.Volume) usageMethod {
	switch {
	case vol.EmptyDir != nil, vol.ConfigMap != nil, vol.Secret != nil, vol.DownwardAPI != nil, vol.Projected != nil:
		return usageWalk
	}
	return usageNone
}

// claimUsageMethod is how a persistent volume's usage is measured: by its
// file system when it is one of its own (a mount point), else by walking
// it, so that a claim on a folder of the node's disk does not report the
// whole disk as used. Types whose files are the node's report none.
func claimUsageMethod(ownFileSystem, reported bool) usageMethod {
	switch {
	case !reported:
		return usageNone
	case ownFileSystem:
		return usageFileSystem
	}
	return usageWalk
}

// fsInfo is what statfs says of a file system, in bytes and inodes.
type fsInfo struct {
	capacity, available, used uint64
	inodes, inodesFree        uint64
}

// usage is one measurement of a volume.
type usage struct {
	at time.Time
	fs fsInfo
	// walked is set when used and inodesUsed are the volume's own (its
	// files counted, or its CSI driver's figures) rather than derived
	// from the file system's.
	walked           bool
	used, inodesUsed uint64
	// abnormal is the volume's condition as its CSI driver reports it
	// (VOLUME_CONDITION), with the driver's message; nil when none is.
	abnormal        *bool
	conditionReason string
}

// fsStats is a measurement as the stats summary reports a volume.
func fsStats(u usage) statsapi.FsStats {
	used, inodesUsed := u.fs.used, u.fs.inodes-min(u.fs.inodesFree, u.fs.inodes)
	if u.walked {
		used, inodesUsed = u.used, u.inodesUsed
	}
	return statsapi.FsStats{
		Time:           metav1.NewTime(u.at),
		AvailableBytes: ptr.To(u.fs.available),
		CapacityBytes:  ptr.To(u.fs.capacity),
		UsedBytes:      ptr.To(used),
		Inodes:         ptr.To(u.fs.inodes),
		InodesFree:     ptr.To(u.fs.inodesFree),
		InodesUsed:     ptr.To(inodesUsed),
	}
}

// needsMeasuring reports whether a volume last measured at measuredAt
// (zero: never) is measured again at now.
func needsMeasuring(measuredAt, now time.Time, period time.Duration) bool {
	return measuredAt.IsZero() || now.Sub(measuredAt) >= period
}
