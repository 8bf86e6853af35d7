package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// A volume its driver reports abnormal (the plugin's published folder is
// unmounted behind its back) gives the kubelet's VolumeConditionAbnormal
// warning on the pod when its stats are read, and still tears down in
// order.
func TestCSIAbnormalVolumeGivesTheKubeletsWarning(t *testing.T) {
	t.Parallel()
	plugin := f.startCSIPlugin(t, nil)
	ns := f.NewNamespace(t)
	const handle = "vol-condition"
	pvName := f.csiClaim(t, ns, handle)
	pod := f.createPod(t, csiPod(ns, "writer"))
	pod = f.waitForPod(t, pod, 2*time.Minute, "to be Running and Ready with its CSI volume", runningAndReady)

	target := filepath.Join(f.podDir(pod), "volumes", "kubernetes.io~csi", pvName, "mount")
	if out, err := exec.Command("umount", target).CombinedOutput(); err != nil {
		t.Fatalf("unmounting the published folder: %v: %s", err, out)
	}
	cert := f.kubeletClientCert(t)
	want := "Volume data: the volume is not mounted at " + target
	var seen []string
	// Each read of the stats may measure the volume (once a
	// --volume-stats-agg-period): read them until the warning shows.
	err := await.Poll(t.Context(), 2*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		if _, err := f.statsSummary(ctx, cert); err != nil {
			return false, nil
		}
		events, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range events.Items {
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
			if e.Type == corev1.EventTypeWarning && e.Reason == "VolumeConditionAbnormal" && e.Message == want && e.Source.Component == "kubelet" {
				return true, nil
			}
		}
		return false, nil
	}))
	if err != nil {
		t.Fatalf("no VolumeConditionAbnormal warning %q: %v; events:\n%s", want, err, strings.Join(seen, "\n"))
	}

	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, 2*time.Minute)
	plugin.waitForCall(t, handle, "NodeUnstageVolume", true, 2*time.Minute)
	if diff := cmp.Diff([]string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}, okCalls(plugin.calls(t, handle))); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f.expectCSIPodFolderGone(t, f.podDir(pod))
}
