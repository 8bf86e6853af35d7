//go:build linux

package volume

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A ReadWriteOncePod local volume (a folder in t.TempDir(), bind-mounted
// for real, as root) is refused to a second pod while the first holds
// it, also after a restart (the disk says who holds it), and is the
// second's once the first is torn down.
func TestSetUpPodRefusesAReadWriteOncePodVolumeInUse(t *testing.T) {
	requireRoot(t)
	e := claimEnv(t, t.TempDir())
	pv, err := e.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	if _, err := e.client.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, second := claimVolumePod(false), claimVolumePod(false)
	second.UID = types.UID("second")
	// Another pod's emptyDir of the volume's name is not the volume.
	other := makePod(corev1.Volume{Name: "pv-1", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	other.UID = types.UID("other")
	setUp(t, e, other)

	setUp(t, e, first)
	e.restart()
	setUp(t, e, first)
	_, _, err = e.m.SetUpPod(context.Background(), second)
	want := `MountVolume.SetUp failed for volume "pv-1" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`
	if err == nil || !strings.Contains(err.Error(), want) || !IsUserError(err) {
		t.Fatalf("second pod's error = %v, want the user error %s", err, want)
	}

	if err := e.m.TearDownPod(context.Background(), first.UID); err != nil {
		t.Fatal(err)
	}
	setUp(t, e, second)
}
