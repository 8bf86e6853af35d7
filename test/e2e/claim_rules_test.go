package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// What a claim's PersistentVolume says about how it is used: its mount
// options, and ReadWriteOncePod.

// claimPod is a pod that mounts the claim "data" at /data and runs script.
func claimPod(ns, name, script string) *corev1.Pod {
	pod := newPod(ns, name).withGracePeriod(1).withShell(script).obj()
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}}}
	return pod
}

// patchPV merge-patches the PersistentVolume.
func (f *Framework) patchPV(t *testing.T, name, patch string) *corev1.PersistentVolume {
	t.Helper()
	pv, err := f.Client.CoreV1().PersistentVolumes().Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// A local volume's mount options are its mount's in the container
// (noexec: a program copied into it does not run); a hostPath volume
// takes none, as under the kubelet.
func TestLocalVolumeMountOptionsReachTheContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pv, _ := f.localVolume(t, ns, "data")
	pv = f.patchPV(t, pv.Name, `{"spec":{"mountOptions":["noexec","nosuid"]}}`)
	f.claimVolume(t, ns, "data", pv)
	pod := claimPod(ns, "exec", `cp /bin/busybox /data/busybox && if /data/busybox true; then echo EXEC ran; else echo EXEC refused; fi`)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, 2*time.Minute, "to be Succeeded", succeeded)
	if got := f.reportLines(t, pod, "app")["EXEC"]; got != "refused" {
		t.Errorf("a program in the noexec volume: EXEC %q, want refused", got)
	}
	f.deletePod(t, pod, ptr.To[int64](0))

	hostNS := f.NewNamespace(t)
	hostPV := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: hostNS + "-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			MountOptions:           []string{"noexec"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir()}},
			ClaimRef:               &corev1.ObjectReference{Namespace: hostNS, Name: "data"},
		},
	}
	if _, err := f.Client.CoreV1().PersistentVolumes().Create(t.Context(), hostPV, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.CoreV1().PersistentVolumes().Delete(context.Background(), hostPV.Name, metav1.DeleteOptions{})
	})
	f.claimVolume(t, hostNS, "data", hostPV)
	waiting := f.createPod(t, claimPod(hostNS, "waiting", `exec sleep 3600`))
	f.waitForEvent(t, waiting, "FailedMount", fmt.Sprintf(`MountVolume.MountOptionSupport check failed for volume %q : mount options are not supported for this volume type`, hostPV.Name), 2*time.Minute)
}

// A pod bound to the node past the scheduler, whose ReadWriteOncePod
// claim another running pod uses, waits with the kubelet's FailedMount,
// and runs once that pod is gone.
func TestReadWriteOncePodClaimWaitsForThePodThatHoldsIt(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pv, _ := f.localVolume(t, ns, "data")
	pv = f.patchPV(t, pv.Name, `{"spec":{"accessModes":["ReadWriteOncePod"]}}`)
	if _, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := f.createPod(t, claimPod(ns, "first", `echo first > /data/owner; exec sleep 3600`))
	first = f.waitForPod(t, first, 2*time.Minute, "to be Running and Ready", runningAndReady)

	// The scheduler would hold it back: bound by hand, as the kubelet
	// then refuses it.
	second := claimPod(ns, "second", `echo "OWNER $(cat /data/owner)"; exec sleep 3600`)
	second.Spec.NodeName = f.Env.NodeName
	second = f.createPod(t, second)
	f.waitForEvent(t, second, "FailedMount", fmt.Sprintf(`MountVolume.SetUp failed for volume %q : volume uses the ReadWriteOncePod access mode and is already in use by another pod`, pv.Name), 2*time.Minute)
	f.waitForPod(t, second, 30*time.Second, "to wait in ContainerCreating", waitingWith("app", "ContainerCreating", ""))

	f.deletePod(t, first, ptr.To[int64](1))
	f.waitForPodGone(t, first, 2*time.Minute)
	second = f.waitForPod(t, second, 2*time.Minute, "to be Running once the first pod is gone", runningAndReady)
	f.waitForLogLine(t, second, "app", time.Minute, "the first pod's file", func(line string) bool { return line == "OWNER first" })
	f.deletePod(t, second, ptr.To[int64](1))
	f.waitForPodGone(t, second, 2*time.Minute)
}
