package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// Tearing a pod's volumes down, and finding the pods whose folders are
// left on the node.

// TearDownPod unmounts and removes everything under the pod's folder.
// Idempotent; works after a nodelet restart (nothing in memory needed) and
// for pods whose Pod is gone. The mounts are found in
// /proc/self/mountinfo and unmounted deepest first; files are removed only
// once nothing under the folder is mounted any more. When an unmount fails
// it returns an error and leaves the files in place, for a later retry.
func (m *Manager) TearDownPod(ctx context.Context, uid types.UID) error {
	if err := checkUID(uid); err != nil {
		return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
	}
	// Whatever happens next, what was remembered no longer holds.
	m.forgetPod(uid)
	// CSI volumes are unpublished (and unstaged) at the paths they were
	// published at, before the folder is renamed; a driver that fails or
	// is not registered keeps the folder for a retry.
	if err := m.tearDownCSI(ctx, uid); err != nil {
		return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
	}

	// Folders an earlier teardown left half removed go first, so that
	// their names are free again.
	leftovers, err := m.removingFolders(uid)
	if err != nil {
		return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
	}
	for _, dir := range leftovers {
		if err := m.removeTree(dir); err != nil {
			return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
		}
	}
	dir := m.PodDir(uid)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return m.unmountLocalDevices(uid)
	}
	// A set-up of the pod may still be under way (a pod force-deleted
	// while its volumes were being mounted): renamed, the folder is out
	// of its reach, as it mounts by path. What it mounts from now on lands
	// in a new folder under the pod's name, which the orphan sweep
	// removes; nothing can be mounted into the tree removed here after
	// unmountAll found it empty of mounts, so RemoveAll never reaches into
	// a volume.
	removing := filepath.Join(m.PodsDir(), fmt.Sprintf("%s%s-%d", removingPrefix, uid, m.removals.Add(1)))
	if err := os.Rename(dir, removing); err != nil {
		return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
	}
	if err := m.removeTree(removing); err != nil {
		return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
	}
	m.log.V(1).Info("Tore down pod volumes", "podUID", uid)
	return m.unmountLocalDevices(uid)
}

// unmountLocalDevices unmounts the node's mounts of local devices the
// pod was the last to use (local_device.go).
func (m *Manager) unmountLocalDevices(uid types.UID) error {
	if err := m.unmountUnusedLocalDevices(); err != nil {
		return fmt.Errorf("tearing down volumes of pod %s: %w", uid, err)
	}
	return nil
}

// removingPrefix starts the name of a pod folder being removed:
// ".removing-<uid>-<n>" under <RootDir>/pods.
const removingPrefix = ".removing-"

// removingFolders are the pod's folders being removed, or left half
// removed by a teardown that failed or a nodelet that died.
func (m *Manager) removingFolders(uid types.UID) ([]string, error) {
	entries, err := os.ReadDir(m.PodsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pod folders: %w", err)
	}
	var dirs []string
	for _, entry := range entries {
		if owner, ok := removingOwner(entry.Name()); ok && owner == uid {
			dirs = append(dirs, filepath.Join(m.PodsDir(), entry.Name()))
		}
	}
	return dirs, nil
}

// removingOwner is the UID of the pod a folder named name is being
// removed for, if it is such a folder.
func removingOwner(name string) (types.UID, bool) {
	rest, ok := strings.CutPrefix(name, removingPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return "", false
	}
	return types.UID(rest[:i]), true
}

// removeTree unmounts everything under dir, then removes it.
func (m *Manager) removeTree(dir string) error {
	// mountinfo shows resolved paths.
	resolved, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := m.unmountAll(resolved); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// unmountAll unmounts every mount at or below dir and checks none is
// left.
func (m *Manager) unmountAll(dir string) error { return UnmountAll(dir, m.log) }

// UnmountAll unmounts every mount at or below dir (a resolved path, as
// mountinfo shows them), deepest first, lazily when busy, and checks none
// is left in nodelet's mount namespace. Several rounds cover mounts
// stacked on one another. A mount whose propagation is shared takes its
// peers with it.
//
// mountinfo, which lists every mount of the node, is read only while a
// walk of the folder finds a mount in it: not at all for a folder without
// one, and once for a pod's usual mounts, where the check after the
// unmounts is the walk's.
func UnmountAll(dir string, log logr.Logger) error {
	const rounds = 3
	for round := 0; ; round++ {
		if !mayHoldMounts(dir) {
			return nil
		}
		mounts, err := readMountInfo()
		if err != nil {
			return fmt.Errorf("listing mounts: %w", err)
		}
		under := mountsUnder(mounts, dir)
		if len(under) == 0 {
			return nil
		}
		if round == rounds {
			return fmt.Errorf("%s is still mounted", under[0].MountPoint)
		}
		for _, mount := range under {
			if err := unmount(mount.MountPoint); err != nil {
				return err
			}
			log.V(2).Info("Unmounted", "path", mount.MountPoint, "fsType", mount.FSType)
		}
	}
}

// ListPods lists the pods with folders present (being removed or not), for
// sweeping orphans.
func (m *Manager) ListPods() ([]types.UID, error) {
	entries, err := os.ReadDir(m.PodsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pod folders: %w", err)
	}
	var uids []types.UID
	seen := map[types.UID]bool{}
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		// A folder left half removed names its pod, whose teardown
		// finishes removing it.
		uid, removing := removingOwner(entry.Name())
		if !removing {
			uid = types.UID(entry.Name())
		}
		if checkUID(uid) == nil && !seen[uid] {
			seen[uid] = true
			uids = append(uids, uid)
		}
	}
	return uids, nil
}
