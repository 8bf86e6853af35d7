package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// loopDevice attaches a loop device over a new file of 16 MiB, formatted
// ext4 with a file "kept" on it when formatted, and detaches it at the
// end of the test.
func loopDevice(t *testing.T, formatted bool) string {
	t.Helper()
	image := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, 16<<20); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v (%s)", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if formatted {
		run("mkfs.ext4", "-q", "-F", image)
		dir := t.TempDir()
		run("mount", "-o", "loop", image, dir)
		err := os.WriteFile(filepath.Join(dir, "kept"), []byte("from-before\n"), 0o644)
		run("umount", dir)
		if err != nil {
			t.Fatal(err)
		}
	}
	device := run("losetup", "-f", "--show", image)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", device).Run() })
	return device
}

// localDeviceVolume is a local PersistentVolume of volumeMode
// Filesystem (the default) on device, pre-bound to ns/data.
func (f *Framework) localDeviceVolume(t *testing.T, ns, device string) *corev1.PersistentVolume {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: device}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{f.Env.NodeName}}},
			}}}},
		},
	}
	pv, err := f.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	return pv
}

// A local volume of volumeMode Filesystem whose path is a block device
// (a loop device over a file): an empty device is formatted ext4 and
// mounted, and what one pod writes the next reads; a device that has a
// file system is not formatted again and keeps its data. Once the last
// pod is gone, the device is no longer mounted for the node.
func TestLocalFilesystemVolumeOnADeviceIsFormattedOnlyWhenEmpty(t *testing.T) {
	t.Parallel()
	for _, formatted := range []bool{false, true} {
		name := "empty"
		if formatted {
			name = "formatted"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			device := loopDevice(t, formatted)
			ns := f.NewNamespace(t)
			pv := f.localDeviceVolume(t, ns, device)
			f.claimVolume(t, ns, "data", pv)
			runPod := func(name, script string) map[string]string {
				pod := newPod(ns, name).withRestartPolicy(corev1.RestartPolicyNever).withShell(script).obj()
				pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
				pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
				pod = f.createPod(t, pod)
				pod = f.waitForPod(t, pod, 2*time.Minute, "to be Succeeded with its volume", succeeded)
				got := f.reportLines(t, pod, "app")
				f.deletePod(t, pod, nil)
				f.waitForPodGone(t, pod, 2*time.Minute)
				f.expectPodFolderGone(t, f.podDir(pod))
				return got
			}

			got := runPod("writer", `echo "KEPT $(cat /data/kept 2>/dev/null || echo none)"; echo from-writer > /data/note && sync && echo "WROTE yes"`)
			wantKept := "none"
			if formatted {
				wantKept = "from-before"
			}
			if got["KEPT"] != wantKept || got["WROTE"] != "yes" {
				t.Errorf("the writer printed KEPT %q WROTE %q, want KEPT %q WROTE yes", got["KEPT"], got["WROTE"], wantKept)
			}
			if got := runPod("reader", `echo "READ $(cat /data/note)"`); got["READ"] != "from-writer" {
				t.Errorf("the reader printed READ %q, want the writer's from-writer", got["READ"])
			}
			out, err := exec.Command("blkid", "-p", "-s", "TYPE", "-o", "value", device).Output()
			if err != nil || strings.TrimSpace(string(out)) != "ext4" {
				t.Errorf("blkid of the device: %q %v, want ext4", out, err)
			}
			global := filepath.Join(f.Env.NodeletRootDir, "plugins", "kubernetes.io", "local-volume", "mounts", pv.Name)
			await.Eventually(t, time.Minute, "the device's mount for the node to be gone", await.Condition(func(context.Context) (bool, error) {
				_, err := os.Stat(global)
				return os.IsNotExist(err) && len(f.mountsUnder(t, global)) == 0, nil
			}))
		})
	}
}
