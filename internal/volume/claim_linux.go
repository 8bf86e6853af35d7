//go:build linux

package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ensureBindMount makes target a bind mount of the folder source, read-only
// when readOnly, with the flags of options (checkLocalMountOptions), as
// the kubelet mounts a local volume into a pod's folder. made is false
// when target already was one (SetUpPod again, or after a restart);
// ownFS tells whether source is a file system's mount point of its own
// (its usage is then its statfs).
func ensureBindMount(source, target string, readOnly bool, options []string) (made, ownFS bool, err error) {
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
		// A block device is mounted for the node first (local_device.go)
		// and that folder bound here; anything else is the kubelet's
		// refusal.
		return false, false, errors.New("only directory and block device are supported")
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
	if flags := bindMountFlags(readOnly, options); flags != 0 {
		// A bind mount takes its flags only from a remount.
		if err := unix.Mount("", resolvedTarget, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
			_ = unmount(resolvedTarget)
			return false, ownFS, &os.PathError{Op: fmt.Sprintf("remount (read-only %t, options %v)", readOnly, options), Path: resolvedTarget, Err: err}
		}
	}
	return true, ownFS, nil
}

// bindMountFlags are the flags a bind mount is remounted with: read-only
// when readOnly, and those its options set, a later option undoing an
// earlier one as mount(8) reads them.
func bindMountFlags(readOnly bool, options []string) uintptr {
	var flags uintptr
	set := map[string]uintptr{
		"ro": unix.MS_RDONLY, "noexec": unix.MS_NOEXEC, "nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV,
		"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
		"strictatime": unix.MS_STRICTATIME, "sync": unix.MS_SYNCHRONOUS, "dirsync": unix.MS_DIRSYNC,
	}
	clear := map[string]uintptr{
		"rw": unix.MS_RDONLY, "exec": unix.MS_NOEXEC, "suid": unix.MS_NOSUID, "dev": unix.MS_NODEV,
		"atime": unix.MS_NOATIME, "diratime": unix.MS_NODIRATIME, "norelatime": unix.MS_RELATIME,
		"async": unix.MS_SYNCHRONOUS,
	}
	for _, o := range options {
		o = strings.TrimSpace(o)
		flags |= set[o]
		flags &^= clear[o]
	}
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	return flags
}
