package nodefault

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FillSize is how many bytes a file must take for the file system to
// have leave bytes available, given it has available now: none when it
// has no more than that already.
func FillSize(available, leave int64) int64 {
	return max(available-leave, 0)
}

// Available is the bytes available to an unprivileged writer on path's
// file system (statfs's f_bavail), what the kubelet's nodefs.available
// signal reads.
func Available(path string) (int64, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return 0, fmt.Errorf("reading %s's file system: %w", path, err)
	}
	return int64(fs.Bavail) * fs.Bsize, nil
}

// SameFileSystem tells whether a and b are on one file system.
func SameFileSystem(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, fmt.Errorf("reading %s: %w", a, err)
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, fmt.Errorf("reading %s: %w", b, err)
	}
	return sa.Dev == sb.Dev, nil
}

// Fill makes path a file taking size bytes of its file system. The
// blocks are allocated (fallocate), not written: the file system's free
// space drops at once, and a file system on a sparse image (the node's
// disk) does not grow its image on the host's disk by that much.
func Fill(path string, size int64) error {
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("filling %s: %w", path, err)
	}
	if size > 0 {
		if err := unix.Fallocate(int(file.Fd()), 0, 0, size); err != nil {
			_ = file.Close()
			return fmt.Errorf("filling %s with %d bytes: %w", path, size, err)
		}
	}
	return file.Close()
}
