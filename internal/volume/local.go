package volume

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LocalVolumeDir is the folder of a pod's volume whose files are on the
// node's disk — an emptyDir on disk or a configMap volume — for the
// eviction manager to measure; ok is false for any other volume.
func (m *Manager) LocalVolumeDir(uid types.UID, vol *corev1.Volume) (dir string, ok bool) {
	switch {
	case vol.EmptyDir != nil && vol.EmptyDir.Medium == corev1.StorageMediumDefault:
		return m.volumeDir(uid, pluginEmptyDir, vol.Name), true
	case vol.ConfigMap != nil:
		return m.volumeDir(uid, pluginConfigMap, vol.Name), true
	}
	return "", false
}
