package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// Claims of volumeMode Block: the container gets the volume as a device
// (volumeDevices), a CSI one staged, published and mapped by the node as
// the kubelet does it (the plugin's volume is a file behind a loop
// device), a local one whose path is a device; raw bytes written by one
// pod are read by the next.

// blockPod is a pod that has the claim "data" as its device /dev/xvda
// and runs script.
func blockPod(ns, name, script string) *corev1.Pod {
	pod := newPod(ns, name).withGracePeriod(1).withShell(script).obj()
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}}}
	return pod
}

// writeBlock writes text at the start of the device, synced, and says so.
func writeBlock(text string) string {
	return fmt.Sprintf(`[ -b /dev/xvda ] && printf '%s' | dd of=/dev/xvda conv=fsync 2>/dev/null && echo WROTE; exec sleep 3600`, text)
}

// localBlockClaim makes a local PersistentVolume of volumeMode Block on
// path, on this node, and the claim "data" bound to it.
func (f *Framework) localBlockClaim(t *testing.T, ns, path string) string {
	t.Helper()
	block := corev1.PersistentVolumeBlock
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-data"},
		Spec: corev1.PersistentVolumeSpec{
			VolumeMode:             &block,
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("4Mi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{f.Env.NodeName}}},
			}}}},
		},
	}
	if _, err := f.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	if _, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			VolumeMode:       &block,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("4Mi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pv.Name
}

// A local volume whose path is a block device (a loop device the test
// attaches) is the container's device: what it writes is on the device,
// and /stats/summary reports the device's size.
// One whose path is a folder is never mounted in its place: the pod waits
// with a FailedMount event.
func TestLocalBlockVolumeIsTheContainersDeviceAndAFolderIsNot(t *testing.T) {
	t.Parallel()
	image := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(image, make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", image).Output()
	if err != nil {
		t.Fatalf("attaching a loop device: %v", err)
	}
	device := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", device).Run() })

	ns := f.NewNamespace(t)
	const text = "raw bytes on a local disk"
	f.localBlockClaim(t, ns, device)
	pod := f.createPod(t, blockPod(ns, "writer", writeBlock(text)))
	pod = f.waitForPod(t, pod, 2*time.Minute, "to be Running and Ready with its local device", runningAndReady)
	f.waitForLogLine(t, pod, "app", time.Minute, "WROTE", func(line string) bool { return line == "WROTE" })
	got := make([]byte, len(text))
	d, err := os.Open(device)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.ReadAt(got, 0)
	d.Close()
	if err != nil || string(got) != text {
		t.Errorf("the device's first bytes: %q %v, want %q", got, err, text)
	}
	// Its usage is the device's size as capacity, as the kubelet's.
	cert := f.kubeletClientCert(t)
	var stats *statsapi.VolumeStats
	await.Eventually(t, 2*time.Minute, "the device's capacity in /stats/summary", await.Condition(func(ctx context.Context) (bool, error) {
		s, err := f.statsSummary(ctx, cert)
		if err != nil {
			return false, err
		}
		stats = volumeStats(s, pod, "data")
		return stats != nil, nil
	}))
	if stats.CapacityBytes == nil || *stats.CapacityBytes != 4<<20 || stats.PVCRef == nil || stats.PVCRef.Name != "data" {
		data, _ := json.Marshal(stats)
		t.Errorf("the block volume's stats: %s, want capacity 4 MiB and the claim data", data)
	}
	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, 2*time.Minute)
	f.expectPodFolderGone(t, f.podDir(pod))

	folderNS := f.NewNamespace(t)
	folder := t.TempDir()
	pvName := f.localBlockClaim(t, folderNS, folder)
	waiting := f.createPod(t, blockPod(folderNS, "waiting", writeBlock(text)))
	f.waitForEvent(t, waiting, "FailedMount", fmt.Sprintf(`MapVolume.MapBlockVolume failed for volume %q : %s is not a block device`, pvName, folder), 2*time.Minute)
	f.waitForPod(t, waiting, 30*time.Second, "to wait in ContainerCreating", waitingWith("app", "ContainerCreating", ""))
}
