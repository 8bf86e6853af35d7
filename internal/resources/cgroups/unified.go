package cgroups

// Where the machine's and a pod's cgroups are in the cgroup2 hierarchy,
// for what the kernel keeps only there (pressure stall information).

import "k8s.io/apimachinery/pkg/types"

// UnifiedRootDir is the folder of the cgroup2 hierarchy's root cgroup,
// whose files are the whole machine's. It is found on the pure cgroup2
// layout only: the hybrid layout mounts cgroup2 elsewhere, without its
// controllers, and the kubelet looks for cgroup2's files only where the
// pure layout mounts it (/sys/fs/cgroup).
func (m *Manager) UnifiedRootDir() (string, bool) {
	if !m.unified {
		return "", false
	}
	return m.hierarchies[0].MountPoint, true
}

// UnifiedPodDir is the folder of the pod's cgroup in the cgroup2
// hierarchy, wherever it is (its QoS tier, or where an older nodelet put
// it); false when the pod has none, and, as UnifiedRootDir, off the pure
// cgroup2 layout.
func (m *Manager) UnifiedPodDir(uid types.UID) (string, bool) {
	if !m.unified {
		return "", false
	}
	for _, cgroup := range m.podCgroups(uid) {
		if dir := cgroupDir(m.hierarchies[0], cgroup); isDir(dir) {
			return dir, true
		}
	}
	return "", false
}
