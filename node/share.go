package node

import corev1 "k8s.io/api/core/v1"

// Within is the machine as a node that has only a share of it sees it: a
// companion node running as a DaemonSet pod has the CPU and memory its
// pod was given by the host's kubelet, not the machine's, so that no
// machine is counted twice. share's cpu and memory, when set, replace the
// machine's; the rest stays the machine's.
func (m MachineInfo) Within(share corev1.ResourceList) MachineInfo {
	if cpu, ok := share[corev1.ResourceCPU]; ok {
		m.MilliCPUs = cpu.MilliValue()
	}
	if memory, ok := share[corev1.ResourceMemory]; ok {
		m.MemoryBytes = memory.Value()
	}
	return m
}
