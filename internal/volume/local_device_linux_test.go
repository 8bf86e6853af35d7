// Local volumes on a real loop device (root): formatted when empty,
// mounted for the node and bind-mounted into the pod, unmounted after
// the last pod, and never formatted again; a block one's size reported.
package volume

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	prereq.LoopDevice(t)
	image := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", image).CombinedOutput()
	if err != nil {
		// /dev/loop-control is there (prereq.LoopDevice) but a container's
		// /dev may lack the /dev/loopN it hands out.
		prereq.Missing(t, "losetup could not attach a file to a loop device: %v (%s): in a container, give it the host's /dev/loop*", err, strings.TrimSpace(string(out)))
	}
	device := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", device).Run() })
	return device
}

func TestSetUpPodFormatsAndMountsALocalDevice(t *testing.T) {
	requireRoot(t)
	prereq.Tools(t, "blkid", "mkfs.ext4", "mount")
	device := loopDevice(t, 16<<20)
	e := claimEnv(t, device)
	pod := claimVolumePod(false)
	global := filepath.Join(e.root, localDeviceMountsDir, "pv-1")

	paths, _ := setUp(t, e, pod)
	if got, _ := probeDevice(device); got.fsType != "ext4" {
		t.Fatalf("the device's file system: %+v, want ext4", got)
	}
	if got := mountsAt(t, global); len(got) != 1 {
		t.Errorf("mounts of the device for the node: %v, want one", got)
	}
	writeFile(t, filepath.Join(paths["data"], "kept"), 0o644)
	if _, err := os.Stat(filepath.Join(global, "kept")); err != nil {
		t.Errorf("a file the pod wrote is not on the device: %v", err)
	}

	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := mountsAt(t, global); len(got) != 0 {
		t.Errorf("the device is still mounted for the node after its last pod: %v", got)
	}

	// The next pod finds the file: the device was not formatted again.
	paths, _ = setUp(t, e, pod)
	if _, err := os.Stat(filepath.Join(paths["data"], "kept")); err != nil {
		t.Errorf("the file is gone after a second set-up: %v", err)
	}
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
}

// A local block volume's usage is its device's size as capacity, and
// zero for the rest, as the kubelet's metricsBlock reports it.
func TestPodVolumeStatsOfALocalBlockVolumeAreItsDevicesSize(t *testing.T) {
	requireRoot(t)
	device := loopDevice(t, 16<<20)
	e, _ := blockClaimEnv(t, device)
	pod := blockPod(string(podUID))
	setUp(t, e, pod)

	got, ok := volumeStatsByName(e.m.PodVolumeStats(context.Background())[podUID])["data"]
	if !ok {
		t.Fatal("no stats for the block volume")
	}
	zero := uint64(0)
	want := statsapi.FsStats{
		Time:          got.Time,
		CapacityBytes: ptr.To[uint64](16 << 20), AvailableBytes: &zero, UsedBytes: &zero,
		Inodes: &zero, InodesFree: &zero, InodesUsed: &zero,
	}
	if diff := cmp.Diff(want, got.FsStats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if got.PVCRef == nil || got.PVCRef.Name != "data" {
		t.Errorf("pvcRef = %+v, want the claim data", got.PVCRef)
	}
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
}
