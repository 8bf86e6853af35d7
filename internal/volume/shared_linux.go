//go:build linux

package volume

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MakeRShared makes dir a shared mount, recursively, as the kubelet makes
// its root folder: the runtime mounts a volume with HostToContainer
// propagation only from a shared (or slave) mount, so that mounts made
// below it later reach the container, and with Bidirectional only from a
// shared one, so that mounts the container makes reach the node. A dir
// that is no mount point becomes a bind mount of itself first. Idempotent:
// nothing is done when dir already lies on a shared mount (after a restart,
// or under a DaemonSet that mounts it with Bidirectional propagation).
func MakeRShared(dir string) error {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("making %s a shared mount: %w", dir, err)
	}
	mounts, err := readMountInfo()
	if err != nil {
		return fmt.Errorf("making %s a shared mount: listing mounts: %w", dir, err)
	}
	mount, ok := mountOf(mounts, resolved)
	if ok && mount.Shared {
		return nil
	}
	if !ok || mount.MountPoint != resolved {
		if err := unix.Mount(resolved, resolved, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("making %s a shared mount: %w", dir, &os.PathError{Op: "bind mount", Path: resolved, Err: err})
		}
	}
	if err := unix.Mount("", resolved, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("making %s a shared mount: %w", dir, &os.PathError{Op: "mount --make-rshared", Path: resolved, Err: err})
	}
	return nil
}
