package e2e

// nodelet marks the folders that hold one folder per pod so that ext4
// spreads those over its block groups (package topdir). The e2e stack's
// node has an ext4 disk of its own for nodelet's root dir; the pods' log
// folder is on the machine's disk, marked where that is ext4 too.

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/internal/util/topdir"
)

func TestPodFoldersAreMarkedForSpreading(t *testing.T) {
	t.Parallel()
	for _, dir := range []struct {
		path     string
		mustExt4 bool
	}{
		{filepath.Join(f.Env.NodeletRootDir, "pods"), true},
		{f.Env.PodLogDir, false},
	} {
		var fs unix.Statfs_t
		if err := unix.Statfs(dir.path, &fs); err != nil {
			t.Fatalf("statfs %s: %v", dir.path, err)
		}
		ext4 := fs.Type == unix.EXT4_SUPER_MAGIC
		if dir.mustExt4 && !ext4 {
			t.Fatalf("%s is on a file system of type %#x; the e2e node's disk is ext4", dir.path, fs.Type)
		}
		marked, err := topdir.IsMarked(dir.path)
		if err != nil || marked != ext4 {
			t.Errorf("%s marked for spreading: %v, %v; want %v (ext4: %v)", dir.path, marked, err, ext4, ext4)
		}
	}
}
