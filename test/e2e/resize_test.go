package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodelet/nodelet/internal/testutil/resources"
)

// resizeTo asks for new resources through the pods/resize subresource, as
// `kubectl patch --subresource=resize` does. nodelet writes the pod's
// status at any time, so an update read before one of those writes is
// refused with a conflict: read the pod again and retry.
func (f *Framework) resizeTo(t *testing.T, pod *corev1.Pod, change func(*corev1.Pod)) error {
	t.Helper()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := f.Client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		change(current)
		_, err = f.Client.CoreV1().Pods(pod.Namespace).UpdateResize(t.Context(), pod.Name, current, metav1.UpdateOptions{})
		return err
	})
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// A running pod resized in place: its containers' and its own cgroups
// change without a restart, except for the container whose resizePolicy
// asks for one; a resize the node has no room for waits, changing
// nothing; and pod-level resources are not resized here at all.
func TestInPlacePodResize(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "resized").obj()
	pod.Spec.Containers[0].Resources = resources.Requirements("cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi")
	restarts := pod.Spec.Containers[0]
	restarts.Name = "restarts"
	restarts.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	pod.Spec.Containers = append(pod.Spec.Containers, restarts)
	podLevel := newPod(ns, "pod-level").obj()
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	// A neighbour whose CPU the node has allocated.
	neighbour := newPod(ns, "neighbour").obj()
	neighbour.Spec.Containers[0].Resources = resources.Requirements("cpu=100m", "")
	pod = f.createPod(t, pod)
	podLevel = f.createPod(t, podLevel)
	f.createPod(t, neighbour)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	appID := containerID(t, pod, "app")

	// cgroupOf reads a file of the pod's cgroup or, with a container ID,
	// of that container's inside it.
	podCgroup := filepath.Join("kubepods/burstable", "pod"+string(pod.UID))
	cgroupOf := func(container, controller, v1File, v2File string) string {
		return f.cgroupFile(t, filepath.Join(podCgroup, container), controller, v1File, v2File)
	}
	quota := func(container string) string { return cgroupOf(container, "cpu", "cpu.cfs_quota_us", "cpu.max") }
	memory := func(container string) string {
		return cgroupOf(container, "memory", "memory.limit_in_bytes", "memory.max")
	}
	v1v2 := func(v1, v2 string) string {
		if cgroupV2() {
			return v2
		}
		return v1
	}

	t.Run("a resize is applied in place", func(t *testing.T) {
		err := f.resizeTo(t, pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources.Requirements("cpu=300m,memory=48Mi", "cpu=400m,memory=96Mi")
			p.Spec.Containers[1].Resources = resources.Requirements("cpu=100m,memory=32Mi", "cpu=200m,memory=96Mi")
		})
		if err != nil {
			t.Fatalf("resizing: %v", err)
		}
		want := resources.Requirements("cpu=300m,memory=48Mi", "cpu=400m,memory=96Mi")
		pod = f.waitForPod(t, pod, podStartTimeout, "to run with its new resources", func(p *corev1.Pod) (bool, error) {
			app, restarted := containerStatus(p, "app"), containerStatus(p, "restarts")
			if app == nil || restarted == nil || app.Resources == nil || p.Generation < 2 {
				return false, nil
			}
			if app.RestartCount != 0 || app.ContainerID != "containerd://"+appID {
				return false, fmt.Errorf("container app was restarted: %s", describePod(p))
			}
			done := podCondition(p, corev1.PodResizeInProgress) == nil && podCondition(p, corev1.PodResizePending) == nil &&
				equality.Semantic.DeepEqual(app.AllocatedResources, want.Requests) &&
				equality.Semantic.DeepEqual(*app.Resources, want) &&
				restarted.RestartCount == 1 && restarted.State.Running != nil && runningAndReadyNow(p)
			return done, nil
		})
		if got := quota(appID); got != v1v2("40000", "40000 100000") {
			t.Errorf("container app's CPU quota = %q, want 400m", got)
		}
		if got := memory(appID); got != "100663296" {
			t.Errorf("container app's memory limit = %q, want 96Mi", got)
		}
		// The pod's limits are its containers' together: 600m, 192Mi.
		if got := quota(""); got != v1v2("60000", "60000 100000") {
			t.Errorf("the pod's CPU quota = %q, want 600m", got)
		}
		if got := memory(""); got != "201326592" {
			t.Errorf("the pod's memory limit = %q, want 192Mi", got)
		}
		f.waitForEvent(t, pod, "ResizeCompleted", "Pod resize completed", podStartTimeout)
		f.waitForEvent(t, pod, "Killing", "Container restarts resize requires restart", podStartTimeout)
	})

	t.Run("a resize the node has no room for waits and changes nothing", func(t *testing.T) {
		// The API server refuses requests past the Node's allocatable
		// itself; what it lets through is judged on the node, beside the
		// other pods' allocations (the neighbour's 100m at least).
		node, err := f.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		allocatable := node.Status.Allocatable.Cpu().MilliValue()
		err = f.resizeTo(t, pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources.Requirements(fmt.Sprintf("cpu=%dm,memory=48Mi", allocatable), fmt.Sprintf("cpu=%dm,memory=96Mi", allocatable))
		})
		if err == nil || !strings.Contains(err.Error(), "node didn't have enough allocatable resources: cpu") {
			t.Fatalf("resizing past the Node's allocatable: error %v, want the API server's refusal", err)
		}
		app := fmt.Sprintf("cpu=%dm,memory=48Mi", allocatable-100) // beside restarts' 100m
		err = f.resizeTo(t, pod, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources.Requirements(app, strings.Replace(app, "48Mi", "96Mi", 1))
		})
		if err != nil {
			t.Fatalf("resizing: %v", err)
		}
		want := fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: ", allocatable)
		pod = f.waitForPod(t, pod, podStartTimeout, "to report the resize pending", func(p *corev1.Pod) (bool, error) {
			c := podCondition(p, corev1.PodResizePending)
			return c != nil && c.Reason == corev1.PodReasonDeferred && c.ObservedGeneration == p.Generation &&
				strings.HasPrefix(c.Message, want), nil
		})
		if got := containerStatus(pod, "app").AllocatedResources.Cpu().String(); got != "300m" {
			t.Errorf("allocatedResources cpu = %s, want the 300m allocated before", got)
		}
		if got := quota(appID); got != v1v2("40000", "40000 100000") {
			t.Errorf("container app's CPU quota = %q, want 400m still", got)
		}
		f.waitForEvent(t, pod, "ResizeDeferred", "Pod resize OutOfcpu: ", podStartTimeout)
	})

	t.Run("pod-level resources are not resized in place", func(t *testing.T) {
		err := f.resizeTo(t, podLevel, func(p *corev1.Pod) {
			p.Spec.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
		})
		if err == nil || !strings.Contains(err.Error(), "InPlacePodLevelResourcesVerticalScaling") {
			t.Errorf("resizing pod-level resources: error %v, want the API server's refusal for the node's missing InPlacePodLevelResourcesVerticalScaling", err)
		}
	})
}

// runningAndReadyNow is runningAndReady without its error.
func runningAndReadyNow(p *corev1.Pod) bool {
	ok, _ := runningAndReady(p)
	return ok
}
