// Package podutil holds the small rules about a Pod's spec that several
// packages apply, written once: which init containers are sidecars, how a
// container is found by name, the pod's termination grace period and its
// host ports.
package podutil

import corev1 "k8s.io/api/core/v1"

// IsSidecar reports whether an init container is a sidecar: restarted
// whenever it stops, and running beside the regular containers until
// they are done.
func IsSidecar(container *corev1.Container) bool {
	return container != nil && container.RestartPolicy != nil && *container.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// ContainerByName finds a container of the pod by name: init, regular or
// ephemeral (whose common part it returns); nil when there is none.
func ContainerByName(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}
