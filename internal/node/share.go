package node

import corev1 "k8s.io/api/core/v1"

// Within is the machine as a node that has only a share of it sees it: a
// companion node running as a DaemonSet pod has the CPU, memory and
// ephemeral storage its pod was given by the host's kubelet, not the
// machine's, so that no machine is counted twice. share's cpu, memory and
// ephemeral-storage, when set, replace the machine's; maxPID, when
// positive, is the most processes the pod may have (its cgroup's
// pids.max) and replaces the machine's when smaller. The rest stays the
// machine's.
func (m MachineInfo) Within(share corev1.ResourceList, maxPID int64) MachineInfo {
	if cpu, ok := share[corev1.ResourceCPU]; ok {
		m.MilliCPUs = cpu.MilliValue()
	}
	if memory, ok := share[corev1.ResourceMemory]; ok {
		m.MemoryBytes = memory.Value()
	}
	if storage, ok := share[corev1.ResourceEphemeralStorage]; ok {
		m.EphemeralStorageBytes = storage.Value()
	}
	if maxPID > 0 && (m.MaxPID == 0 || maxPID < m.MaxPID) {
		m.MaxPID = maxPID
	}
	return m
}
