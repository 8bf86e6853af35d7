// Tests of SELinux relabelling. This machine has no SELinux, so the host
// is faked (Options.SELinuxEnabled); the decision is pure. The manager's
// test mounts nothing (disk emptyDir, configMap, hostPath folders).
package volume

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSELinuxRelabel(t *testing.T) {
	labelled := func() bool { return true }
	unlabelled := func() bool { return false }
	tests := map[string]struct {
		host     bool
		plugin   relabelPlugin
		readOnly bool
		seclabel func() bool
		want     bool
	}{
		"no SELinux on the host: an emptyDir is not relabelled": {plugin: relabelAlways},
		"no SELinux on the host: a local volume is not":         {plugin: relabelWritable},
		"no SELinux on the host: a CSI volume is not":           {plugin: relabelLabelledWritable},
		"an emptyDir, configMap, secret...":                     {host: true, plugin: relabelAlways, want: true},
		"... even when the pod mounts it read-only":             {host: true, plugin: relabelAlways, readOnly: true, want: true},
		"a hostPath volume never":                               {host: true, plugin: relabelNever},
		"a writable local volume":                               {host: true, plugin: relabelWritable, want: true},
		"a read-only local volume is not":                       {host: true, plugin: relabelWritable, readOnly: true},
		"a writable CSI volume on a file system with labels":    {host: true, plugin: relabelLabelledWritable, seclabel: labelled, want: true},
		"a writable CSI volume on one without":                  {host: true, plugin: relabelLabelledWritable, seclabel: unlabelled},
		"a read-only CSI volume is not":                         {host: true, plugin: relabelLabelledWritable, readOnly: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			seclabel := tc.seclabel
			if seclabel == nil {
				// Only a writable CSI volume on an SELinux host needs
				// the mount table.
				seclabel = func() bool { t.Error("the mount table was read"); return false }
			}
			if got := selinuxRelabel(tc.host, tc.plugin, tc.readOnly, seclabel); got != tc.want {
				t.Errorf("selinuxRelabel = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestSetUpPodRelabelsThePodsVolumesOnlyOnAnSELinuxHost(t *testing.T) {
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"a": "b"}}
	pod := makePod(
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir()}}},
	)
	pod.Namespace = config.Namespace
	for _, tc := range []struct {
		host bool
		want map[string]bool
	}{
		{host: false, want: map[string]bool{}},
		{host: true, want: map[string]bool{"cache": true, "settings": true}},
	} {
		e := newTestEnv(t, Options{SELinuxEnabled: func() bool { return tc.host }}, config)
		setUp(t, e, pod)
		if diff := cmp.Diff(tc.want, e.m.SELinuxRelabel(pod)); diff != "" {
			t.Errorf("SELinux host %t: volumes relabelled (-want +got):\n%s", tc.host, diff)
		}
	}
}
