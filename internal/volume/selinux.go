package volume

import (
	"github.com/opencontainers/selinux/go-selinux"
	corev1 "k8s.io/api/core/v1"
)

// SELinux relabelling, as the kubelet asks the runtime for it: each
// container mount of a volume whose plugin labels its files for the pod
// (the kubelet's Managed and SELinuxRelabel volume attributes) carries
// the CRI's selinux_relabel, and the runtime gives the files the
// container's label. Only where the host has SELinux: elsewhere nothing
// is asked, and nothing changes.

// hostSELinuxEnabled tells whether the host runs SELinux (enforcing or
// permissive, both of which keep labels), asked of go-selinux as the
// kubelet asks it: selinuxfs is mounted and this process is labelled.
func hostSELinuxEnabled() bool {
	return selinux.GetEnabled()
}

// selinuxEnabled is opts.SELinuxEnabled's answer, else the host's.
func selinuxEnabled(opts Options) bool {
	if opts.SELinuxEnabled != nil {
		return opts.SELinuxEnabled()
	}
	return hostSELinuxEnabled()
}

// relabelPlugin is how a volume's plugin answers the kubelet's
// SELinuxRelabel attribute.
type relabelPlugin int

const (
	// relabelNever: the node's own files (hostPath), or no mount at all
	// (a block device).
	relabelNever relabelPlugin = iota
	// relabelAlways: a folder nodelet makes for the pod (emptyDir,
	// configMap, secret, downwardAPI, projected).
	relabelAlways
	// relabelWritable: a local volume, unless the pod has it read-only
	// (the kubelet's Managed is !readOnly).
	relabelWritable
	// relabelLabelledWritable: a CSI volume, unless read-only, when the
	// file system it is published on keeps SELinux labels ("seclabel").
	relabelLabelledWritable
)

// selinuxRelabel decides whether the runtime relabels a volume's mounts.
// seclabel is whether the volume's mount keeps SELinux labels; it is
// read only for CSI volumes on a host with SELinux.
func selinuxRelabel(hostEnabled bool, plugin relabelPlugin, readOnly bool, seclabel func() bool) bool {
	if !hostEnabled {
		return false
	}
	switch plugin {
	case relabelAlways:
		return true
	case relabelWritable:
		return !readOnly
	case relabelLabelledWritable:
		return !readOnly && seclabel()
	default:
		return false
	}
}

// relabelPluginOf is the relabelling of a pod volume that is not a claim
// (a claim's depends on its persistent volume: setUpClaim).
func relabelPluginOf(vol *corev1.Volume) relabelPlugin {
	switch {
	case vol.EmptyDir != nil, vol.ConfigMap != nil, vol.Secret != nil, vol.DownwardAPI != nil, vol.Projected != nil:
		return relabelAlways
	case vol.CSI != nil:
		return relabelLabelledWritable
	default:
		return relabelNever
	}
}

// relabelVolume decides for a volume that is not a claim, set up at dir.
func (m *Manager) relabelVolume(vol *corev1.Volume, dir string) bool {
	readOnly := vol.CSI != nil && vol.CSI.ReadOnly != nil && *vol.CSI.ReadOnly
	return selinuxRelabel(m.selinux, relabelPluginOf(vol), readOnly, func() bool { return m.mountKeepsSELinuxLabels(dir) })
}

// mountKeepsSELinuxLabels tells whether the file system dir is on keeps
// SELinux labels. A mount table that cannot be read counts as no: the
// runtime is then not asked to relabel, and logs tell why.
func (m *Manager) mountKeepsSELinuxLabels(dir string) bool {
	mounts, err := readMountInfo()
	if err != nil {
		m.log.Error(err, "Failed to read the mount table to check for SELinux support", "path", dir)
		return false
	}
	mount, ok := mountOf(mounts, dir)
	return ok && mount.SELinuxLabels
}

// SELinuxRelabel are the pod's volumes, set up, whose container mounts
// the runtime relabels for the container (the CRI's selinux_relabel), by
// volume name; none on a host without SELinux.
func (m *Manager) SELinuxRelabel(pod *corev1.Pod) map[string]bool {
	volumes := m.podVolumes(pod.UID)
	relabel := map[string]bool{}
	for i := range pod.Spec.Volumes {
		name := pod.Spec.Volumes[i].Name
		if state := volumes[name]; state != nil && state.ready && state.relabel {
			relabel[name] = true
		}
	}
	return relabel
}
