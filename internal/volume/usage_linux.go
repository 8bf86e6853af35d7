//go:build linux

package volume

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// measureUsage measures the volume at dir by method, at now.
func measureUsage(dir string, method usageMethod, now time.Time) (usage, error) {
	if method == usageDevice {
		size, err := deviceSize(dir)
		return usage{at: now, fs: fsInfo{capacity: size}}, err
	}
	info, err := statFS(dir)
	if err != nil {
		return usage{}, err
	}
	u := usage{at: now, fs: info}
	if method == usageWalk {
		u.walked = true
		u.used, u.inodesUsed, err = DiskUsage(dir)
	}
	return u, err
}

// statFS reads the file system dir lies on.
func statFS(dir string) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fsInfo{}, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	size := uint64(st.Bsize)
	return fsInfo{
		capacity:   st.Blocks * size,
		available:  st.Bavail * size,
		used:       (st.Blocks - st.Bfree) * size,
		inodes:     st.Files,
		inodesFree: st.Ffree,
	}, nil
}

// DiskUsage counts what the files under dir take on disk and how many
// there are, as du does: blocks allocated (not file sizes, so a sparse
// file counts what it holds), a file with several hard links once, and
// nothing on another file system mounted below. The volumes' stats and
// the eviction manager's measure of pods' logs and volumes both use it.
func DiskUsage(dir string) (bytes, inodes uint64, err error) {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		return 0, 0, &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile: the pod's processes run
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		bytes += uint64(st.Blocks) * 512 // st_blocks counts 512-byte units
		inodes++
		return nil
	})
	return bytes, inodes, err
}

// deviceSize is the size of the device at path (links followed), found
// by seeking to its end, as the kubelet measures a block volume.
func deviceSize(path string) (uint64, error) {
	dev, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("unable to open device %q: %w", path, err)
	}
	defer dev.Close()
	end, err := dev.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("failed to detect size of %q: %w", path, err)
	}
	return uint64(end), nil
}
