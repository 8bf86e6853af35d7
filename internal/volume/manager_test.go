//go:build linux

// Tests of SetUpPod, TearDownPod and ListPods against real folders in
// t.TempDir(), a fake clientset (k8s.io/client-go/kubernetes/fake) and a
// fake clock. The fake's object tracker cannot serve TokenRequest, so a
// reactor answers `create` on serviceaccounts/token. Tests that mount tmpfs
// run for real as root and are skipped otherwise.
package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

var start = time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)

const (
	podUID      = types.UID("6f1c2e2a-1d2b-4c7e-9a51-3f0e2d4c5b6a")
	apiAccess   = "kube-api-access-x7k2p"
	rootCA      = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
	tokenPeriod = 2885600 * time.Millisecond // 80% of 3607 s
)

func requireRoot(t *testing.T) {
	t.Helper()
	prereq.Root(t, "it mounts tmpfs and bind mounts (CAP_SYS_ADMIN)")
}

// tokenIssuer stands in for the API server's TokenRequest endpoint.
type tokenIssuer struct {
	mu       sync.Mutex
	requests []tokenCall
	err      error
}

type tokenCall struct {
	Namespace, ServiceAccount string
	Spec                      authenticationv1.TokenRequestSpec
}

func (ti *tokenIssuer) react(action k8stesting.Action) (bool, apiruntime.Object, error) {
	if action.GetSubresource() != "token" {
		return false, nil, nil
	}
	create := action.(k8stesting.CreateActionImpl)
	request := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.err != nil {
		return true, nil, ti.err
	}
	ti.requests = append(ti.requests, tokenCall{Namespace: create.GetNamespace(), ServiceAccount: create.Name, Spec: request.Spec})
	request.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(ti.requests)), ExpirationTimestamp: metav1.NewTime(start.Add(time.Duration(*request.Spec.ExpirationSeconds) * time.Second))}
	return true, request, nil
}

func (ti *tokenIssuer) fail(err error) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.err = err
}

func (ti *tokenIssuer) calls() []tokenCall {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	return append([]tokenCall(nil), ti.requests...)
}

type testEnv struct {
	root   string
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	tokens *tokenIssuer
	opts   Options
	m      *Manager
}

func newTestEnv(t *testing.T, opts Options, objects ...apiruntime.Object) *testEnv {
	t.Helper()
	opts.RootDir = t.TempDir()
	// Registered after TempDir, so it runs before the folder is removed:
	// a failed test must not leave mounts behind.
	t.Cleanup(func() { unmountEverythingUnder(opts.RootDir) })
	client := fake.NewClientset(objects...)
	tokens := &tokenIssuer{}
	client.PrependReactor("create", "serviceaccounts", tokens.react)
	clock := clocktesting.NewFakeClock(start)
	return &testEnv{
		root:   opts.RootDir,
		client: client,
		clock:  clock,
		tokens: tokens,
		opts:   opts,
		m:      NewManager(opts, client, clock, logr.Discard()),
	}
}

// restart is a new Manager on the same folders, as after a nodelet
// restart: nothing in memory.
func (e *testEnv) restart() {
	e.m = NewManager(e.opts, e.client, e.clock, logr.Discard())
}

func unmountEverythingUnder(dir string) {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return
	}
	mounts, _ := readMountInfo()
	for _, m := range mountsUnder(mounts, resolved) {
		_ = unix.Unmount(m.MountPoint, unix.MNT_DETACH)
	}
}

// mountsAt lists the file system types mounted at path.
func mountsAt(t *testing.T, path string) []string {
	t.Helper()
	mounts, err := readMountInfo()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range mounts {
		if m.MountPoint == path {
			types = append(types, m.FSType)
		}
	}
	return types
}

func mountsUnderDir(t *testing.T, dir string) []mountInfo {
	t.Helper()
	mounts, err := readMountInfo()
	if err != nil {
		t.Fatal(err)
	}
	return mountsUnder(mounts, dir)
}

func rootCAConfigMap(namespace, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: namespace},
		Data:       map[string]string{"ca.crt": data},
	}
}

// apiAccessVolume is the volume the API server adds to every pod.
func apiAccessVolume() corev1.Volume {
	return corev1.Volume{Name: apiAccess, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			}}},
		},
		DefaultMode: ptr.To[int32](0o644),
	}}}
}

func makePod(volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: podUID, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "web", Volumes: volumes},
	}
}

func setUp(t *testing.T, e *testEnv, pod *corev1.Pod) (map[string]string, time.Time) {
	t.Helper()
	paths, refreshAt, err := e.m.SetUpPod(context.Background(), pod)
	if err != nil {
		t.Fatalf("SetUpPod: %v", err)
	}
	return paths, refreshAt
}

func TestSetUpPodKubeAPIAccess(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{}, rootCAConfigMap("shop", rootCA))
	pod := makePod(apiAccessVolume())

	paths, refreshAt := setUp(t, e, pod)

	dir := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~projected", apiAccess)
	if diff := cmp.Diff(map[string]string{apiAccess: dir}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	wantFiles := map[string]string{
		"token":     "token-1 -rw-r--r--",
		"ca.crt":    rootCA + " -rw-r--r--",
		"namespace": "shop -rw-r--r--",
	}
	if diff := cmp.Diff(wantFiles, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tmpfs"}, mountsAt(t, dir)); diff != "" {
		t.Errorf("mounts at the volume (-want +got):\n%s", diff)
	}
	wantCalls := []tokenCall{{Namespace: "shop", ServiceAccount: "web", Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: podUID},
	}}}
	if diff := cmp.Diff(wantCalls, e.tokens.calls()); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
	if want := start.Add(DefaultSyncPeriod); !refreshAt.Equal(want) {
		t.Errorf("refreshAt = %v, want the next sync %v", refreshAt, want)
	}

	// Nothing is due: a second call asks the API server nothing.
	calls := len(e.client.Actions())
	paths2, refreshAt2 := setUp(t, e, pod)
	if diff := cmp.Diff(paths, paths2); diff != "" {
		t.Errorf("paths changed (-first +second):\n%s", diff)
	}
	if !refreshAt2.Equal(refreshAt) {
		t.Errorf("refreshAt moved from %v to %v", refreshAt, refreshAt2)
	}
	if got := e.client.Actions()[calls:]; len(got) != 0 {
		t.Errorf("a call with nothing due reached the API server: %v", got)
	}

	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatalf("TearDownPod: %v", err)
	}
	if got := mountsUnderDir(t, e.m.PodDir(podUID)); len(got) != 0 {
		t.Errorf("mounts left: %+v", got)
	}
	if _, err := os.Lstat(e.m.PodDir(podUID)); !os.IsNotExist(err) {
		t.Errorf("pod folder left (err %v)", err)
	}
}

func TestSetUpPodRefreshesTheTokenAt80PercentOfItsLifetime(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{SyncPeriod: -1}, rootCAConfigMap("shop", "CA-1"))
	pod := makePod(apiAccessVolume())
	paths, refreshAt := setUp(t, e, pod)
	dir := paths[apiAccess]
	if want := start.Add(tokenPeriod); !refreshAt.Equal(want) {
		t.Fatalf("refreshAt = %v, want %v", refreshAt, want)
	}
	// A new CA shows with the next write of the volume, and not before.
	if _, err := e.client.CoreV1().ConfigMaps("shop").Update(context.Background(), rootCAConfigMap("shop", "CA-2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.clock.SetTime(refreshAt.Add(-time.Second))
	_, refreshAt2 := setUp(t, e, pod)
	want := map[string]string{"token": "token-1 -rw-r--r--", "ca.crt": "CA-1 -rw-r--r--", "namespace": "shop -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files before 80%% (-want +got):\n%s", diff)
	}
	if !refreshAt2.Equal(refreshAt) {
		t.Errorf("refreshAt moved before the refresh: %v, want %v", refreshAt2, refreshAt)
	}

	e.clock.SetTime(refreshAt)
	_, refreshAt3 := setUp(t, e, pod)
	want = map[string]string{"token": "token-2 -rw-r--r--", "ca.crt": "CA-2 -rw-r--r--", "namespace": "shop -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files at 80%% (-want +got):\n%s", diff)
	}
	if want := refreshAt.Add(tokenPeriod); !refreshAt3.Equal(want) {
		t.Errorf("next refreshAt = %v, want %v", refreshAt3, want)
	}
	if got := len(e.tokens.calls()); got != 2 {
		t.Errorf("%d token requests, want 2", got)
	}
}

func TestSetUpPodResyncsContentsEverySyncPeriod(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{SyncPeriod: 30 * time.Second}, rootCAConfigMap("shop", "CA-1"))
	pod := makePod(apiAccessVolume())
	paths, refreshAt := setUp(t, e, pod)
	if want := start.Add(30 * time.Second); !refreshAt.Equal(want) {
		t.Fatalf("refreshAt = %v, want %v", refreshAt, want)
	}
	if _, err := e.client.CoreV1().ConfigMaps("shop").Update(context.Background(), rootCAConfigMap("shop", "CA-2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.clock.SetTime(refreshAt)
	setUp(t, e, pod)
	want := map[string]string{"token": "token-1 -rw-r--r--", "ca.crt": "CA-2 -rw-r--r--", "namespace": "shop -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, paths[apiAccess])); diff != "" {
		t.Errorf("files after a sync (-want +got):\n%s", diff)
	}
}

func TestSetUpPodKeepsAValidTokenWhenARefreshFails(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{SyncPeriod: -1}, rootCAConfigMap("shop", "CA"))
	pod := makePod(apiAccessVolume())
	paths, refreshAt := setUp(t, e, pod)
	dir := paths[apiAccess]

	e.tokens.fail(apierrors.NewServiceUnavailable("etcd is down"))
	e.clock.SetTime(refreshAt)
	_, retryAt := setUp(t, e, pod)
	if got := visibleFiles(t, dir)["token"]; got != "token-1 -rw-r--r--" {
		t.Errorf("token = %q, want the current one kept", got)
	}
	if want := refreshAt.Add(retryPeriod); !retryAt.Equal(want) {
		t.Errorf("refreshAt = %v, want a retry at %v", retryAt, want)
	}

	// Past its lifetime the token cannot be kept: FailedMount, but the
	// volume, in use by running containers, keeps its path.
	e.clock.SetTime(start.Add(3607 * time.Second))
	gotPaths, _, err := e.m.SetUpPod(context.Background(), pod)
	if !IsUserError(err) {
		t.Fatalf("error %v is not a user error", err)
	}
	want := `MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : failed to fetch token: etcd is down`
	if errs := UserErrors(err); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("user errors = %v, want [%s]", errs, want)
	}
	if diff := cmp.Diff(paths, gotPaths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}

	e.tokens.fail(nil)
	e.clock.Step(retryPeriod)
	setUp(t, e, pod)
	if got := visibleFiles(t, dir)["token"]; got != "token-2 -rw-r--r--" {
		t.Errorf("token = %q, want a new one once TokenRequest works again", got)
	}
}

func TestSetUpPodMissingConfigMapIsAFailedMount(t *testing.T) {
	tests := map[string]struct {
		objects []apiruntime.Object
		want    string
	}{
		"no ConfigMap": {
			want: `MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : configmap "kube-root-ca.crt" not found`,
		},
		"no such key": {
			objects: []apiruntime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "shop"}}},
			want:    `MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : configmap references non-existent config key: ca.crt`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, Options{}, tc.objects...)
			pod := makePod(apiAccessVolume())

			paths, refreshAt, err := e.m.SetUpPod(context.Background(), pod)
			if !IsUserError(err) {
				t.Fatalf("error %v is not a user error", err)
			}
			var mountErr *MountError
			if !errors.As(err, &mountErr) || mountErr.Error() != tc.want {
				t.Errorf("error = %v, want %s", err, tc.want)
			}
			if len(paths) != 0 || !refreshAt.IsZero() {
				t.Errorf("paths = %v, refreshAt = %v; want none", paths, refreshAt)
			}
			// Nothing was mounted for a volume that could not be built.
			if got := mountsUnderDir(t, e.root); len(got) != 0 {
				t.Errorf("mounts left: %+v", got)
			}
		})
	}
}

func TestSetUpPodWaitsForTheConfigMap(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{})
	pod := makePod(apiAccessVolume())
	if _, _, err := e.m.SetUpPod(context.Background(), pod); !IsUserError(err) {
		t.Fatalf("error %v is not a user error", err)
	}
	if _, err := e.client.CoreV1().ConfigMaps("shop").Create(context.Background(), rootCAConfigMap("shop", "CA"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	paths, _ := setUp(t, e, pod)
	if got := visibleFiles(t, paths[apiAccess])["ca.crt"]; got != "CA -rw-r--r--" {
		t.Errorf("ca.crt = %q", got)
	}
}

func TestSetUpPodSkipsAnOptionalConfigMap(t *testing.T) {
	e := newTestEnv(t, Options{})
	pod := makePod(corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
		Optional:             ptr.To(true),
	}}})

	paths, _ := setUp(t, e, pod)

	dir := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~configmap", "config")
	if diff := cmp.Diff(map[string]string{"config": dir}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if got := visibleFiles(t, dir); len(got) != 0 {
		t.Errorf("files in the volume of a missing optional ConfigMap: %v", got)
	}
	// Once it exists, the next sync brings its keys.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Data: map[string]string{"app.yaml": "a: 1"}}
	if _, err := e.client.CoreV1().ConfigMaps("shop").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(DefaultSyncPeriod)
	setUp(t, e, pod)
	if diff := cmp.Diff(map[string]string{"app.yaml": "a: 1 -rw-r--r--"}, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestSetUpPodSkipsAnOptionalProjectedConfigMap(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{})
	vol := apiAccessVolume()
	vol.Projected.Sources[1].ConfigMap.Optional = ptr.To(true)

	paths, _ := setUp(t, e, makePod(vol))

	want := map[string]string{"token": "token-1 -rw-r--r--", "namespace": "shop -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, paths[apiAccess])); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestSetUpPodRejectsUnsupportedVolumes(t *testing.T) {
	e := newTestEnv(t, Options{})
	pod := makePod(
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/"}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)

	paths, _, err := e.m.SetUpPod(context.Background(), pod)

	var unsupported *UnsupportedVolumeError
	if !errors.As(err, &unsupported) {
		t.Fatalf("error %v is not an UnsupportedVolumeError", err)
	}
	if want := `volume "data": nfs volumes are not supported by nodelet yet`; unsupported.Error() != want {
		t.Errorf("error = %q, want %q", unsupported.Error(), want)
	}
	if !IsUserError(err) {
		t.Error("not a user error")
	}
	// The other volume is set up all the same.
	cache := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~empty-dir", "cache")
	if diff := cmp.Diff(map[string]string{"cache": cache}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	info, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); !info.IsDir() || got != 0o777 {
		t.Errorf("emptyDir is %v, want a folder with mode 0777", info.Mode())
	}
}

func TestSetUpPodEmptyDirInMemoryAndTearDown(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{})
	size := resource.MustParse("64Mi")
	pod := makePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: &size,
	}}})

	paths, refreshAt := setUp(t, e, pod)

	dir := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~empty-dir", "scratch")
	if diff := cmp.Diff(map[string]string{"scratch": dir}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if !refreshAt.IsZero() {
		t.Errorf("refreshAt = %v, want never", refreshAt)
	}
	if diff := cmp.Diff([]string{"tmpfs"}, mountsAt(t, dir)); diff != "" {
		t.Errorf("mounts at the volume (-want +got):\n%s", diff)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if got := int64(fs.Blocks) * fs.Bsize; got != size.Value() {
		t.Errorf("tmpfs size = %d, want %d", got, size.Value())
	}

	// A container still holds a file open, and something else is mounted
	// below: the volume must come apart all the same.
	f, err := os.Create(filepath.Join(dir, "busy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inner := filepath.Join(dir, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}

	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatalf("TearDownPod: %v", err)
	}
	if got := mountsUnderDir(t, e.m.PodDir(podUID)); len(got) != 0 {
		t.Errorf("mounts left: %+v", got)
	}
	if _, err := os.Lstat(e.m.PodDir(podUID)); !os.IsNotExist(err) {
		t.Errorf("pod folder left (err %v)", err)
	}
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Errorf("second TearDownPod: %v", err)
	}
}

func TestSetUpPodSecretAndDownwardAPIVolumes(t *testing.T) {
	requireRoot(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Data: map[string][]byte{"password": []byte("hunter2"), "user": []byte("app")}}
	e := newTestEnv(t, Options{}, secret)
	pod := makePod(
		corev1.Volume{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "db", DefaultMode: ptr.To[int32](0o400),
			Items: []corev1.KeyToPath{{Key: "password", Path: "creds/password"}},
		}}},
		corev1.Volume{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
		}}},
	)

	paths, _ := setUp(t, e, pod)

	volumes := filepath.Join(e.root, "pods", string(podUID), "volumes")
	wantPaths := map[string]string{
		"db":      filepath.Join(volumes, "kubernetes.io~secret", "db"),
		"podinfo": filepath.Join(volumes, "kubernetes.io~downward-api", "podinfo"),
	}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"creds/password": "hunter2 -r--------"}, visibleFiles(t, paths["db"])); diff != "" {
		t.Errorf("secret files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"labels": `app="web" -rw-r--r--`}, visibleFiles(t, paths["podinfo"])); diff != "" {
		t.Errorf("downward API files (-want +got):\n%s", diff)
	}
	for name, path := range paths {
		if diff := cmp.Diff([]string{"tmpfs"}, mountsAt(t, path)); diff != "" {
			t.Errorf("mounts at volume %s (-want +got):\n%s", name, diff)
		}
	}

	// Labels change: the files that show them are rewritten at once, and
	// only they (the Secret is not read again).
	secretReads := func() int {
		n := 0
		for _, action := range e.client.Actions() {
			if action.GetVerb() == "get" && action.GetResource().Resource == "secrets" {
				n++
			}
		}
		return n
	}
	reads := secretReads()
	pod.Labels["tier"] = "front"
	setUp(t, e, pod)
	if got := visibleFiles(t, paths["podinfo"])["labels"]; got != "app=\"web\"\ntier=\"front\" -rw-r--r--" {
		t.Errorf("labels = %q after they changed", got)
	}
	if secretReads() != reads {
		t.Errorf("the Secret was read again for a change of the pod's labels")
	}
}

func TestSetUpPodMissingSecretIsAFailedMount(t *testing.T) {
	e := newTestEnv(t, Options{})
	pod := makePod(corev1.Volume{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}})

	_, _, err := e.m.SetUpPod(context.Background(), pod)

	want := `MountVolume.SetUp failed for volume "db" : secret "db" not found`
	if errs := UserErrors(err); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("user errors = %v, want [%s]", errs, want)
	}
}

func TestSetUpPodHostPath(t *testing.T) {
	e := newTestEnv(t, Options{})
	host := t.TempDir()
	missing := filepath.Join(host, "missing")
	pod := makePod(
		corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host, Type: ptr.To(corev1.HostPathDirectory)}}},
		corev1.Volume{Name: "gone", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: missing, Type: ptr.To(corev1.HostPathDirectory)}}},
	)

	paths, refreshAt, err := e.m.SetUpPod(context.Background(), pod)

	if diff := cmp.Diff(map[string]string{"logs": host}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if !refreshAt.IsZero() {
		t.Errorf("refreshAt = %v, want never", refreshAt)
	}
	want := `MountVolume.SetUp failed for volume "gone" : hostPath type check failed: ` + missing + ` is not a directory`
	if errs := UserErrors(err); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("user errors = %v, want [%s]", errs, want)
	}
	if !IsUserError(err) {
		t.Error("not a user error")
	}
}

func TestSetUpPodAfterARestart(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{}, rootCAConfigMap("shop", "CA"))
	pod := makePod(apiAccessVolume())
	paths, _ := setUp(t, e, pod)
	dir := paths[apiAccess]

	e.restart()
	e.clock.Step(time.Second)
	paths2, _ := setUp(t, e, pod)

	if diff := cmp.Diff(paths, paths2); diff != "" {
		t.Errorf("paths (-before +after):\n%s", diff)
	}
	// The tmpfs is reused, not mounted twice; a new token is asked for,
	// since the old one is not known.
	if diff := cmp.Diff([]string{"tmpfs"}, mountsAt(t, dir)); diff != "" {
		t.Errorf("mounts at the volume (-want +got):\n%s", diff)
	}
	if got := visibleFiles(t, dir)["token"]; got != "token-2 -rw-r--r--" {
		t.Errorf("token = %q, want a new one", got)
	}
}

func TestTearDownPodAfterARestart(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{}, rootCAConfigMap("shop", "CA"))
	size := resource.MustParse("1Mi")
	setUp(t, e, makePod(
		apiAccessVolume(),
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}},
	))
	if got := len(mountsUnderDir(t, e.m.PodDir(podUID))); got != 2 {
		t.Fatalf("%d mounts under the pod folder, want 2", got)
	}

	e.restart()
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatalf("TearDownPod: %v", err)
	}
	if got := mountsUnderDir(t, e.m.PodDir(podUID)); len(got) != 0 {
		t.Errorf("mounts left: %+v", got)
	}
	if _, err := os.Lstat(e.m.PodDir(podUID)); !os.IsNotExist(err) {
		t.Errorf("pod folder left (err %v)", err)
	}
}

func TestTearDownPodWithNothingMounted(t *testing.T) {
	e := newTestEnv(t, Options{})
	tests := map[string]func(t *testing.T) types.UID{
		"a pod whose volumes are plain folders": func(t *testing.T) types.UID {
			setUp(t, e, makePod(corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
			if err := os.WriteFile(filepath.Join(e.m.PodDir(podUID), "volumes", "kubernetes.io~empty-dir", "cache", "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return podUID
		},
		"a folder left by an earlier run": func(t *testing.T) types.UID {
			uid := types.UID("left-over")
			if err := os.MkdirAll(filepath.Join(e.m.PodDir(uid), "volumes", "kubernetes.io~projected", "x", "..data"), 0o750); err != nil {
				t.Fatal(err)
			}
			return uid
		},
		"a pod without a folder": func(t *testing.T) types.UID {
			return "never-set-up"
		},
	}
	for name, prepare := range tests {
		t.Run(name, func(t *testing.T) {
			uid := prepare(t)
			if err := e.m.TearDownPod(context.Background(), uid); err != nil {
				t.Fatalf("TearDownPod: %v", err)
			}
			if _, err := os.Lstat(e.m.PodDir(uid)); !os.IsNotExist(err) {
				t.Errorf("pod folder left (err %v)", err)
			}
			if err := e.m.TearDownPod(context.Background(), uid); err != nil {
				t.Errorf("second TearDownPod: %v", err)
			}
		})
	}
}

func TestListPods(t *testing.T) {
	e := newTestEnv(t, Options{})
	uids, err := e.m.ListPods()
	if err != nil || len(uids) != 0 {
		t.Fatalf("ListPods on an empty root = %v, %v", uids, err)
	}
	for _, uid := range []types.UID{"a", "b"} {
		pod := makePod(corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.UID = uid
		setUp(t, e, pod)
	}
	if err := e.m.TearDownPod(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	uids, err = e.m.ListPods()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]types.UID{"b"}, uids); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}

func TestInvalidPodUIDsNeverNameAFolder(t *testing.T) {
	e := newTestEnv(t, Options{})
	for _, uid := range []types.UID{"", ".", "..", "../etc", "a/b"} {
		pod := makePod()
		pod.UID = uid
		if _, _, err := e.m.SetUpPod(context.Background(), pod); err == nil {
			t.Errorf("SetUpPod accepted UID %q", uid)
		}
		if err := e.m.TearDownPod(context.Background(), uid); err == nil {
			t.Errorf("TearDownPod accepted UID %q", uid)
		}
	}
}

func TestSetUpPodOnManyPodsAtOnce(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Data: map[string]string{"k": "v"}}
	e := newTestEnv(t, Options{}, cm)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := makePod(
				corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			)
			pod.UID = types.UID(fmt.Sprintf("pod-%d", i))
			if _, _, err := e.m.SetUpPod(context.Background(), pod); err != nil {
				errs <- err
				return
			}
			if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if uids, err := e.m.ListPods(); err != nil || len(uids) != 0 {
		t.Errorf("ListPods = %v, %v; want none left", uids, err)
	}
}

func TestResyncsOfManyPodsShareConfigMapReads(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{SyncPeriod: 30 * time.Second}, rootCAConfigMap("shop", "CA-1"))
	configMapGets := func() int {
		n := 0
		for _, a := range e.client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
				n++
			}
		}
		return n
	}
	pods := []*corev1.Pod{makePod(apiAccessVolume()), makePod(apiAccessVolume()), makePod(apiAccessVolume())}
	for i, pod := range pods {
		pod.Name, pod.UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
	}
	var refreshAt time.Time
	for _, pod := range pods {
		_, refreshAt = setUp(t, e, pod)
	}
	if got := configMapGets(); got != len(pods) {
		t.Fatalf("first set-ups made %d ConfigMap GETs, want one each (%d): a new pod reads afresh", got, len(pods))
	}

	// The resyncs fall due together: one read serves them all.
	e.clock.SetTime(refreshAt)
	for _, pod := range pods {
		setUp(t, e, pod)
	}
	if got := configMapGets(); got != len(pods)+1 {
		t.Errorf("resyncs made %d ConfigMap GETs in all, want %d: one shared read", got, len(pods)+1)
	}

	// An update reaches a pod resyncing after the shared read grew older
	// than half the sync period.
	if _, err := e.client.CoreV1().ConfigMaps("shop").Update(context.Background(), rootCAConfigMap("shop", "CA-2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.SetTime(refreshAt.Add(30 * time.Second))
	paths, _ := setUp(t, e, pods[0])
	if got := visibleFiles(t, paths[apiAccess])["ca.crt"]; got != "CA-2 -rw-r--r--" {
		t.Errorf("ca.crt after the next resync = %q, want the update", got)
	}
}
