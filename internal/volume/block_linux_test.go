//go:build linux

// Tests of volumes of volumeMode Block: a CSI volume staged, published
// to a file and mapped into the pod's folder through the fake node
// service (fakeCSINode, whose publish makes a block device node at the
// target with mknod), and a local volume whose path is a device node
// made in t.TempDir(); root, for mknod.
package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// makeBlockNode makes a block device node at path (the loop device
// 7:0's numbers; it is never opened).
func makeBlockNode(path string) error {
	return unix.Mknod(path, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0)))
}

// blockPod uses the claim "data" as a device.
func blockPod(uid string) *corev1.Pod {
	pod := csiClaimPod(types.UID(uid))
	pod.Spec.Containers[0].VolumeMounts = nil
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	return pod
}

func blockCSIObjects() []apiruntime.Object {
	objects := csiClaimObjects()
	objects[1] = csiPV(func(pv *corev1.PersistentVolume) {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
		pv.Spec.CSI.FSType = "ext4"
		pv.Spec.MountOptions = []string{"noatime"}
	})
	return objects
}

func TestCSIBlockVolumeIsStagedPublishedMappedAndReleasedInReverse(t *testing.T) {
	requireRoot(t)
	node := &fakeCSINode{onPublish: makeBlockNode}
	drivers := &fakeCSIDrivers{node: node, registered: true}
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, blockCSIObjects()...)
	pod := blockPod("uid-1")
	link := filepath.Join(e.root, "pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1")
	staging := filepath.Join(e.root, "plugins/kubernetes.io/csi/volumeDevices/staging/pv-1")
	publish := filepath.Join(e.root, "plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-1")
	// The link must be gone before the driver is asked to unpublish.
	node.onUnpublish = func(target string) error {
		if _, err := os.Lstat(link); !os.IsNotExist(err) {
			t.Errorf("NodeUnpublishVolume while the pod's link is still there: %v", err)
		}
		return os.Remove(target)
	}

	paths, _ := setUp(t, e, pod)
	if paths["data"] != link {
		t.Errorf("path = %s, want the pod's link %s", paths["data"], link)
	}
	if got, err := os.Readlink(link); err != nil || got != publish {
		t.Errorf("link -> %q (%v), want the publish file %s", got, err, publish)
	}
	if len(node.stages) != 1 || len(node.publishes) != 1 {
		t.Fatalf("stages %d publishes %d, want one each", len(node.stages), len(node.publishes))
	}
	stage, publishReq := node.stages[0], node.publishes[0]
	if stage.StagingTargetPath != staging || publishReq.StagingTargetPath != staging || publishReq.TargetPath != publish {
		t.Errorf("staging %s / %s, target %s; want %s and %s", stage.StagingTargetPath, publishReq.StagingTargetPath, publishReq.TargetPath, staging, publish)
	}
	if stage.VolumeCapability.GetBlock() == nil || publishReq.VolumeCapability.GetBlock() == nil || stage.VolumeCapability.GetMount() != nil {
		t.Errorf("capabilities %v / %v, want Block access (no fsType, no mount flags)", stage.VolumeCapability, publishReq.VolumeCapability)
	}

	// Set up again (a resync, or a restart): nothing called again; a
	// nodelet killed between publishing and linking links now.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	e.restart()
	setUp(t, e, pod)
	if got, err := os.Readlink(link); err != nil || got != publish {
		t.Errorf("link after a restart -> %q (%v), want the publish file %s", got, err, publish)
	}
	if diff := cmp.Diff([]string{"NodeStageVolume vol-1", "NodePublishVolume vol-1"}, node.takeCalls()); diff != "" {
		t.Errorf("set-up calls (-want +got):\n%s", diff)
	}

	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NodeUnpublishVolume vol-1", "NodeUnstageVolume vol-1"}, node.takeCalls()); diff != "" {
		t.Errorf("teardown calls (-want +got):\n%s", diff)
	}
	for _, gone := range []string{e.m.PodDir(pod.UID), staging, filepath.Dir(publish)} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s left after teardown: %v", gone, err)
		}
	}
}

func TestCSIBlockVolumeADriverCannotMapIsNeverAFileSystem(t *testing.T) {
	requireRoot(t)
	// The driver publishes a folder, as for a mounted volume.
	node := &fakeCSINode{onPublish: func(target string) error { return os.Mkdir(target, 0o750) }}
	drivers := &fakeCSIDrivers{node: node, registered: true}
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, blockCSIObjects()...)
	pod := blockPod("uid-1")

	paths, _, err := e.m.SetUpPod(context.Background(), pod)
	want := `MapVolume.MapBlockVolume failed for volume "pv-1" : `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "is not a block device") || !IsUserError(err) {
		t.Fatalf("error = %v, want a user error %s... is not a block device", err, want)
	}
	if _, ok := paths["data"]; ok {
		t.Errorf("the volume was handed out: %v", paths)
	}
	node.onUnpublish = os.Remove
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NodeStageVolume vol-1", "NodePublishVolume vol-1", "NodeUnpublishVolume vol-1", "NodeUnstageVolume vol-1"}, node.takeCalls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// blockClaimEnv is claimEnv with its PersistentVolume, a local one on
// device, made of volumeMode Block.
func blockClaimEnv(t *testing.T, device string) (*testEnv, *corev1.PersistentVolume) {
	t.Helper()
	e := claimEnv(t, device)
	pv, err := e.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
	if _, err := e.client.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e, pv
}

func TestSetUpPodMapsALocalBlockVolume(t *testing.T) {
	requireRoot(t)
	device := filepath.Join(t.TempDir(), "disk")
	if err := makeBlockNode(device); err != nil {
		t.Fatal(err)
	}
	e, pv := blockClaimEnv(t, device)
	pod := blockPod(string(podUID))

	paths, _ := setUp(t, e, pod)
	link := filepath.Join(e.root, "pods", string(podUID), "volumeDevices/kubernetes.io~local-volume/pv-1")
	if paths["data"] != link {
		t.Errorf("path = %s, want %s", paths["data"], link)
	}
	if got, err := os.Readlink(link); err != nil || got != device {
		t.Errorf("link -> %q (%v), want %s", got, err, device)
	}
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(device); err != nil {
		t.Errorf("the device went with the pod: %v", err)
	}

	// A folder is not a device: never mounted in its place.
	pv.Spec.Local.Path = t.TempDir()
	if _, err := e.client.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.m.SetUpPod(context.Background(), pod)
	if want := `MapVolume.MapBlockVolume failed for volume "pv-1" : ` + pv.Spec.Local.Path + " is not a block device"; err == nil || err.Error() != want || !IsUserError(err) {
		t.Errorf("error = %v, want the user error %s", err, want)
	}
}
