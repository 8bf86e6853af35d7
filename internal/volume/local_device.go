package volume

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A local volume of volumeMode Filesystem whose path is a block device,
// as the kubelet's local plugin mounts it: the device is formatted when
// it has no file system (with the PersistentVolume's fsType, ext4 by
// default; never when blkid finds one), mounted once for the node at
// <RootDir>/plugins/kubernetes.io/local-volume/mounts/<pv>, and that
// folder bind-mounted into each pod's folder as a folder volume is. The
// node's mount goes when no pod of the node has the volume any more.

// defaultLocalFSType is the kubelet's file system for a local device
// whose PersistentVolume names none.
const defaultLocalFSType = "ext4"

// localDeviceMountsDir is where local devices are mounted for the node,
// under the root dir, as the kubelet's generateBlockDeviceBaseGlobalPath.
const localDeviceMountsDir = "plugins/kubernetes.io/local-volume/mounts"

// diskFormat is what blkid found on a device: its file system's type
// (TYPE), or a partition table's (PTTYPE) when it holds partitions.
type diskFormat struct {
	fsType, partitionTable string
}

// parseBlkid reads `blkid -p -s TYPE -s PTTYPE -o export` output; exit
// status 2 (nothing found) is an empty format, as mount-utils reads it.
func parseBlkid(output string) diskFormat {
	var f diskFormat
	for line := range strings.SplitSeq(output, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch key {
		case "TYPE":
			f.fsType = value
		case "PTTYPE":
			f.partitionTable = value
		}
	}
	return f
}

// formatDecision is whether a device of format f is formatted before it
// is mounted as fsType: only one without a file system or partitions,
// as mount-utils' SafeFormatAndMount. A device with partitions only is
// mount-utils' "unknown data" error: never formatted, never mounted.
func formatDecision(f diskFormat, device string) (format bool, err error) {
	switch {
	case f.fsType != "":
		return false, nil
	case f.partitionTable != "":
		return false, fmt.Errorf("failed to get disk format of disk %s: disk %s has partitions (%s) but no file system", device, device, f.partitionTable)
	default:
		return true, nil
	}
}

// mkfsArgs are mkfs.<fsType>'s arguments, as mount-utils gives them:
// forced, and for ext3/4 no blocks reserved for root.
func mkfsArgs(fsType, device string) []string {
	switch fsType {
	case "ext3", "ext4":
		return []string{"-F", "-m0", device}
	case "xfs":
		return []string{"-f", device}
	default:
		return []string{device}
	}
}

// localDeviceMountOptions are the options a local device is mounted
// with for the node: "ro" when the pod's claim is read-only, then the
// PersistentVolume's, as the kubelet's MountOptionFromSpec.
func localDeviceMountOptions(readOnly bool, options []string) []string {
	var all []string
	if readOnly {
		all = append(all, "ro")
	}
	return append(all, options...)
}

// localFSType is the file system a local device is formatted and
// mounted as.
func localFSType(pv *corev1.PersistentVolume) string {
	if pv.Spec.Local != nil && pv.Spec.Local.FSType != nil && *pv.Spec.Local.FSType != "" {
		return *pv.Spec.Local.FSType
	}
	return defaultLocalFSType
}

// localDeviceLock serialises the set-ups and the unmount of one local
// device's node mount.
func localDeviceLock(pv string) string { return "local-device|" + pv }
