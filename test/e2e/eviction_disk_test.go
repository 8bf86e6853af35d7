package e2e

import (
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
)

// diskEvictionMessage is the kubelet's message for a container over its
// (zero) ephemeral storage request under a nodefs.available threshold.
var diskEvictionMessage = regexp.MustCompile(`^The node was low on resource: ephemeral-storage\. Threshold quantity: \d+(Ki|Mi|Gi)?, available: \d+(Ki|Mi|Gi)?\. Container filler was using \d+(Ki|Mi|Gi)?, request is 0, has larger consumption of ephemeral-storage\. $`)

// nodeDisk is the node's own file system: nodelet's root dir, which must
// be on another file system than the stack's folder (the stack's
// NODE_DISK_SIZE), with containerd's root on it too. It returns its free
// bytes.
func (f *Framework) nodeDisk(t *testing.T) (available int64) {
	t.Helper()
	var root, state, containerd unix.Stat_t
	for path, st := range map[string]*unix.Stat_t{
		f.Env.NodeletRootDir: &root, f.Env.StateDir: &state, filepath.Join(f.Env.StateDir, "containerd", "root"): &containerd,
	} {
		if err := unix.Stat(path, st); err != nil {
			t.Fatal(err)
		}
	}
	if root.Dev == state.Dev || containerd.Dev != root.Dev {
		t.Fatalf("nodelet's root dir %s and containerd's root are not on a file system of their own: the stack was brought up without NODE_DISK_SIZE", f.Env.NodeletRootDir)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(f.Env.NodeletRootDir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Bavail) * fs.Bsize
}
