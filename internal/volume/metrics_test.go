package volume

// The volume_mount operations recorded by SetUpPod, over the test
// environment of manager_test.go (a fake clientset, folders in
// t.TempDir()).

import (
	"context"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// mounts counts the volume_mount operations of plugin with status.
func mounts(t *testing.T, plugin, status string) uint64 {
	t.Helper()
	var m dto.Metric
	h := kubeletmetrics.StorageOperationDuration.WithLabelValues(plugin, "volume_mount", status, "false")
	if err := h.(interface{ Write(*dto.Metric) error }).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestSetUpPodRecordsEachVolumeMountByPluginAndOutcome(t *testing.T) {
	e := newTestEnv(t, Options{})
	host := t.TempDir()
	pod := makePod(
		corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host, Type: ptr.To(corev1.HostPathDirectory)}}},
		corev1.Volume{Name: "gone", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(host, "missing"), Type: ptr.To(corev1.HostPathDirectory)}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	const hostPath, emptyDir = "kubernetes.io/host-path", "kubernetes.io/empty-dir"
	okHost, failedHost, okEmpty := mounts(t, hostPath, "success"), mounts(t, hostPath, "fail-unknown"), mounts(t, emptyDir, "success")

	_, _, _ = e.m.SetUpPod(context.Background(), pod)

	if got := mounts(t, hostPath, "success") - okHost; got != 1 {
		t.Errorf("successful hostPath mounts: +%d, want +1", got)
	}
	if got := mounts(t, hostPath, "fail-unknown") - failedHost; got != 1 {
		t.Errorf("failed hostPath mounts: +%d, want +1", got)
	}
	if got := mounts(t, emptyDir, "success") - okEmpty; got != 1 {
		t.Errorf("successful emptyDir mounts: +%d, want +1", got)
	}
}
