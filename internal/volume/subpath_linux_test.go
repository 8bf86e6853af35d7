//go:build linux

package volume

// Tests of sub paths against the real kernel: folders in t.TempDir() and
// real bind mounts, as root (skipped otherwise).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// sameFile says whether a and b are one file (device and inode).
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(b, &sb); err != nil {
		t.Fatal(err)
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// subPathFixture is a pod folder with a volume holding a folder, a file,
// a symlink that stays inside and one that leads out.
func subPathFixture(t *testing.T) (podDir, volume, outside string) {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { unmountEverythingUnder(dir) })
	podDir = filepath.Join(dir, "pods", "uid")
	volume = filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "data")
	outside = filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(volume, "existing"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(volume, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(volume, "file.conf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(volume, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("existing", filepath.Join(volume, "inside")); err != nil {
		t.Fatal(err)
	}
	return podDir, volume, outside
}

func TestPrepareSubPathBindsTheSubPathUnderThePodFolder(t *testing.T) {
	requireRoot(t)
	podDir, volume, outside := subPathFixture(t)

	tests := map[string]struct {
		subPath string
		// want is the file the bind mount must show.
		want    string
		wantErr bool
	}{
		"an existing folder":                                             {subPath: "existing", want: filepath.Join(volume, "existing")},
		"an existing file":                                               {subPath: "file.conf", want: filepath.Join(volume, "file.conf")},
		"missing folders are made":                                       {subPath: "new/deeper", want: filepath.Join(volume, "new", "deeper")},
		"a symlink that stays inside is followed":                        {subPath: "inside/sub", want: filepath.Join(volume, "existing", "sub")},
		"a symlink out of the volume is refused":                         {subPath: "escape/sub", wantErr: true},
		"a symlink out of the volume, as the whole sub path, is refused": {subPath: "escape", wantErr: true},
	}
	index := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			index++
			sp := kubecontainer.SubPath{VolumeName: "data", VolumePath: volume, Path: tc.subPath, PodDir: podDir, ContainerName: "app", MountIndex: index}
			got, err := PrepareSubPath(sp)
			if (err != nil) != tc.wantErr {
				t.Fatalf("PrepareSubPath(%q) error = %v, want error: %t", tc.subPath, err, tc.wantErr)
			}
			if tc.wantErr {
				if _, err := os.Stat(filepath.Join(outside, "sub")); err == nil {
					t.Errorf("PrepareSubPath(%q) made a folder outside the volume", tc.subPath)
				}
				if mounts := mountsAt(t, subPathTarget(sp)); len(mounts) != 0 {
					t.Errorf("PrepareSubPath(%q) left mounts %v at %s", tc.subPath, mounts, subPathTarget(sp))
				}
				return
			}
			if want := filepath.Join(podDir, "volume-subpaths", "data", "app", strconv.Itoa(index)); got != want {
				t.Errorf("PrepareSubPath(%q) = %q, want %q", tc.subPath, got, want)
			}
			if len(mountsAt(t, got)) != 1 {
				t.Errorf("mounts at %s = %v, want one bind mount", got, mountsAt(t, got))
			}
			if !sameFile(t, got, tc.want) {
				t.Errorf("PrepareSubPath(%q) bound something else than %s", tc.subPath, tc.want)
			}
		})
	}

	// Made folders have the volume's mode, so that an fsGroup's access
	// carries down.
	info, err := os.Stat(filepath.Join(volume, "new", "deeper"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info.Mode()&(os.ModePerm|os.ModeSetgid), os.FileMode(0o775)|os.ModeSetgid; got != want {
		t.Errorf("made folder mode = %v, want %v", got, want)
	}
}

// The walk never follows a symlink: one found where a folder was checked a
// moment before (a container swapped it in) is reported, never opened
// through.
func TestOpenWithinDoesNotFollowASymlinkSwappedIn(t *testing.T) {
	requireRoot(t)
	_, volume, outside := subPathFixture(t)
	// The container replaces folder "existing" by a link to the outside.
	if err := os.Rename(filepath.Join(volume, "existing"), filepath.Join(volume, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(volume, "existing")); err != nil {
		t.Fatal(err)
	}
	fd, err := openWithin(volume, "existing/sub", 0o755)
	var link *symlinkError
	if !errors.As(err, &link) {
		if err == nil {
			unix.Close(fd)
		}
		t.Fatalf("openWithin() error = %v, want a symlink reported", err)
	}
	if link.path != "existing" || link.rest != "sub" {
		t.Errorf("symlink reported at %q with %q below, want existing and sub", link.path, link.rest)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); err == nil {
		t.Error("openWithin() made a folder outside the volume")
	}
}

// What is bound is what was opened: swapping the sub path for a symlink
// once it is bound changes nothing the runtime mounts.
func TestPrepareSubPathMountStaysOnWhatWasChecked(t *testing.T) {
	requireRoot(t)
	podDir, volume, outside := subPathFixture(t)
	sp := kubecontainer.SubPath{VolumeName: "data", VolumePath: volume, Path: "existing", PodDir: podDir, ContainerName: "app"}
	target, err := PrepareSubPath(sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(volume, "existing"), filepath.Join(volume, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(volume, "existing")); err != nil {
		t.Fatal(err)
	}
	if !sameFile(t, target, filepath.Join(volume, "moved")) || sameFile(t, target, outside) {
		t.Error("the bound sub path followed the symlink swapped in")
	}
	// Prepared again (the container restarts), the sub path is now the
	// link that leads out: refused.
	if _, err := PrepareSubPath(sp); err == nil {
		t.Error("PrepareSubPath() of a sub path swapped for a link out of the volume succeeded")
	}
}

// A container started again gets the same bind mount, not one more.
func TestPrepareSubPathTwiceKeepsOneMount(t *testing.T) {
	requireRoot(t)
	podDir, volume, _ := subPathFixture(t)
	sp := kubecontainer.SubPath{VolumeName: "data", VolumePath: volume, Path: "file.conf", PodDir: podDir, ContainerName: "app"}
	for range 2 {
		if _, err := PrepareSubPath(sp); err != nil {
			t.Fatal(err)
		}
	}
	if mounts := mountsAt(t, subPathTarget(sp)); len(mounts) != 1 {
		t.Errorf("mounts at %s = %v, want one", subPathTarget(sp), mounts)
	}
}

// TearDownPod removes the sub paths' mounts with the pod's folder, also
// in a Manager that never prepared them (after a nodelet restart).
func TestTearDownPodRemovesSubPathMountsAfterARestart(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{})
	pod := makePod(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	paths, _ := setUp(t, e, pod)
	target, err := PrepareSubPath(kubecontainer.SubPath{VolumeName: "data", VolumePath: paths["data"], Path: "logs", PodDir: e.m.PodDir(podUID), ContainerName: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mountsAt(t, target)) != 1 {
		t.Fatalf("no bind mount at %s", target)
	}
	e.restart()
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatalf("TearDownPod: %v", err)
	}
	resolved, err := filepath.EvalSymlinks(e.root)
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := readMountInfo()
	if err != nil {
		t.Fatal(err)
	}
	if left := mountsUnder(mounts, resolved); len(left) != 0 {
		t.Errorf("mounts left under the root folder: %v", left)
	}
	if _, err := os.Stat(e.m.PodDir(podUID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod folder still there: %v", err)
	}
}
