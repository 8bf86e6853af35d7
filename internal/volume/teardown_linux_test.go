//go:build linux

package volume

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// The walk that spares a teardown reading mountinfo: it must find every
// kind of mount a pod's folder holds, wherever it sits, and nothing in a
// folder without one. Real tmpfs and bind mounts (root).
func TestMayHoldMountsFindsEveryMountInTheFolder(t *testing.T) {
	requireRoot(t)
	for name, tc := range map[string]struct {
		mount func(t *testing.T, dir string)
		want  bool
	}{
		"no mount, a link out to a mount not followed": {
			mount: func(t *testing.T, dir string) {},
			want:  false,
		},
		"a tmpfs deep in the folder": {
			mount: func(t *testing.T, dir string) {
				mountAt(t, filepath.Join(dir, "volumes", "kubernetes.io~projected", "token"))
			},
			want: true,
		},
		"a file bound onto a file (a subPath)": {
			mount: func(t *testing.T, dir string) {
				bindFileAt(t, filepath.Join(dir, "volume-subpaths", "config", "app", "0"))
			},
			want: true,
		},
		"the folder itself a mount": {
			mount: func(t *testing.T, dir string) { mountAt(t, dir) },
			want:  true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := podFolderLike(t)
			tc.mount(t, dir)
			if got := mayHoldMounts(dir); got != tc.want {
				t.Errorf("mayHoldMounts = %v, want %v", got, tc.want)
			}
		})
	}
	if mayHoldMounts(filepath.Join(t.TempDir(), "gone")) {
		t.Error("a folder that is not there holds mounts, want none")
	}
}

// UnmountAll finds its mounts by mountinfo but checks with the walk that
// none is left: mounts stacked on one point, a mount within a mount and a
// file bind all go, and the folder holds none after.
func TestUnmountAllLeavesNoMountTheWalkOrMountinfoCanSee(t *testing.T) {
	requireRoot(t)
	dir := podFolderLike(t)
	volume := filepath.Join(dir, "volumes", "kubernetes.io~secret", "creds")
	mountAt(t, volume)
	mountAt(t, volume)
	mountAt(t, filepath.Join(volume, "inner"))
	bindFileAt(t, filepath.Join(dir, "volume-subpaths", "config", "app", "0"))

	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := UnmountAll(resolved, logr.Discard()); err != nil {
		t.Fatalf("UnmountAll: %v", err)
	}
	if left := mountsUnderDir(t, resolved); len(left) > 0 {
		t.Errorf("%d mounts left under the folder, the first at %s", len(left), left[0].MountPoint)
	}
	if mayHoldMounts(resolved) {
		t.Error("the walk still finds a mount under the folder")
	}
}

// podFolderLike is a folder laid out as a pod's, with a link to a mount
// outside it that a walk must not follow.
func podFolderLike(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pod")
	for _, sub := range []string{"volumes/kubernetes.io~empty-dir/scratch/a/b", "containers/app", "plugins"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "etc-hosts"), []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc", filepath.Join(dir, "volumes", "kubernetes.io~empty-dir", "scratch", "proc")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mountAt mounts a tmpfs at dir, made if missing, and unmounts whatever
// is left there when the test ends.
func mountAt(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(dir, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// bindFileAt binds a file of its own onto target, made if missing, as a
// subPath of a file is bound.
func bindFileAt(t *testing.T, target string) {
	t.Helper()
	source := filepath.Join(t.TempDir(), "source")
	if err := os.WriteFile(source, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("binding %s onto %s: %v", source, target, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
}
