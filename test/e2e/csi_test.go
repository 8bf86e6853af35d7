package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The node side of CSI with a real node plugin (test/csi): registration
// into the CSINode and the Node, and a claim on a static csi
// PersistentVolume staged and published for its pod, then unpublished
// and unstaged, in that order, the plugin's call log the evidence.
// Those that kill nodelet run alone (no t.Parallel); the others run
// beside the parallel tests, one at a time (startCSIPlugin).

// The driver asks for the pod's tokens and to be republished: the
// publish call carries them, and is made again while the pod runs.
func TestCSIDriverRegistersAndAClaimIsStagedAndPublished(t *testing.T) {
	t.Parallel()
	plugin := f.startCSIPlugin(t, func(s *storagev1.CSIDriverSpec) {
		s.TokenRequests = []storagev1.TokenRequest{{Audience: csiTokenAudience}}
		s.RequiresRepublish = ptr.To(true)
	})
	ns := f.NewNamespace(t)

	await.Eventually(t, time.Minute, "the CSINode to list the driver with its node ID", await.Condition(func(ctx context.Context) (bool, error) {
		csiNode, err := f.Client.StorageV1().CSINodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range csiNode.Spec.Drivers {
			if d.Name == mockDriver {
				return d.NodeID == plugin.nodeID && d.Allocatable != nil && d.Allocatable.Count != nil, nil
			}
		}
		return false, nil
	}))
	node, err := f.Client.CoreV1().Nodes().Get(t.Context(), f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids map[string]string
	if err := json.Unmarshal([]byte(node.Annotations["csi.volume.kubernetes.io/nodeid"]), &ids); err != nil || ids[mockDriver] != plugin.nodeID {
		t.Errorf("node annotation csi.volume.kubernetes.io/nodeid = %q (%v), want the driver's node ID %s", node.Annotations["csi.volume.kubernetes.io/nodeid"], err, plugin.nodeID)
	}
	if got := node.Labels["topology.mock.csi.nodelet.dev/node"]; got != plugin.nodeID {
		t.Errorf("topology label = %q, want %s", got, plugin.nodeID)
	}

	const handle = "vol-register"
	f.csiClaim(t, ns, handle)
	pod := f.createPod(t, csiPod(ns, "writer"))
	pod = f.waitForPod(t, pod, 2*time.Minute, "to be Running and Ready with its CSI volume", runningAndReady)
	want := "WROTE writer"
	f.waitForLogLine(t, pod, "app", time.Minute, want, func(line string) bool { return line == want })
	// The container wrote into the driver's own folder for the volume.
	if data, err := os.ReadFile(filepath.Join(plugin.dataDir, handle, "owner")); err != nil || string(data) != "writer\n" {
		t.Errorf("the volume's file in the driver's folder: %q, %v", data, err)
	}
	if diff := cmp.Diff([]string{"NodeStageVolume", "NodePublishVolume"}, okCalls(plugin.calls(t, handle))); diff != "" {
		t.Errorf("calls on start (-want +got):\n%s", diff)
	}
	f.expectCSIVolumeStats(t, pod, ns)
	f.expectCSITokensRepublished(t, plugin, pod, handle)

	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, 2*time.Minute)
	plugin.waitForCall(t, handle, "NodeUnstageVolume", true, time.Minute)
	if diff := cmp.Diff([]string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}, okCalls(plugin.calls(t, handle))); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f.expectCSIPodFolderGone(t, f.podDir(pod))
}

func TestCSIVolumeCallsStayInOrderAcrossNodeletKillsAndADriverRestart(t *testing.T) {
	plugin := f.startCSIPlugin(t, nil)
	ns := f.NewNamespace(t)
	const handle = "vol-kills"
	f.csiClaim(t, ns, handle)

	// Killed between NodeStageVolume and NodePublishVolume.
	plugin.setHook(t, "NodePublishVolume", true)
	pod := f.createPod(t, csiPod(ns, "writer"))
	plugin.waitForCall(t, handle, "NodePublishVolume", false, 2*time.Minute)
	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	plugin.setHook(t, "NodePublishVolume", false)
	f.restartNodelet(t)
	pod = f.waitForPod(t, pod, 2*time.Minute, "to be Running and Ready with its CSI volume", runningAndReady)

	// The plugin crashes and comes back (its registrar stays): nodelet's
	// client reconnects by itself.
	plugin.process.restart(t)

	// Killed between NodeUnpublishVolume and NodeUnstageVolume.
	plugin.setHook(t, "NodeUnstageVolume", true)
	f.deletePod(t, pod, nil)
	plugin.waitForCall(t, handle, "NodeUnstageVolume", false, 2*time.Minute)
	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	plugin.setHook(t, "NodeUnstageVolume", false)
	f.restartNodelet(t)
	f.waitForPodGone(t, pod, 2*time.Minute)
	plugin.waitForCall(t, handle, "NodeUnstageVolume", true, 2*time.Minute)

	calls := plugin.calls(t, handle)
	if diff := cmp.Diff([]string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}, okCalls(calls)); diff != "" {
		t.Errorf("calls that succeeded, across two kills (-want +got):\n%s\nall calls: %v", diff, calls)
	}
	// The plugin refuses to publish what is not staged and to unstage
	// what is published: only the test's own failures may show.
	for _, c := range calls {
		if !c.OK && !strings.Contains(c.Error, "injected by the test") {
			t.Errorf("call %s failed, not by the test's doing: %s", c.Method, c.Error)
		}
	}
	f.expectCSIPodFolderGone(t, f.podDir(pod))
}

// expectCSIVolumeStats waits for the pod's claim "data", into which it
// wrote 10 MiB, to show that much used in /stats/summary, as the driver
// counts it (NodeGetVolumeStats), and for the claim's usage and health
// gauges in /metrics.
func (f *Framework) expectCSIVolumeStats(t *testing.T, pod *corev1.Pod, ns string) {
	t.Helper()
	const tenMiB = 10 << 20
	cert := f.kubeletClientCert(t)
	last := f.waitForVolumeUsage(t, cert, pod, "data", tenMiB)
	if want := (statsapi.PVCReference{Name: "data", Namespace: ns}); last.PVCRef == nil || *last.PVCRef != want ||
		last.CapacityBytes == nil || *last.CapacityBytes < tenMiB || last.InodesUsed == nil || *last.InodesUsed < 3 {
		data, _ := json.Marshal(last)
		t.Errorf("the CSI claim's stats: %s, want pvcRef %v, the driver's capacity and at least 3 inodes used", data, want)
	}
	var body []byte
	wants := []string{
		fmt.Sprintf(`kubelet_volume_stats_used_bytes{namespace="%s",persistentvolumeclaim="data"}`, ns),
		fmt.Sprintf(`kubelet_volume_stats_health_status_abnormal{namespace="%s",persistentvolumeclaim="data"} 0`, ns),
	}
	err := await.Poll(t.Context(), time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		code, b, err := f.nodeAPI(ctx, "/metrics", cert, "")
		body = b
		return err == nil && code == 200 && strings.Contains(string(b), wants[0]) && strings.Contains(string(b), wants[1]), err
	}))
	if err != nil {
		t.Errorf("/metrics never had %q: %v; volume lines: %q", wants, err, grepLines(string(body), "kubelet_volume_stats_"))
	}
}

// csiTokenAudience is the audience the test's driver asks tokens for.
const csiTokenAudience = "nodelet-e2e-csi"

// expectCSITokensRepublished waits for the volume to be published a
// second time while its pod runs (nodelet republishes at each volume
// resync, 40 s), and checks each publish call carried a token for the
// driver's audience that the API server takes as the pod's service
// account's, bound to the pod, and that the plugin read them.
func (f *Framework) expectCSITokensRepublished(t *testing.T, plugin *csiPlugin, pod *corev1.Pod, handle string) {
	t.Helper()
	var publishes []csiCall
	await.Eventually(t, 2*time.Minute, "a second NodePublishVolume (requiresRepublish)", await.Condition(func(context.Context) (bool, error) {
		publishes = nil
		for _, c := range plugin.calls(t, handle) {
			if c.Method == "NodePublishVolume" && c.OK {
				publishes = append(publishes, c)
			}
		}
		return len(publishes) >= 2, nil
	}))
	for i, c := range publishes {
		var tokens map[string]struct {
			Token               string      `json:"token"`
			ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`
		}
		if err := json.Unmarshal([]byte(c.Context["csi.storage.k8s.io/serviceAccount.tokens"]), &tokens); err != nil {
			t.Fatalf("publish %d: the tokens in the volume context %v: %v", i, c.Context, err)
		}
		token := tokens[csiTokenAudience]
		if len(tokens) != 1 || token.Token == "" || !token.ExpirationTimestamp.After(time.Now()) {
			t.Fatalf("publish %d: tokens for audiences %v, want one for %s expiring later", i, slices.Collect(maps.Keys(tokens)), csiTokenAudience)
		}
		review, err := f.Client.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token.Token, Audiences: []string{csiTokenAudience}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status := review.Status
		if want := "system:serviceaccount:" + pod.Namespace + ":default"; !status.Authenticated || status.User.Username != want ||
			!slices.Contains(status.User.Extra["authentication.kubernetes.io/pod-uid"], string(pod.UID)) {
			t.Errorf("publish %d: TokenReview of the driver's token: %+v, want %s bound to pod %s", i, status, want, pod.UID)
		}
	}
	data, err := os.ReadFile(plugin.log)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"Got service account tokens" volume="` + handle + `" audiences="` + csiTokenAudience + `"`; !strings.Contains(string(data), want) {
		t.Errorf("the plugin's log has no %s", want)
	}
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// expectPodFolderGone waits until the pod's folder and every mount under
// it are gone.
func (f *Framework) expectPodFolderGone(t *testing.T, dir string) {
	t.Helper()
	await.Eventually(t, time.Minute, "the pod's folder and mounts to be gone", await.Condition(func(context.Context) (bool, error) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err) && len(f.mountsUnder(t, dir)) == 0, nil
	}))
}

// expectCSIPodFolderGone is expectPodFolderGone for the pod of a CSI
// test, which also checks nothing of the mock driver's is left staged:
// only the test holding the plugin's turn may ask that.
func (f *Framework) expectCSIPodFolderGone(t *testing.T, dir string) {
	t.Helper()
	f.expectPodFolderGone(t, dir)
	if staged := f.mountsUnder(t, filepath.Join(f.Env.NodeletRootDir, "plugins", "kubernetes.io", "csi", mockDriver)); len(staged) > 0 {
		t.Errorf("still mounted after NodeUnstageVolume: %v", staged)
	}
}

// With attachRequired, the pod waits for the attach/detach controller's
// VolumeAttachment to be attached (the test attaches it, as a driver's
// external-attacher would), the Node lists the volume in volumesInUse
// while it is used, and the controller detaches it once it is no longer.
func TestCSIVolumeWaitsForItsAttachment(t *testing.T) {
	t.Parallel()
	plugin := f.startCSIPlugin(t, func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(true) })
	ns := f.NewNamespace(t)
	const handle = "vol-attach"
	f.csiClaim(t, ns, handle)
	uniqueName := corev1.UniqueVolumeName("kubernetes.io/csi/" + mockDriver + "^" + handle)
	sum := sha256.Sum256([]byte(handle + mockDriver + f.Env.NodeName))
	attachment := fmt.Sprintf("csi-%x", sum)

	pod := f.createPod(t, csiPod(ns, "writer"))
	f.waitForEvent(t, pod, "FailedMount", "volume "+handle+" is not attached for volume attachment "+attachment, 2*time.Minute)
	f.waitForVolumesInUse(t, uniqueName, true)
	attachments := f.Client.StorageV1().VolumeAttachments()
	va, err := attachments.Get(t.Context(), attachment, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the attach/detach controller made no VolumeAttachment %s: %v", attachment, err)
	}
	va.Status.Attached = true
	if _, err := attachments.UpdateStatus(t.Context(), va, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = f.waitForPod(t, pod, 2*time.Minute, "to be Running and Ready once its volume is attached", runningAndReady)
	if diff := cmp.Diff([]string{"NodeStageVolume", "NodePublishVolume"}, okCalls(plugin.calls(t, handle))); diff != "" {
		t.Errorf("calls on start (-want +got):\n%s", diff)
	}

	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, 2*time.Minute)
	f.waitForVolumesInUse(t, uniqueName, false)
	await.Eventually(t, 2*time.Minute, "the attach/detach controller to detach the volume", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := attachments.Get(ctx, attachment, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))
	if diff := cmp.Diff([]string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}, okCalls(plugin.calls(t, handle))); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f.expectCSIPodFolderGone(t, f.podDir(pod))
}

// waitForVolumesInUse waits until the Node's status.volumesInUse lists
// the volume (in) or no longer does.
func (f *Framework) waitForVolumesInUse(t *testing.T, name corev1.UniqueVolumeName, in bool) {
	t.Helper()
	await.Eventually(t, time.Minute, fmt.Sprintf("volumesInUse to list %s: %t", name, in), await.Condition(func(ctx context.Context) (bool, error) {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return slices.Contains(node.Status.VolumesInUse, name) == in, nil
	}))
}
