// Package topdir marks a folder as the top of unrelated hierarchies for
// ext2/3/4's Orlov allocator (the inode flag FS_TOPDIR_FL, `chattr +T`):
// the folders made in it are then spread over the file system's block
// groups, as the top-level folders of a disk are, instead of being kept
// near their parent.
//
// A node's pod folders and pod log folders are such hierarchies: each is
// made when its pod starts and removed when it goes, hundreds of times a
// burst. Kept near their parent, they all take their inodes from one
// block group, the one the last burst's folders were just freed from, and
// on an ext4 file system without a journal (common on cloud VMs' disks)
// every inode allocated there first steps over each inode freed in the
// last minute, reading it back to see when it was freed: on a development
// VM of this project, 18% of nodelet's CPU while a burst of 30 pods
// started (perf, kernel stacks), 3% once spread.
package topdir

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// flag is FS_TOPDIR_FL of linux/fs.h, which golang.org/x/sys does not name.
const flag = 0x00020000

// Mark sets the flag on dir and reports whether dir now holds it. A file
// system that keeps no such flag (tmpfs, xfs, overlayfs, ...) is no error:
// it is left as it is and Mark reports false.
func Mark(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if unsupported(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the inode flags of %s: %w", dir, err)
	}
	if flags&flag != 0 {
		return true, nil
	}
	err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|flag))
	if unsupported(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("setting the top-of-hierarchy flag of %s: %w", dir, err)
	}
	return true, nil
}

// IsMarked reports whether dir holds the flag.
func IsMarked(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if unsupported(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the inode flags of %s: %w", dir, err)
	}
	return flags&flag != 0, nil
}

// unsupported tells the answers of a file system without inode flags, or
// without this one.
func unsupported(err error) bool {
	return errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)
}
