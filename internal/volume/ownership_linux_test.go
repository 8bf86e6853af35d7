//go:build linux

// Tests of the fsGroup walk against real files in t.TempDir(), as root
// (changing a file's group to one the user is not in needs CAP_CHOWN), and
// of SetUpPod with an fsGroup.
package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

func requireChown(t *testing.T) {
	t.Helper()
	prereq.Root(t, "it changes files' group to one it is not in (CAP_CHOWN)")
}

// owner is a file's uid, gid and mode as ls shows them.
type owner struct {
	UID, GID uint32
	Mode     string
}

func ownerOf(t *testing.T, path string) owner {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	return owner{UID: st.Uid, GID: st.Gid, Mode: info.Mode().String()}
}

func writeFile(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("data"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestChangeOwnershipWalksEverything(t *testing.T) {
	requireChown(t)
	dir := filepath.Join(t.TempDir(), "vol")
	writeFile(t, filepath.Join(dir, "private"), 0o600)
	writeFile(t, filepath.Join(dir, "sub", "deeper", "script"), 0o700)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	walked, fileErrs, err := changeOwnership(dir, ownership{fsGroup: 2000})
	if err != nil || fileErrs != nil || !walked {
		t.Fatalf("changeOwnership = %v, %v, %v; want a clean walk", walked, fileErrs, err)
	}
	want := map[string]owner{
		".":                 {GID: 2000, Mode: "dgrwxrwxr-x"},
		"private":           {GID: 2000, Mode: "-rw-rw----"},
		"sub":               {GID: 2000, Mode: "dgrwxrwxr-x"},
		"sub/deeper":        {GID: 2000, Mode: "dgrwxrwxr-x"},
		"sub/deeper/script": {GID: 2000, Mode: "-rwxrw----"},
		"link":              {GID: 2000, Mode: "Lrwxrwxrwx"},
	}
	got := map[string]owner{}
	for name := range want {
		got[name] = ownerOf(t, filepath.Join(dir, name))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the walk (-want +got):\n%s", diff)
	}

	// What the pod's processes make later belongs to the group.
	if err := os.Mkdir(filepath.Join(dir, "later"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := ownerOf(t, filepath.Join(dir, "later")).GID; got != 2000 {
		t.Errorf("a folder made after the walk has group %d, want 2000 (setgid)", got)
	}
}

func TestChangeOwnershipReadOnlyGivesGroupReadOnly(t *testing.T) {
	requireChown(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "password"), 0o400)

	if _, _, err := changeOwnership(dir, ownership{fsGroup: 2000, readOnly: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := ownerOf(t, filepath.Join(dir, "password")), (owner{GID: 2000, Mode: "-r--r-----"}); got != want {
		t.Errorf("password = %+v, want %+v", got, want)
	}
}

func TestChangeOwnershipOnRootMismatch(t *testing.T) {
	requireChown(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mine"), 0o600)
	o := ownership{fsGroup: 2000, onRootMismatch: true}

	// The root differs: walked.
	if walked, _, err := changeOwnership(dir, o); err != nil || !walked {
		t.Fatalf("first changeOwnership = %v, %v; want a walk", walked, err)
	}
	// The pod's user makes a file of its own, private: the root matches,
	// so nothing is walked and the file keeps its group and mode.
	writeFile(t, filepath.Join(dir, "private"), 0o600)
	if err := os.Chown(filepath.Join(dir, "private"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if walked, _, err := changeOwnership(dir, o); err != nil || walked {
		t.Fatalf("second changeOwnership = %v, %v; want no walk", walked, err)
	}
	if got, want := ownerOf(t, filepath.Join(dir, "private")), (owner{UID: 1000, GID: 1000, Mode: "-rw-------"}); got != want {
		t.Errorf("private = %+v after a skipped walk, want %+v", got, want)
	}
	// Always (no OnRootMismatch) walks all the same.
	if walked, _, err := changeOwnership(dir, ownership{fsGroup: 2000}); err != nil || !walked {
		t.Fatalf("changeOwnership without OnRootMismatch = %v, %v; want a walk", walked, err)
	}
	if got, want := ownerOf(t, filepath.Join(dir, "private")), (owner{UID: 1000, GID: 2000, Mode: "-rw-rw----"}); got != want {
		t.Errorf("private = %+v after a walk, want %+v", got, want)
	}
	// A root whose group was changed back: walked again.
	if err := os.Chown(dir, -1, 0); err != nil {
		t.Fatal(err)
	}
	if walked, _, err := changeOwnership(dir, o); err != nil || !walked {
		t.Fatalf("changeOwnership of a mismatching root = %v, %v; want a walk", walked, err)
	}
}

func TestChangeOwnershipOfAMissingVolume(t *testing.T) {
	if _, _, err := changeOwnership(filepath.Join(t.TempDir(), "gone"), ownership{fsGroup: 2000}); err == nil {
		t.Errorf("changeOwnership of a missing folder succeeded")
	}
}

func TestSetUpPodAppliesFSGroup(t *testing.T) {
	requireRoot(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	e := newTestEnv(t, Options{}, secret, rootCAConfigMap("shop", rootCA))
	pod := makePod(
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		corev1.Volume{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db", DefaultMode: ptr.To[int32](0o400)}}},
		apiAccessVolume(),
	)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	pod.Spec.Containers = []corev1.Container{{Name: "app"}}

	paths, _ := setUp(t, e, pod)

	got := map[string]owner{
		"scratch":        ownerOf(t, paths["scratch"]),
		"cache":          ownerOf(t, paths["cache"]),
		"db":             ownerOf(t, paths["db"]),
		"db/password":    ownerOf(t, filepath.Join(paths["db"], dataDirName, "password")),
		"api/token":      ownerOf(t, filepath.Join(paths[apiAccess], dataDirName, "token")),
		"api/ca.crt":     ownerOf(t, filepath.Join(paths[apiAccess], dataDirName, "ca.crt")),
		"api/..data dir": ownerOf(t, resolved(t, filepath.Join(paths[apiAccess], dataDirName))),
	}
	want := map[string]owner{
		"scratch": {GID: 2000, Mode: "dgrwxrwxrwx"},
		// A tmpfs root is sticky.
		"cache":       {GID: 2000, Mode: "dgtrwxrwxrwx"},
		"db":          {GID: 2000, Mode: "dgtrwxrwxrwx"},
		"db/password": {GID: 2000, Mode: "-r--r-----"},
		// The one user of the pod owns its token, group readable.
		"api/token":      {UID: 1000, GID: 2000, Mode: "-rw-r-----"},
		"api/ca.crt":     {GID: 2000, Mode: "-rw-r--r--"},
		"api/..data dir": {GID: 2000, Mode: "dgrwxr-xr-x"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownership (-want +got):\n%s", diff)
	}

	// A resync with the same contents writes nothing: the files on disk
	// already have the modes fsGroup gives them.
	before := resolved(t, filepath.Join(paths["db"], dataDirName))
	e.clock.Step(DefaultSyncPeriod)
	setUp(t, e, pod)
	if after := resolved(t, filepath.Join(paths["db"], dataDirName)); after != before {
		t.Errorf("a resync of unchanged contents rewrote the secret volume (%s, then %s)", before, after)
	}

	// After a restart, the emptyDir is not walked again: a private file
	// the pod made keeps its group.
	private := filepath.Join(paths["scratch"], "private")
	writeFile(t, private, 0o600)
	if err := os.Chown(private, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	e.restart()
	setUp(t, e, pod)
	if got, want := ownerOf(t, private), (owner{UID: 1000, GID: 1000, Mode: "-rw-------"}); got != want {
		t.Errorf("a file of the pod's = %+v after a restart, want %+v (not walked again)", got, want)
	}
}

func TestSetUpPodWithoutFSGroupChangesNoGroup(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{}, rootCAConfigMap("shop", rootCA))
	pod := makePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, apiAccessVolume())
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	pod.Spec.Containers = []corev1.Container{{Name: "app"}}

	paths, _ := setUp(t, e, pod)

	got := map[string]owner{
		"scratch":   ownerOf(t, paths["scratch"]),
		"api/token": ownerOf(t, filepath.Join(paths[apiAccess], dataDirName, "token")),
	}
	want := map[string]owner{
		"scratch": {Mode: "drwxrwxrwx"},
		// The one user of the pod still owns its token, alone.
		"api/token": {UID: 1000, Mode: "-rw-------"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownership (-want +got):\n%s", diff)
	}
}

func resolved(t *testing.T, path string) string {
	t.Helper()
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestTheWalkDoesNotFollowAFolderSwappedForALink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "host-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	volume := filepath.Join(dir, "volume")
	if err := os.MkdirAll(filepath.Join(volume, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The walk looked at "sub" while it was a folder; a pod's process then
	// swaps it for a link out of the volume.
	seen, err := os.Lstat(filepath.Join(volume, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(volume, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(volume, "sub")); err != nil {
		t.Fatal(err)
	}

	var visited []string
	err = walkDeepFrom(filepath.Join(volume, "sub"), seen, func(path string, _ fs.FileInfo) { visited = append(visited, path) })
	if err == nil {
		t.Error("the walk went through the swapped-in link without an error")
	}
	for _, path := range visited {
		if strings.Contains(path, "host-file") {
			t.Errorf("the walk visited %s, outside the volume", path)
		}
	}
}
