package podutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// HostPorts are the ports the pod's containers ask to have on the host, in
// the order they are listed, each with its protocol defaulted to TCP. A
// port listed twice under one name in a container is mapped once, as the
// kubelet maps it; an unnamed port is named by its protocol, host IP and
// ports. The runtime's port mappings and the portmap plugin's are both made
// from these, so the two network modes map the same ports.
func HostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, container := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, port := range container.Ports {
			if port.HostPort == 0 {
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
	}
	return ports
}
