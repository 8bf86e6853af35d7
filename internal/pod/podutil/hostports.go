package podutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// HostPorts are the ports the pod holds on the host for as long as it
// runs: its sidecars' then its regular containers', in the order they are
// listed, each with its protocol defaulted to TCP. These are the
// scheduler's (GetHostPorts: an init container that runs to completion
// holds none), and admission keeps, the runtime's port mappings and the
// portmap plugin's map, these same ports: one kept but not mapped would be
// refused to other pods and reach nobody. The kubelet's sandbox maps its
// regular containers' alone; a sidecar is in the pod's network namespace,
// so its ports are mapped as theirs are.
//
// A port listed twice under one name in a container is mapped once, as the
// kubelet maps it; an unnamed port is named by its protocol, host IP and
// ports.
func HostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; IsSidecar(c) {
			ports = appendHostPorts(ports, c)
		}
	}
	for i := range pod.Spec.Containers {
		ports = appendHostPorts(ports, &pod.Spec.Containers[i])
	}
	return ports
}

// appendHostPorts appends one container's host ports, each name once.
func appendHostPorts(ports []corev1.ContainerPort, container *corev1.Container) []corev1.ContainerPort {
	seen := map[string]bool{}
	for _, port := range container.Ports {
		if port.HostPort <= 0 {
			continue
		}
		if port.Protocol == "" {
			port.Protocol = corev1.ProtocolTCP
		}
		name := port.Name
		if name == "" {
			name = fmt.Sprintf("%s-%s:%d:%d", port.Protocol, port.HostIP, port.ContainerPort, port.HostPort)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		ports = append(ports, port)
	}
	return ports
}
