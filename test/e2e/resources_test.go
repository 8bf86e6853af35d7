package e2e

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A container's status.resources are what the runtime says it applied, and
// allocatedResources the requests the node admitted: when the runtime's
// limits change behind the Pod's back, the status follows the runtime.
func TestContainerStatusResourcesAreWhatTheRuntimeApplied(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	spec := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	pod := newPod(ns, "sized").obj()
	pod.Spec.Containers[0].Resources = spec
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	hasResources := func(want corev1.ResourceRequirements) func(*corev1.Pod) (bool, error) {
		return func(p *corev1.Pod) (bool, error) {
			if len(p.Status.ContainerStatuses) != 1 {
				return false, nil
			}
			s := p.Status.ContainerStatuses[0]
			if !equality.Semantic.DeepEqual(s.AllocatedResources, spec.Requests) {
				return false, fmt.Errorf("allocatedResources %v, want the requests %v", s.AllocatedResources, spec.Requests)
			}
			return s.Resources != nil && equality.Semantic.DeepEqual(*s.Resources, want), nil
		}
	}
	f.waitForPod(t, pod, podStartTimeout, "to report the spec's resources, which the runtime applied", hasResources(spec))

	// The runtime runs the container with other limits now, as after an
	// in-place resize.
	err := f.Runtime.UpdateContainerResources(t.Context(), containerID(t, pod, "app"), &runtimeapi.ContainerResources{
		Linux: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 25000, CpuShares: 204, MemoryLimitInBytes: 256 << 20},
	})
	if err != nil {
		t.Fatalf("updating the container's resources through CRI: %v", err)
	}
	// nodelet reads a pod's runtime record afresh after each of its own
	// actions on the pod (as the kubelet, which reads the runtime again
	// only on a container's change or after acting), so a change made
	// behind its back shows at its next action: here it starts an
	// ephemeral container. (A Pod update alone may be answered from the
	// PLEG's cached record, which no container change has refreshed.)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Spec.EphemeralContainers = append(current.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "look", Image: busyboxImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"},
			},
		})
		_, err = f.Client.CoreV1().Pods(ns).UpdateEphemeralContainers(t.Context(), pod.Name, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("adding an ephemeral container: %v", err)
	}
	applied := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	f.waitForPod(t, pod, podStartTimeout, "to report the runtime's new resources", hasResources(applied))
}
