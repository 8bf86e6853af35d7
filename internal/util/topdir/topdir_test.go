package topdir

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// These tests run on the machine's own file systems: the test's temporary
// folder (ext4 on the project's machines) and /dev/shm (tmpfs).

func TestMarkSetsTheFlagWhereTheFileSystemKeepsIt(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	// ext2, ext3 and ext4 share one magic number, and all keep the flag.
	want := fs.Type == unix.EXT4_SUPER_MAGIC
	for range 2 { // the second time, on a folder that has it already
		marked, err := Mark(dir)
		if err != nil || marked != want {
			t.Fatalf("Mark(%s) on file system type %#x = %v, %v; want %v, nil", dir, fs.Type, marked, err, want)
		}
		if got, err := IsMarked(dir); err != nil || got != want {
			t.Fatalf("IsMarked(%s) = %v, %v; want %v, nil", dir, got, err, want)
		}
	}
	// Folders made inside do not inherit it: only the top spreads.
	child := dir + "/pod"
	if err := os.Mkdir(child, 0o750); err != nil {
		t.Fatal(err)
	}
	if got, err := IsMarked(child); err != nil || got {
		t.Errorf("IsMarked(%s) = %v, %v; want false, nil", child, got, err)
	}
}

func TestMarkLeavesAFileSystemWithoutTheFlagAlone(t *testing.T) {
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Fatalf("/dev/shm is not a tmpfs here (type %#x, %v); the test needs one", fs.Type, err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "topdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if marked, err := Mark(dir); err != nil || marked {
		t.Errorf("Mark(%s) on tmpfs = %v, %v; want false, nil", dir, marked, err)
	}
}

func TestMarkOfAMissingFolderFails(t *testing.T) {
	if _, err := Mark(t.TempDir() + "/missing"); err == nil {
		t.Error("Mark of a missing folder succeeded")
	}
}
