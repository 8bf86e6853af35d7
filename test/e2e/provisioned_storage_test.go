package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// claimTimeout bounds a claim's provisioning by the stack's
// local-path-provisioner: a helper pod that nodelet runs makes the folder.
const claimTimeout = 3 * time.Minute

// statefulSet is a StatefulSet of replicas busybox pods, each with a claim
// of the default StorageClass at /data, that prints what it finds there or
// writes its own name into it.
func statefulSet(ns, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	pod := newPod(ns, name).withGracePeriod(1).withShell(
		`if [ -f /data/id ]; then echo "FOUND $(cat /data/id)"; else hostname > /data/id && echo "WROTE $(cat /data/id)"; fi; exec sleep 3600`).obj()
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
				},
			}},
		},
	}
}

// waitForStatefulPods waits for the StatefulSet's pods name-0.. to run and
// returns them.
func (f *Framework) waitForStatefulPods(t *testing.T, ns, name string, replicas int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range replicas {
		var pod *corev1.Pod
		podName := fmt.Sprintf("%s-%d", name, i)
		await.Eventually(t, claimTimeout, "pod "+podName+" to exist", await.Condition(func(ctx context.Context) (bool, error) {
			var err error
			pod, err = f.Client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
			return err == nil, nil
		}))
		pods = append(pods, f.waitForPod(t, pod, claimTimeout, "to be Running and Ready with its claim", runningAndReady))
	}
	return pods
}

// A StatefulSet's pods keep their data: deleted (with nodelet killed while
// it tears them down) and created again, each pod finds in its claim what
// it wrote there, and the old pods leave nothing mounted.
// It kills nodelet, so it runs alone: it does not call t.Parallel.
func TestStatefulSetKeepsItsDataAcrossRecreationAndANodeletKill(t *testing.T) {
	ns := f.NewNamespace(t)
	const name, replicas = "web", 2
	apps := f.Client.AppsV1().StatefulSets(ns)
	if _, err := apps.Create(t.Context(), statefulSet(ns, name, replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := f.waitForStatefulPods(t, ns, name, replicas)
	for _, pod := range first {
		want := "WROTE " + pod.Name
		f.waitForLogLine(t, pod, "app", time.Minute, want, func(line string) bool { return line == want })
	}

	// Deleted, with nodelet killed while it stops the pods and unmounts
	// their claims, then started again.
	if err := apps.Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, time.Minute, "the pods to be terminating", await.Condition(func(ctx context.Context) (bool, error) {
		for _, pod := range first {
			p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err == nil && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	}))
	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	f.restartNodelet(t)
	for _, pod := range first {
		f.waitForPodGone(t, pod, 2*time.Minute)
		dir := f.podDir(pod)
		await.Eventually(t, time.Minute, "pod "+pod.Name+"'s folder and mounts to be gone", await.Condition(func(ctx context.Context) (bool, error) {
			_, err := os.Stat(dir)
			return os.IsNotExist(err) && len(f.mountsUnder(t, dir)) == 0, nil
		}))
	}

	await.Eventually(t, time.Minute, "the StatefulSet to be gone", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := apps.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))

	// Created again: the same claims, the same data.
	if _, err := apps.Create(t.Context(), statefulSet(ns, name, replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := f.waitForStatefulPods(t, ns, name, replicas)
	for _, pod := range second {
		want := "FOUND " + pod.Name
		line := f.waitForLogLine(t, pod, "app", time.Minute, "what it wrote before", func(line string) bool {
			return strings.HasPrefix(line, "FOUND ") || strings.HasPrefix(line, "WROTE ")
		})
		if line != want {
			t.Errorf("pod %s printed %q, want %q: its claim lost its data", pod.Name, line, want)
		}
	}

	// The provisioner removes a released volume with a pod of its own:
	// done here, before the tests that follow, which may count the pods
	// that start.
	if err := apps.Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	for _, pod := range second {
		f.waitForPodGone(t, pod, time.Minute)
	}
	f.deleteClaimsAndTheirVolumes(t, ns)
}

// deleteClaimsAndTheirVolumes deletes every claim of the namespace, whose
// pods are gone, and waits until the provisioner has removed their
// volumes.
func (f *Framework) deleteClaimsAndTheirVolumes(t *testing.T, ns string) {
	t.Helper()
	claims, err := f.Client.CoreV1().PersistentVolumeClaims(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, claim := range claims.Items {
		if err := f.Client.CoreV1().PersistentVolumeClaims(ns).Delete(t.Context(), claim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, claim := range claims.Items {
		if claim.Spec.VolumeName == "" {
			continue
		}
		await.Eventually(t, claimTimeout, "volume "+claim.Spec.VolumeName+" to be removed by the provisioner", await.Condition(func(ctx context.Context) (bool, error) {
			_, err := f.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}))
	}
}

// A generic ephemeral volume: the controller-manager makes the pod's
// claim from its template, the stack's provisioner a volume for it on this
// node, and nodelet mounts it; the claim goes with the pod.
func TestGenericEphemeralVolumeIsProvisionedMountedAndGoesWithThePod(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "scratch-user").withGracePeriod(1).
		withShell(`echo hello > /scratch/file && echo "READ $(cat /scratch/file)" && exec sleep 3600`).obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, claimTimeout, "to be Running and Ready with its ephemeral volume", runningAndReady)
	f.waitForLogLine(t, pod, "app", time.Minute, "what it wrote", func(line string) bool { return line == "READ hello" })

	claims := f.Client.CoreV1().PersistentVolumeClaims(ns)
	claim, err := claims.Get(t.Context(), "scratch-user-scratch", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod's claim: %v", err)
	}
	dir := f.podDir(pod)
	if mounts := f.mountsUnder(t, dir); len(mounts) == 0 {
		t.Errorf("nothing is mounted under the pod's folder %s, want its volume %s", dir, claim.Spec.VolumeName)
	}

	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, time.Minute)
	await.Eventually(t, 2*time.Minute, "the pod's claim to go with it", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))
	if mounts := f.mountsUnder(t, dir); len(mounts) > 0 {
		t.Errorf("left mounted: %v", mounts)
	}
}
