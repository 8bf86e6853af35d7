package volume

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// The kubelet's plugin names, as storage_operation_duration_seconds
// labels them; a CSI volume's is followed by ":<driver>".
const (
	metricPluginEmptyDir    = "kubernetes.io/empty-dir"
	metricPluginConfigMap   = "kubernetes.io/configmap"
	metricPluginSecret      = "kubernetes.io/secret"
	metricPluginDownwardAPI = "kubernetes.io/downward-api"
	metricPluginProjected   = "kubernetes.io/projected"
	metricPluginHostPath    = "kubernetes.io/host-path"
	metricPluginLocalVolume = "kubernetes.io/local-volume"
	metricPluginCSI         = "kubernetes.io/csi"
)

// setUpVolume sets the volume up (setUpVolumeOnce) and records how long
// it took, as the kubelet's volume_mount operation: labelled with the
// volume's plugin, known for a claim once it was resolved.
func (m *Manager) setUpVolume(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, state *volumeState, now time.Time) error {
	start := time.Now()
	err := m.setUpVolumeOnce(ctx, pod, vol, state, now)
	plugin := inlineVolumePlugin(vol)
	if plugin == "" {
		plugin = state.plugin
	}
	if plugin != "" {
		kubeletmetrics.ObserveStorageOperation(plugin, "volume_mount", start, err)
	}
	return err
}

// inlineVolumePlugin is the plugin of a volume the pod spells out; empty
// for a claim, whose plugin is its persistent volume's.
func inlineVolumePlugin(vol *corev1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return metricPluginEmptyDir
	case vol.ConfigMap != nil:
		return metricPluginConfigMap
	case vol.Secret != nil:
		return metricPluginSecret
	case vol.DownwardAPI != nil:
		return metricPluginDownwardAPI
	case vol.Projected != nil:
		return metricPluginProjected
	case vol.HostPath != nil:
		return metricPluginHostPath
	case vol.CSI != nil:
		return metricPluginCSI + ":" + vol.CSI.Driver
	}
	return ""
}
