package volume

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ephemeralvolume "k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// pluginLocalVolume is the kubelet's folder for local volumes;
// pluginHostPath its name for hostPath ones.
const (
	pluginLocalVolume = "kubernetes.io~local-volume"
	pluginHostPath    = "kubernetes.io~host-path"
)

// claimSetUp is what setting up a persistentVolumeClaim volume gives.
type claimSetUp struct {
	// dir is what the runtime mounts.
	dir   string
	usage usageMethod
	claim *statsapi.PVCReference
	// gid is the volume's group annotation, if any.
	gid string
	// csi names a csi volume for its driver; republish is its
	// driver's requiresRepublish.
	csi       csiVolumeID
	republish bool
	// relabel: the runtime relabels the volume's mounts (selinux.go).
	relabel bool
	// plugin is the volume's plugin, as the metrics name it.
	plugin string
}

// setUpClaim resolves the pod's claim (a persistentVolumeClaim volume's or
// a generic ephemeral volume's) to its persistent volume, as the
// kubelet's volume manager does before mounting, and mounts it: a local
// volume is bind-mounted into the pod's folder (read-only when the claim
// source says so), a hostPath one is handed to the runtime as it is; a
// volume of volumeMode Block is mapped instead (block.go). The
// claim and the volume are read from the API server each time, never
// cached: the node may read only those of its own pods. Errors are user
// errors (*ClaimError, *MountError, *UnsupportedVolumeError): the pod
// waits for its claim to be bound.
func (m *Manager) setUpClaim(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) (claimSetUp, error) {
	source, ephemeral := claimSource(pod, vol)
	name := source.ClaimName
	processing := func(err error) error {
		return &ClaimError{Volume: vol.Name, Err: fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, name, err)}
	}
	claim, err := m.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err := checkClaim(claim, err); err != nil {
		return claimSetUp{}, processing(err)
	}
	if ephemeral {
		// A claim of that name that the pod does not own is someone
		// else's: never mounted in its place.
		if err := ephemeralvolume.VolumeIsForPod(pod, claim); err != nil {
			return claimSetUp{}, &ClaimError{Volume: vol.Name, Err: err}
		}
	}
	pv, err := m.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err := checkBoundVolume(claim.Spec.VolumeName, claim.UID, pv, err); err != nil {
		return claimSetUp{}, processing(err)
	}
	mount, err := claimMountOf(pod, vol, source.ReadOnly, pv, m.nodeLabels(ctx))
	if err != nil {
		return claimSetUp{}, err
	}
	out := claimSetUp{claim: &statsapi.PVCReference{Name: name, Namespace: pod.Namespace}, gid: mount.gid}
	if readWriteOncePod(pv) {
		// Checked and set up under one lock, so two pods cannot both
		// find the volume free.
		unlock := m.csiLocks.lock("ReadWriteOncePod|" + pv.Name)
		defer unlock()
		users, err := m.volumeUsers(pv.Name)
		if err != nil {
			return claimSetUp{}, fmt.Errorf("finding the pods that use volume %s: %w", pv.Name, err)
		}
		if err := checkReadWriteOncePod(pv, mount.block, pod.UID, users); err != nil {
			return claimSetUp{}, err
		}
	}

	if mount.kind != claimCSI {
		// Only CSI volumes are mounted with a label; the others' pods
		// are checked alike.
		if _, err := m.claimSELinuxLabel(pod, vol.Name, pv, false); err != nil {
			return claimSetUp{}, err
		}
	}
	switch {
	case mount.kind == claimCSI:
		set, err := m.setUpCSIClaim(ctx, pod, vol.Name, pv, mount.readOnly)
		if err != nil {
			return claimSetUp{}, err
		}
		out.dir, out.usage, out.csi, out.republish = set.path, usageCSI, set.volume, set.republish
		out.plugin = metricPluginCSI + ":" + pv.Spec.CSI.Driver
		if mount.block {
			// A device's usage is not measured (docs/compatibility.md).
			out.usage = usageNone
		} else {
			// A volume mounted with the pod's label is not relabelled.
			readOnly := mount.readOnly || pv.Spec.CSI.ReadOnly
			out.relabel = !set.selinuxMounted && selinuxRelabel(m.selinux, relabelLabelledWritable, readOnly, func() bool { return m.mountKeepsSELinuxLabels(set.path) })
		}
	case mount.kind == claimHostPath:
		// The node's own folder: no ownership change and no usage, as
		// the kubelet's hostPath volumes.
		if err := checkHostPath(m.hostRoot, mount.path, mount.hostPathType); err != nil {
			return claimSetUp{}, &MountError{Volume: mount.pv, Err: err}
		}
		// Nothing of the volume is in the pod's folder: an empty folder
		// there records that the pod uses it (volumeUsers).
		if err := ensureDir(m.volumeDir(pod.UID, pluginHostPath, mount.pv), 0o750); err != nil {
			return claimSetUp{}, &MountError{Volume: mount.pv, Err: err}
		}
		out.dir, out.usage, out.plugin = mount.path, usageNone, metricPluginHostPath
	case mount.block:
		// The device itself, linked into the pod's folder: nothing is
		// mounted, no ownership changed; its size is its capacity.
		link := m.deviceDir(pod.UID, pluginLocalVolume, mount.pv)
		if err := mapLocalDevice(m.hostRoot, mount.path, link); err != nil {
			return claimSetUp{}, &MountError{Operation: "MapVolume.MapBlockVolume", Volume: mount.pv, Err: err}
		}
		out.dir, out.usage, out.plugin = link, usageDevice, metricPluginLocalVolume
	default:
		dir := m.volumeDir(pod.UID, pluginLocalVolume, mount.pv)
		source := OnHost(m.hostRoot, mount.path)
		if isBlockDevice(source) {
			// Mounted for the node first (local_device.go); the lock
			// holds off its unmount until the pod's bind mount is made.
			unlock := m.csiLocks.lock(localDeviceLock(mount.pv))
			defer unlock()
			global := filepath.Join(m.rootDir, localDeviceMountsDir, mount.pv)
			if err := ensureDeviceMount(source, global, localFSType(pv), localDeviceMountOptions(mount.readOnly, mount.mountOptions)); err != nil {
				return claimSetUp{}, &MountError{Operation: "MountVolume.MountDevice", Volume: mount.pv, Err: err}
			}
			source = global
		}
		made, ownFS, err := ensureBindMount(source, dir, mount.readOnly, mount.mountOptions)
		if err != nil {
			return claimSetUp{}, &MountError{Volume: mount.pv, Err: err}
		}
		if made {
			m.log.V(2).Info("Mounted local volume", "pod", klog.KObj(pod), "volume", vol.Name, "pv", mount.pv, "path", mount.path, "readOnly", mount.readOnly, "mountOptions", mount.mountOptions)
			// Ownership is changed on the volume's first mount for the
			// pod, as the kubelet changes it on a new mount only.
			if o := claimOwnership(pod.Spec.SecurityContext, mount.readOnly, true); o != nil {
				if err := m.changeOwnership(pod, vol.Name, dir, *o); err != nil {
					return claimSetUp{}, &MountError{Volume: mount.pv, Err: err}
				}
			}
		}
		out.dir, out.usage, out.plugin = dir, claimUsageMethod(ownFS, true), metricPluginLocalVolume
		out.relabel = selinuxRelabel(m.selinux, relabelWritable, mount.readOnly, nil)
	}
	return out, nil
}

// volumeUsers are the pods whose folders (those being removed too) hold
// the persistent volume pv: mounted, mapped or recorded there by the
// plugins of claims, until their teardown is done (a pod's inline CSI
// volume of the same name is not it). Read from the disk, so it holds
// after a restart.
func (m *Manager) volumeUsers(pv string) ([]types.UID, error) {
	pods := m.PodsDir()
	var users []types.UID
	for _, pattern := range []string{
		filepath.Join(pods, "*", "volumes", pluginLocalVolume, pv),
		filepath.Join(pods, "*", "volumes", pluginHostPath, pv),
		filepath.Join(pods, "*", "volumes", pluginCSI, pv),
		filepath.Join(pods, "*", "volumeDevices", pluginLocalVolume, pv),
	} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		for _, path := range paths {
			if filepath.Base(filepath.Dir(path)) == pluginCSI {
				record, err := readCSIRecord(filepath.Join(path, csiVolumeDataFile))
				if err == nil && record.VolumeLifecycleMode == string(storagev1.VolumeLifecycleEphemeral) {
					continue
				}
			}
			rel, err := filepath.Rel(pods, path)
			if err != nil {
				return nil, err
			}
			folder, _, _ := strings.Cut(rel, string(filepath.Separator))
			uid, removing := removingOwner(folder)
			if !removing {
				uid = types.UID(folder)
			}
			users = append(users, uid)
		}
	}
	return users, nil
}

// ExtraSupplementalGroups are the groups the pod's containers get for the
// volumes set up for it, beyond the pod's own: the gid annotations of its
// claims' persistent volumes, as the kubelet adds them.
func (m *Manager) ExtraSupplementalGroups(pod *corev1.Pod) []int64 {
	volumes := m.podVolumes(pod.UID)
	var gids []string
	for i := range pod.Spec.Volumes {
		if state := volumes[pod.Spec.Volumes[i].Name]; state != nil && state.ready && state.gid != "" {
			gids = append(gids, state.gid)
		}
	}
	return extraSupplementalGroups(pod, gids)
}
