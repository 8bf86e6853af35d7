//go:build linux

// Tests of persistentVolumeClaim volumes: claims and volumes from a fake
// clientset (k8s.io/client-go/kubernetes/fake), local volumes on folders in
// t.TempDir() bind-mounted for real, as root.
package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// claimEnv is a test env whose node is node-1, holding the claim "data"
// of namespace shop bound to the local volume pv-1 on source.
func claimEnv(t *testing.T, source string, objects ...apiruntime.Object) *testEnv {
	t.Helper()
	pv := localPV()
	pv.Spec.Local.Path = source
	claim := boundClaim()
	objects = append([]apiruntime.Object{claim, pv}, objects...)
	return newTestEnv(t, Options{NodeLabels: func(context.Context) map[string]string {
		return map[string]string{"kubernetes.io/hostname": "node-1"}
	}}, objects...)
}

// claimVolumePod is makePod with the claim "data" mounted at /data.
func claimVolumePod(readOnly bool) *corev1.Pod {
	pod := makePod(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: readOnly}}})
	pod.Spec.Containers = []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	return pod
}

func TestSetUpPodMountsALocalClaim(t *testing.T) {
	requireRoot(t)
	source := t.TempDir()
	writeFile(t, filepath.Join(source, "existing"), 0o600)
	e := claimEnv(t, source)
	pod := claimVolumePod(false)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}

	paths, _ := setUp(t, e, pod)

	dir := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~local-volume", "pv-1")
	if diff := cmp.Diff(map[string]string{"data": dir}, paths); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
	if got := mountsAt(t, dir); len(got) != 1 {
		t.Errorf("mounts at the volume: %v, want one bind mount", got)
	}
	// What is written through the pod's folder lands in the volume.
	writeFile(t, filepath.Join(dir, "new"), 0o644)
	if _, err := os.Stat(filepath.Join(source, "new")); err != nil {
		t.Errorf("a file written into the pod's folder is not in the volume: %v", err)
	}
	// fsGroup: the volume's files belong to the group, folders setgid.
	if got, want := ownerOf(t, filepath.Join(source, "existing")), (owner{GID: 2000, Mode: "-rw-rw----"}); got != want {
		t.Errorf("existing file = %+v, want %+v", got, want)
	}
	if got := ownerOf(t, source); got.GID != 2000 || got.Mode[:2] != "dg" {
		t.Errorf("the volume's root = %+v, want group 2000 and setgid", got)
	}

	// The claim's usage is reported with its pvcRef, walked (its folder
	// is no file system of its own).
	want := &statsapi.PVCReference{Name: "data", Namespace: "shop"}
	stats := e.m.PodVolumeStats(context.Background())[podUID]
	if len(stats) != 1 || stats[0].Name != "data" || !cmp.Equal(stats[0].PVCRef, want) || stats[0].InodesUsed == nil || *stats[0].InodesUsed != 3 {
		t.Errorf("volume stats %+v, want data with its pvcRef and 3 inodes used", stats)
	}
	if claims := e.m.ClaimVolumeStats(context.Background()); len(claims) != 1 || !cmp.Equal(claims[0].PVCRef, want) {
		t.Errorf("claim stats %+v, want data's", claims)
	}

	// After a restart, nothing is mounted twice, nor walked again.
	if err := os.Chown(filepath.Join(source, "new"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	e.restart()
	setUp(t, e, pod)
	if got := mountsAt(t, dir); len(got) != 1 {
		t.Errorf("mounts at the volume after a restart: %v, want still one", got)
	}
	if got := ownerOf(t, filepath.Join(source, "new")); got.GID != 1000 {
		t.Errorf("a file of the pod's has group %d after a restart, want 1000 (not walked again)", got.GID)
	}

	// Torn down: unmounted, the pod's folder gone, the volume's data kept.
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnderDir(t, e.m.PodDir(podUID)); len(got) != 0 {
		t.Errorf("mounts left: %+v", got)
	}
	for _, name := range []string{"existing", "new"} {
		if _, err := os.Stat(filepath.Join(source, name)); err != nil {
			t.Errorf("the volume lost %s when the pod was torn down: %v", name, err)
		}
	}
}

// The volume's gid annotation is a group the pod's containers get.
func TestSetUpPodGivesTheGroupOfTheClaimsVolume(t *testing.T) {
	requireRoot(t)
	source := t.TempDir()
	pv := localPV()
	pv.Name, pv.Spec.Local.Path = "pv-gid", source
	pv.Annotations = map[string]string{"pv.beta.kubernetes.io/gid": "4321"}
	claim := boundClaim()
	claim.Spec.VolumeName = pv.Name
	e := newTestEnv(t, Options{NodeLabels: func(context.Context) map[string]string {
		return map[string]string{"kubernetes.io/hostname": "node-1"}
	}}, claim, pv)
	pod := claimVolumePod(false)
	if got := e.m.ExtraSupplementalGroups(pod); len(got) != 0 {
		t.Errorf("groups before the volume is set up = %v, want none", got)
	}
	setUp(t, e, pod)
	if diff := cmp.Diff([]int64{4321}, e.m.ExtraSupplementalGroups(pod)); diff != "" {
		t.Errorf("ExtraSupplementalGroups (-want +got):\n%s", diff)
	}
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatal(err)
	}
}

func TestSetUpPodMountsAReadOnlyClaimReadOnly(t *testing.T) {
	requireRoot(t)
	source := t.TempDir()
	e := claimEnv(t, source)
	pod := claimVolumePod(true)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}

	paths, _ := setUp(t, e, pod)

	err := os.WriteFile(filepath.Join(paths["data"], "x"), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing into a read-only claim: %v, want EROFS", err)
	}
	// A read-only volume's ownership is left as it is, as the kubelet's.
	if got := ownerOf(t, source).GID; got == 2000 {
		t.Errorf("a read-only claim was given to the fsGroup")
	}
}

func TestSetUpPodWaitsForItsClaim(t *testing.T) {
	source := t.TempDir()
	tests := map[string]struct {
		claim *corev1.PersistentVolumeClaim
		pv    *corev1.PersistentVolume
		want  string
	}{
		"no claim": {
			want: `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC shop/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`,
		},
		"a claim not bound yet": {
			claim: func() *corev1.PersistentVolumeClaim {
				c := boundClaim()
				c.Spec.VolumeName, c.Status.Phase = "", corev1.ClaimPending
				return c
			}(),
			want: `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC shop/data: PVC is not bound`,
		},
		"a claim whose volume is gone": {
			claim: boundClaim(),
			want:  `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC shop/data: failed to fetch PV pv-1 from API server: persistentvolumes "pv-1" not found`,
		},
		"a volume of another node": {
			claim: boundClaim(),
			pv: func() *corev1.PersistentVolume {
				pv := localPV()
				pv.Spec.Local.Path = source
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"node-2"}
				return pv
			}(),
			want: `MountVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms`,
		},
		"a local volume whose folder is missing": {
			claim: boundClaim(),
			pv: func() *corev1.PersistentVolume {
				pv := localPV()
				pv.Spec.Local.Path = filepath.Join(source, "missing")
				return pv
			}(),
			want: `MountVolume.SetUp failed for volume "pv-1" : path "` + filepath.Join(source, "missing") + `" does not exist`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var objects []apiruntime.Object
			if tc.claim != nil {
				objects = append(objects, tc.claim)
			}
			if tc.pv != nil {
				objects = append(objects, tc.pv)
			}
			e := newTestEnv(t, Options{NodeLabels: func(context.Context) map[string]string {
				return map[string]string{"kubernetes.io/hostname": "node-1"}
			}}, objects...)
			paths, _, err := e.m.SetUpPod(context.Background(), claimVolumePod(false))
			if errs := UserErrors(err); len(errs) != 1 || errs[0].Error() != tc.want {
				t.Errorf("user errors = %v, want [%s]", errs, tc.want)
			}
			if _, ok := paths["data"]; ok {
				t.Errorf("the claim's volume has a path: %v", paths)
			}
		})
	}
}

func TestSetUpPodMountsAClaimOnceItIsBound(t *testing.T) {
	requireRoot(t)
	source := t.TempDir()
	claim := boundClaim()
	claim.Spec.VolumeName, claim.Status.Phase = "", corev1.ClaimPending
	e := newTestEnv(t, Options{}, claim)
	pod := claimVolumePod(false)
	if _, _, err := e.m.SetUpPod(context.Background(), pod); !IsUserError(err) {
		t.Fatalf("SetUpPod with a pending claim: %v, want a user error", err)
	}

	// The binder binds it: the next try mounts it.
	pv := localPV()
	pv.Spec.Local.Path, pv.Spec.NodeAffinity = source, nil
	if _, err := e.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim = boundClaim()
	if _, err := e.client.CoreV1().PersistentVolumeClaims("shop").Update(context.Background(), claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	paths, _ := setUp(t, e, pod)
	if got := mountsAt(t, paths["data"]); len(got) != 1 {
		t.Errorf("mounts at %s: %v, want the claim's volume", paths["data"], got)
	}
}

func TestSetUpPodHostPathClaim(t *testing.T) {
	source := filepath.Join(t.TempDir(), "made")
	pv := localPV()
	pv.Spec.Local, pv.Spec.NodeAffinity = nil, nil
	pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: source, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}
	e := newTestEnv(t, Options{}, boundClaim(), pv)
	pod := claimVolumePod(false)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}

	paths, _ := setUp(t, e, pod)

	// Handed to the runtime as it is: made by its type, never mounted,
	// its ownership and usage not nodelet's.
	if diff := cmp.Diff(map[string]string{"data": source}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if info, err := os.Stat(source); err != nil || !info.IsDir() {
		t.Errorf("DirectoryOrCreate did not make %s: %v", source, err)
	}
	if got := ownerOf(t, source).GID; got == 2000 {
		t.Errorf("a hostPath volume was given to the fsGroup")
	}
	if got := e.m.PodVolumeStats(context.Background())[podUID]; len(got) != 0 {
		t.Errorf("volume stats of a hostPath claim: %v, want none", got)
	}
}

// A generic ephemeral volume is the claim named after the pod and the
// volume, mounted as a persistentVolumeClaim's once the pod owns it; a
// claim of that name the pod does not own is refused in the kubelet's
// words.
func TestSetUpPodMountsAGenericEphemeralVolumeOnlyWhenThePodOwnsItsClaim(t *testing.T) {
	requireRoot(t)
	source := t.TempDir()
	pod := makePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{},
	}}})
	pod.Spec.Containers = []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}}
	claim := boundClaim()
	claim.Name = "web-0-scratch"
	pv := localPV()
	pv.Spec.Local.Path = source
	nodeLabels := Options{NodeLabels: func(context.Context) map[string]string {
		return map[string]string{"kubernetes.io/hostname": "node-1"}
	}}

	// Another pod's claim under that name.
	e := newTestEnv(t, nodeLabels, claim, pv)
	_, _, err := e.m.SetUpPod(context.Background(), pod)
	want := "Unable to attach or mount volumes: unmounted volumes=[scratch], unattached volumes=[], failed to process volumes=[scratch]: PVC shop/web-0-scratch was not created for pod shop/web-0 (pod is not owner)"
	if errs := UserErrors(err); len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("user errors = %v, want [%s]", errs, want)
	}

	// The claim the controller-manager made for this pod.
	owned := claim.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	e = newTestEnv(t, nodeLabels, owned, pv)
	paths, _ := setUp(t, e, pod)
	dir := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~local-volume", "pv-1")
	if diff := cmp.Diff(map[string]string{"scratch": dir}, paths); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
	want2 := &statsapi.PVCReference{Name: "web-0-scratch", Namespace: "shop"}
	if claims := e.m.ClaimVolumeStats(context.Background()); len(claims) != 1 || !cmp.Equal(claims[0].PVCRef, want2) {
		t.Errorf("claim stats %+v, want web-0-scratch's", claims)
	}
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnderDir(t, e.m.PodDir(podUID)); len(got) != 0 {
		t.Errorf("mounts left: %+v", got)
	}
}

// A teardown renames the pod's folder before it unmounts and removes it,
// so that a set-up still under way cannot mount into the tree being
// removed. A folder a dead nodelet left renamed, with a local volume still
// bind-mounted in it, names its pod to the orphan sweep, and its teardown
// unmounts the volume before it removes anything: the volume keeps its
// data.
func TestTearDownPodFinishesAFolderLeftHalfRemoved(t *testing.T) {
	requireRoot(t)
	source := t.TempDir()
	writeFile(t, filepath.Join(source, "kept"), 0o644)
	e := claimEnv(t, source)
	setUp(t, e, claimVolumePod(false))

	left := filepath.Join(e.root, "pods", ".removing-"+string(podUID)+"-1")
	if err := os.Rename(e.m.PodDir(podUID), left); err != nil {
		t.Fatal(err)
	}
	e.restart()
	uids, err := e.m.ListPods()
	if err != nil || !cmp.Equal(uids, []types.UID{podUID}) {
		t.Fatalf("ListPods = %v, %v; want the pod whose folder is left", uids, err)
	}
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Errorf("the folder left half removed is still there (err %v)", err)
	}
	if got := mountsUnderDir(t, filepath.Join(e.root, "pods")); len(got) != 0 {
		t.Errorf("mounts left: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(source, "kept")); err != nil {
		t.Errorf("the volume lost its data: %v", err)
	}
	if uids, err := e.m.ListPods(); err != nil || len(uids) != 0 {
		t.Errorf("ListPods after the teardown = %v, %v; want none", uids, err)
	}
}

func TestSetUpPodRelabelsAWritableLocalClaimOnAnSELinuxHost(t *testing.T) {
	requireRoot(t)
	// The host's SELinux is faked (Options.SELinuxEnabled); the bind
	// mount is real.
	for _, readOnly := range []bool{false, true} {
		e := claimEnv(t, t.TempDir())
		e.opts.SELinuxEnabled = func() bool { return true }
		e.restart()
		pod := claimVolumePod(readOnly)
		setUp(t, e, pod)
		if got, want := e.m.SELinuxRelabel(pod)["data"], !readOnly; got != want {
			t.Errorf("read-only %t: relabelled %t, want %t", readOnly, got, want)
		}
		if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
			t.Fatal(err)
		}
	}
}
