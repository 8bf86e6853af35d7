//go:build linux

package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// isTmpfsMountPoint reports whether dir is the root of a tmpfs mount: a
// tmpfs whose device differs from its parent folder's. Two stat calls,
// where reading mountinfo would parse every mount of the node.
func isTmpfsMountPoint(dir string) (bool, error) {
	var self, parent unix.Stat_t
	if err := unix.Lstat(dir, &self); err != nil {
		return false, &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, &os.PathError{Op: "lstat", Path: filepath.Dir(dir), Err: err}
	}
	if self.Dev == parent.Dev {
		return false, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return false, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return fs.Type == unix.TMPFS_MAGIC, nil
}

// mountTmpfs mounts a new tmpfs at dir, of at most sizeBytes when
// positive (otherwise the kernel's default, half the memory).
func mountTmpfs(dir string, sizeBytes int64) error {
	var data string
	if sizeBytes > 0 {
		data = fmt.Sprintf("size=%d", sizeBytes)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, data); err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: dir, Err: err}
	}
	return nil
}

// unmount unmounts dir, lazily when it is busy (a process still has a file
// open in it): the mount then leaves the tree at once and goes away when
// the last user lets go. A dir that is no longer mounted is fine.
func unmount(dir string) error {
	err := unix.Unmount(dir, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.UMOUNT_NOFOLLOW|unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &os.PathError{Op: "unmount", Path: dir, Err: err}
}

// mayHoldMounts reports whether anything at or below dir may be mounted.
// It walks the folder, without following links or entering a mount, and
// asks each entry whether it is a mount's root (statx): the cost is the
// folder's size, where reading mountinfo costs every mount of the node,
// which its pods make long. Where the kernel cannot tell (before Linux
// 5.8) or an entry cannot be asked, the answer is yes.
func mayHoldMounts(dir string) bool {
	found := false
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if entry.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		var stat unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, 0, &stat); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		if stat.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || stat.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found || err != nil
}

// readMountInfo lists the mounts nodelet's own mount namespace sees.
func readMountInfo() ([]mountInfo, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return parseMountInfo(data)
}
