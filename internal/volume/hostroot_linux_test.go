//go:build linux

// Tests of a nodelet that sees the host's root at a folder (a companion
// node's /host): the host root is a folder in t.TempDir(), the claims and
// volumes come from a fake clientset (k8s.io/client-go/kubernetes/fake),
// and the local volume is bind-mounted for real, as root.
package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestSetUpPodResolvesHostPathsUnderTheHostRoot(t *testing.T) {
	requireRoot(t)
	hostRoot := t.TempDir()
	writeFile(t, filepath.Join(hostRoot, "srv", "pv", "existing"), 0o644)
	pv := localPV()
	pv.Spec.Local.Path = "/srv/pv"
	e := newTestEnv(t, Options{HostRoot: hostRoot, NodeLabels: func(context.Context) map[string]string {
		return map[string]string{"kubernetes.io/hostname": "node-1"}
	}}, boundClaim(), pv)
	pod := claimVolumePod(false)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/app", Type: ptr.To(corev1.HostPathDirectoryOrCreate)},
	}})

	paths, _ := setUp(t, e, pod)

	// The runtime, on the host, gets the hostPath as it is; nodelet made
	// it on the host, under the host root.
	local := filepath.Join(e.root, "pods", string(podUID), "volumes", "kubernetes.io~local-volume", "pv-1")
	if diff := cmp.Diff(map[string]string{"data": local, "logs": "/var/log/app"}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if info, err := os.Stat(filepath.Join(hostRoot, "var", "log", "app")); err != nil || !info.IsDir() {
		t.Errorf("DirectoryOrCreate did not make /var/log/app under the host root: %v", err)
	}
	// The local volume is the host's /srv/pv, bound into the pod's folder.
	if _, err := os.Stat(filepath.Join(local, "existing")); err != nil {
		t.Errorf("the host's /srv/pv is not what the pod's folder shows: %v", err)
	}
	if err := e.m.TearDownPod(context.Background(), podUID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hostRoot, "srv", "pv", "existing")); err != nil {
		t.Errorf("the volume lost its file when the pod was torn down: %v", err)
	}
}
