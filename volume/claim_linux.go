//go:build linux

package volume

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ensureBindMount makes target a bind mount of the folder source, read-only
// when readOnly, as the kubelet mounts a local volume into a pod's
// folder. made is false when target already was one (SetUpPod again, or
// after a restart); ownFS tells whether source is a file system's mount
// point of its own (its usage is then its statfs).
func ensureBindMount(source, target string, readOnly bool) (made, ownFS bool, err error) {
	resolvedSource, err := filepath.EvalSymlinks(source)
	if os.IsNotExist(err) {
		return false, false, fmt.Errorf("path %q does not exist", source)
	}
	if err != nil {
		return false, false, err
	}
	info, err := os.Stat(resolvedSource)
	if err != nil {
		return false, false, err
	}
	if !info.IsDir() {
		// The kubelet formats and mounts a block device given as a local
		// volume's path; nodelet mounts folders only.
		return false, false, fmt.Errorf("path %q is not a directory: local volumes on block devices are not supported by nodelet yet", source)
	}
	if err := ensureDir(target, 0o750); err != nil {
		return false, false, err
	}
	resolvedTarget, err := filepath.EvalSymlinks(target)
	if err != nil {
		return false, false, err
	}
	mounts, err := readMountInfo()
	if err != nil {
		return false, false, fmt.Errorf("listing mounts: %w", err)
	}
	mounted := false
	for _, m := range mounts {
		ownFS = ownFS || m.MountPoint == resolvedSource
		mounted = mounted || m.MountPoint == resolvedTarget
	}
	if mounted {
		return false, ownFS, nil
	}
	if err := unix.Mount(resolvedSource, resolvedTarget, "", unix.MS_BIND, ""); err != nil {
		return false, ownFS, &os.PathError{Op: "bind mount " + resolvedSource + " on", Path: resolvedTarget, Err: err}
	}
	if readOnly {
		// A bind mount takes its read-only flag only from a remount.
		if err := unix.Mount("", resolvedTarget, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unmount(resolvedTarget)
			return false, ownFS, &os.PathError{Op: "remount read-only", Path: resolvedTarget, Err: err}
		}
	}
	return true, ownFS, nil
}
