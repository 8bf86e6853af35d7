package volume

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ephemeralvolume "k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// What a persistentVolumeClaim volume needs before it can be mounted, and
// how it is mounted: decisions over the claim and the volume read from
// the API server. The reads and the mounting are in claim_mount.go.

// pvcProtectionFinalizer keeps a claim in use from going away: a claim
// being deleted without it is refused, as the kubelet refuses it.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// The persistent volume types nodelet mounts.
const (
	claimLocal    = "local"
	claimHostPath = "hostPath"
	claimCSI      = "csi"
)

// claimMount is how the pod mounts the persistent volume bound to one of
// its claims.
type claimMount struct {
	// pv is the PersistentVolume's name: the kubelet names the volume by
	// it once the claim is resolved.
	pv string
	// kind is claimLocal, claimHostPath or claimCSI.
	kind string
	// path is the volume's folder on the node.
	path string
	// hostPathType is a hostPath volume's type, checked as an inline
	// hostPath's.
	hostPathType *corev1.HostPathType
	// readOnly is the claim source's readOnly: the volume is mounted
	// read-only into every container.
	readOnly bool
	// gid is the volume's pv.beta.kubernetes.io/gid annotation: a group
	// the pod's containers get, to use the volume as it.
	gid string
	// block: the volume is a raw block device (volumeMode Block), which
	// the pod's containers get as a device (volumeDevices).
	block bool
	// mountOptions are a local volume's mount options (see
	// pvMountOptions), its bind mount's flags.
	mountOptions []string
}

// mountOptionsAnnotation is the beta annotation of mount options, which
// the kubelet reads before the field.
const mountOptionsAnnotation = "volume.beta.kubernetes.io/mount-options"

// pvMountOptions are the volume's mount options as the kubelet reads
// them for the check of the plugin's support and for local and other
// in-tree mounts: the beta annotation's, else the field's.
func pvMountOptions(pv *corev1.PersistentVolume) []string {
	if s, ok := pv.Annotations[mountOptionsAnnotation]; ok {
		return strings.Split(s, ",")
	}
	return pv.Spec.MountOptions
}

// localMountOptions are the options a local volume's bind mount takes:
// the kernel's flags for a mount point, which a bind mount is remounted
// with. The kubelet hands any option to mount(8), which passes the others
// to a bind remount that ignores them; nodelet refuses them rather than
// ignore them.
var localMountOptions = map[string]bool{
	"ro": true, "rw": true, "noexec": true, "exec": true, "nosuid": true, "suid": true,
	"nodev": true, "dev": true, "noatime": true, "atime": true, "nodiratime": true, "diratime": true,
	"relatime": true, "norelatime": true, "strictatime": true, "sync": true, "async": true,
	"dirsync": true, "defaults": true,
}

// checkLocalMountOptions is why a local volume cannot be mounted with
// options, nil when each is a mount point's flag.
func checkLocalMountOptions(options []string) error {
	for _, o := range options {
		if !localMountOptions[strings.TrimSpace(o)] {
			return fmt.Errorf("mount option %q is not a bind mount's flag: nodelet mounts local volumes with ro, rw, noexec, exec, nosuid, suid, nodev, dev, noatime, atime, nodiratime, diratime, relatime, norelatime, strictatime, sync, async, dirsync and defaults only", o)
		}
	}
	return nil
}

// volumeGIDAnnotation names the group a persistent volume is usable by;
// the kubelet adds it to the supplemental groups of the containers of a
// pod that mounts the volume.
const volumeGIDAnnotation = "pv.beta.kubernetes.io/gid"

// extraSupplementalGroups are the groups of the pod's mounted volumes
// (their gid annotations) that the pod does not have already, in order,
// each once. An annotation that is not a number is skipped, as the
// kubelet skips it.
func extraSupplementalGroups(pod *corev1.Pod, gids []string) []int64 {
	have := map[int64]bool{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			have[*psc.FSGroup] = true
		}
		for _, g := range psc.SupplementalGroups {
			have[g] = true
		}
	}
	var extra []int64
	for _, s := range gids {
		g, err := strconv.ParseInt(s, 10, 64)
		if err != nil || have[g] {
			continue
		}
		have[g] = true
		extra = append(extra, g)
	}
	return extra
}

// checkClaim is why the pod cannot use claim (read as err) yet, in the
// kubelet's words, nil when it is bound.
func checkClaim(claim *corev1.PersistentVolumeClaim, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("failed to fetch PVC from API server: %w", err)
	case claim.DeletionTimestamp != nil && !slices.Contains(claim.Finalizers, pvcProtectionFinalizer):
		return errors.New("PVC is being deleted")
	case claim.Status.Phase != corev1.ClaimBound:
		return errors.New("PVC is not bound")
	case claim.Spec.VolumeName == "":
		return errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	return nil
}

// checkBoundVolume is why pv (read as err), which the claim of UID
// claimUID names, cannot be used yet, in the kubelet's words.
func checkBoundVolume(name string, claimUID types.UID, pv *corev1.PersistentVolume, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("failed to fetch PV %s from API server: %w", name, err)
	case pv.Spec.ClaimRef == nil:
		return fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", name)
	case pv.Spec.ClaimRef.UID != claimUID:
		return fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", name, pv.Spec.ClaimRef.UID, claimUID)
	}
	return nil
}

// checkVolumeMode is why the pod's containers cannot use pv as they ask:
// a Block volume in volumeMounts, or a Filesystem one in volumeDevices
// (the kubelet's words). block tells the volume is a Block one.
func checkVolumeMode(pod *corev1.Pod, volume string, pv *corev1.PersistentVolume) (block bool, err error) {
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	mounted, mapped := volumeUse(pod, volume)
	switch {
	case mounted && mode != corev1.PersistentVolumeFilesystem:
		return false, &ClaimError{Volume: volume, Err: fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", volume, mode)}
	case mapped && mode != corev1.PersistentVolumeBlock:
		return false, &ClaimError{Volume: volume, Err: fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", volume, mode)}
	}
	return mode == corev1.PersistentVolumeBlock, nil
}

// volumeUse tells whether a container of the pod mounts the volume
// (volumeMounts) and whether one maps it as a device (volumeDevices).
func volumeUse(pod *corev1.Pod, volume string) (mounted, mapped bool) {
	visit := func(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice) {
		for _, m := range mounts {
			mounted = mounted || m.Name == volume
		}
		for _, d := range devices {
			mapped = mapped || d.Name == volume
		}
	}
	for _, c := range pod.Spec.InitContainers {
		visit(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		visit(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(c.VolumeMounts, c.VolumeDevices)
	}
	return mounted, mapped
}

// claimSource is the claim the pod's volume vol mounts: a
// persistentVolumeClaim volume's, or for a generic ephemeral volume the one
// the controller-manager makes from its template, named after the pod and
// the volume; ephemeral tells which. The kubelet mounts both alike.
func claimSource(pod *corev1.Pod, vol *corev1.Volume) (source corev1.PersistentVolumeClaimVolumeSource, ephemeral bool) {
	if vol.Ephemeral != nil {
		return corev1.PersistentVolumeClaimVolumeSource{ClaimName: ephemeralvolume.VolumeClaimName(pod, vol)}, true
	}
	return *vol.PersistentVolumeClaim, false
}

// claimMountOf is how the pod mounts pv through its volume vol on a node
// of nodeLabels: only a local, hostPath or csi volume, only on a node its
// nodeAffinity allows (the kubelet checks it again before mounting, as
// the scheduler may have been bypassed by setting nodeName). readOnly is
// the claim source's.
func claimMountOf(pod *corev1.Pod, vol *corev1.Volume, readOnly bool, pv *corev1.PersistentVolume, nodeLabels map[string]string) (claimMount, error) {
	block, err := checkVolumeMode(pod, vol.Name, pv)
	if err != nil {
		return claimMount{}, err
	}
	m := claimMount{pv: pv.Name, readOnly: readOnly, gid: pv.Annotations[volumeGIDAnnotation], block: block}
	switch {
	case pv.Spec.Local != nil:
		m.kind, m.path = claimLocal, pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		m.kind, m.path, m.hostPathType = claimHostPath, pv.Spec.HostPath.Path, pv.Spec.HostPath.Type
	case pv.Spec.CSI != nil:
		m.kind = claimCSI
	default:
		return claimMount{}, &UnsupportedVolumeError{Volume: vol.Name, What: fmt.Sprintf("%s persistent volumes", orUnknown(sourceKind(pv.Spec.PersistentVolumeSource)))}
	}
	// The kubelet's hostPath plugin maps no devices: it finds no block
	// volume plugin for the volume.
	if block && m.kind == claimHostPath {
		return claimMount{}, &MountError{Operation: "MapVolume.FindMapperPluginBySpec", Volume: pv.Name, Err: errors.New("no block volume plugin matched: hostPath volumes cannot be of volumeMode Block")}
	}
	if err := storagehelpers.CheckNodeAffinity(pv, nodeLabels); err != nil {
		operation := "MountVolume.NodeAffinity check"
		if block {
			operation = "MapVolume.NodeAffinity check"
		}
		return claimMount{}, &MountError{Operation: operation, Volume: pv.Name, Err: err}
	}
	// Mount options: a CSI driver gets the field's as its mount flags
	// (csi.go); a local volume is bind-mounted with them; the kubelet's
	// hostPath plugin takes none. A device is not mounted: the kubelet
	// maps it whatever its options say.
	options := pvMountOptions(pv)
	switch {
	case len(options) == 0 || m.kind == claimCSI || block:
	case m.kind == claimHostPath:
		return claimMount{}, &MountError{Operation: "MountVolume.MountOptionSupport check", Volume: pv.Name, Err: errors.New("mount options are not supported for this volume type")}
	default:
		if err := checkLocalMountOptions(options); err != nil {
			return claimMount{}, &MountError{Volume: pv.Name, Err: err}
		}
		m.mountOptions = options
	}
	return m, nil
}

// errReadWriteOncePodInUse is the kubelet's reason for refusing a second
// pod a ReadWriteOncePod volume.
var errReadWriteOncePodInUse = errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod")

// readWriteOncePod tells whether pv may be used by a single pod of the
// node: its only access mode is ReadWriteOncePod. With several modes the
// kubelet does not know which one a pod means, and lets it be.
func readWriteOncePod(pv *corev1.PersistentVolume) bool {
	return len(pv.Spec.AccessModes) == 1 && pv.Spec.AccessModes[0] == corev1.ReadWriteOncePod
}

// checkReadWriteOncePod is why the pod may not set up pv, a volume other
// pods of the node (users, by UID) have set up, in the kubelet's words:
// a ReadWriteOncePod volume is one pod's until it is torn down for it.
func checkReadWriteOncePod(pv *corev1.PersistentVolume, block bool, pod types.UID, users []types.UID) error {
	if !readWriteOncePod(pv) {
		return nil
	}
	for _, user := range users {
		if user != pod {
			operation := "MountVolume.SetUp"
			if block {
				operation = "MapVolume.SetUpDevice"
			}
			return &MountError{Operation: operation, Volume: pv.Name, Err: errReadWriteOncePodInUse}
		}
	}
	return nil
}
