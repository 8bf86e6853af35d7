//go:build full

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The writer's bytes survive its pod and the volume's unstaging (nodelet
// killed between unpublishing and unstaging it) and are read by the
// next pod; the driver's call log shows each pod's stage, publish,
// unpublish, unstage in order, at the kubelet's block paths.
func TestCSIBlockVolumeIsMappedAndItsBytesOutliveThePod(t *testing.T) {
	plugin := f.startCSIPlugin(t, nil)
	ns := f.NewNamespace(t)
	const handle, text = "vol-block", "raw bytes from the writer"
	pvName := f.csiClaimOfMode(t, ns, handle, corev1.PersistentVolumeBlock)

	writer := f.createPod(t, blockPod(ns, "writer", writeBlock(text)))
	writer = f.waitForPod(t, writer, 2*time.Minute, "to be Running and Ready with its block volume", runningAndReady)
	f.waitForLogLine(t, writer, "app", time.Minute, "WROTE", func(line string) bool { return line == "WROTE" })
	link := filepath.Join(f.podDir(writer), "volumeDevices", "kubernetes.io~csi", pvName)
	if target, err := os.Readlink(link); err != nil || !strings.HasSuffix(target, filepath.Join("volumeDevices", "publish", pvName, string(writer.UID))) {
		t.Errorf("the pod's device link %s -> %q (%v), want the publish file", link, target, err)
	}

	// Killed between NodeUnpublishVolume and NodeUnstageVolume.
	plugin.setHook(t, "NodeUnstageVolume", true)
	f.deletePod(t, writer, nil)
	plugin.waitForCall(t, handle, "NodeUnstageVolume", false, 2*time.Minute)
	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	plugin.setHook(t, "NodeUnstageVolume", false)
	f.restartNodelet(t)
	f.waitForPodGone(t, writer, 2*time.Minute)
	plugin.waitForCall(t, handle, "NodeUnstageVolume", true, 2*time.Minute)
	f.expectCSIPodFolderGone(t, f.podDir(writer))

	reader := f.createPod(t, blockPod(ns, "reader", fmt.Sprintf(`echo "READ $(head -c %d /dev/xvda)"; exec sleep 3600`, len(text))))
	reader = f.waitForPod(t, reader, 2*time.Minute, "to be Running and Ready with its block volume", runningAndReady)
	f.waitForLogLine(t, reader, "app", time.Minute, "the writer's bytes", func(line string) bool { return line == "READ "+text })
	f.deletePod(t, reader, nil)
	f.waitForPodGone(t, reader, 2*time.Minute)
	await.Eventually(t, 2*time.Minute, "the reader's NodeUnstageVolume", await.Condition(func(context.Context) (bool, error) {
		n := 0
		for _, c := range plugin.calls(t, handle) {
			if c.Method == "NodeUnstageVolume" && c.OK {
				n++
			}
		}
		return n == 2, nil
	}))

	calls := plugin.calls(t, handle)
	life := []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}
	if diff := cmp.Diff(append(life, life...), okCalls(calls)); diff != "" {
		t.Errorf("calls that succeeded, two pods (-want +got):\n%s\nall calls: %v", diff, calls)
	}
	staging := filepath.Join(f.Env.NodeletRootDir, "plugins", "kubernetes.io", "csi", "volumeDevices", "staging", pvName)
	for _, c := range calls {
		if !c.OK && !strings.Contains(c.Error, "injected by the test") {
			t.Errorf("call %s failed, not by the test's doing: %s", c.Method, c.Error)
		}
		if (c.Method == "NodeStageVolume" || c.Method == "NodePublishVolume") && (c.StagingPath != staging || !strings.Contains(strings.ToLower(c.Capability), "block")) {
			t.Errorf("%s with staging path %s and capability %s, want %s and Block access", c.Method, c.StagingPath, c.Capability, staging)
		}
	}
	f.expectCSIPodFolderGone(t, f.podDir(reader))
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Errorf("the staging folder is left: %v", err)
	}
	if out, err := exec.Command("losetup", "-j", filepath.Join(plugin.dataDir, handle+".img")).Output(); err != nil || len(out) > 0 {
		t.Errorf("loop devices still on the volume's file after unstaging: %q %v", out, err)
	}
}
