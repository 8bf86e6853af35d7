package volume

// Plain paths: no mount, no API server.

import (
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

func TestLocalVolumeDirIsWhereDiskVolumesAreMade(t *testing.T) {
	m := NewManager(Options{RootDir: "/root-dir"}, nil, clock.RealClock{}, logr.Discard())
	for name, tc := range map[string]struct {
		source  corev1.VolumeSource
		wantDir string
	}{
		"an emptyDir on disk": {corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, "/root-dir/pods/uid/volumes/kubernetes.io~empty-dir/v"},
		"a configMap":         {corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, "/root-dir/pods/uid/volumes/kubernetes.io~configmap/v"},
		"a memory emptyDir":   {corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}, ""},
		"a secret":            {corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir, ok := m.LocalVolumeDir("uid", &corev1.Volume{Name: "v", VolumeSource: tc.source})
			if dir != tc.wantDir || ok != (tc.wantDir != "") {
				t.Errorf("LocalVolumeDir() = %q, %v; want %q", dir, ok, tc.wantDir)
			}
		})
	}
}
