package volume

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CSI volumes, the decisions: where a volume is staged and published (the
// kubelet's paths), what the node service is asked, and what the
// CSIDriver object allows. Pure functions over the pod, the volume and
// the driver object; the calls and the records that make teardown
// survive a restart are in csi_mount.go.

// The kubelet's names for the CSI plugin's folders and volumes.
const (
	pluginCSI = "kubernetes.io~csi"
	// csiPluginName prefixes a CSI volume's unique name.
	csiPluginName = "kubernetes.io/csi"
	// csiVolumeDataFile is kept beside each published volume's mount.
	csiVolumeDataFile = "vol_data.json"
)

// The volume context keys of a driver with podInfoOnMount.
const (
	csiPodName            = "csi.storage.k8s.io/pod.name"
	csiPodNamespace       = "csi.storage.k8s.io/pod.namespace"
	csiPodUID             = "csi.storage.k8s.io/pod.uid"
	csiServiceAccountName = "csi.storage.k8s.io/serviceAccount.name"
	csiEphemeral          = "csi.storage.k8s.io/ephemeral"
	// csiServiceAccountTokens holds the tokens of a driver with
	// tokenRequests: JSON, audience -> {token, expirationTimestamp}.
	csiServiceAccountTokens = "csi.storage.k8s.io/serviceAccount.tokens"
)

// csiStagingPath is where a persistent volume is staged on the node, once
// for all its pods: <root>/plugins/kubernetes.io/csi/<driver>/<sha256 of
// the handle>/globalmount.
func csiStagingPath(rootDir, driver, handle string) string {
	return filepath.Join(rootDir, "plugins", csiPluginName, driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
}

// The kubelet's paths of a CSI volume of volumeMode Block: staged once for
// the node at <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv>
// (a folder the driver puts its own things in), published for each pod
// to the file <root>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<pod
// uid> (its folder made by the node, the file by the driver), and mapped
// into the pod's folder as the link
// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>, which the
// runtime is handed as the container's device.
func csiBlockStagingPath(rootDir, pv string) string {
	return filepath.Join(rootDir, "plugins", csiPluginName, "volumeDevices", "staging", pv)
}

func csiBlockPublishPath(rootDir, pv string, uid types.UID) string {
	return filepath.Join(rootDir, "plugins", csiPluginName, "volumeDevices", "publish", pv, string(uid))
}

// csiUniqueName is the volume's name in the node's volumesInUse and the
// attach/detach controller's records.
func csiUniqueName(driver, handle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(fmt.Sprintf("%s/%s^%s", csiPluginName, driver, handle))
}

// csiAttachmentName is the VolumeAttachment the attach/detach controller
// makes for the volume on the node.
func csiAttachmentName(handle, driver, nodeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+nodeName)))
}

// csiEphemeralHandle is the handle of a pod's inline volume.
func csiEphemeralHandle(uid types.UID, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(uid)+volume)))
}

// csiMount is how one of the pod's CSI volumes is mounted.
type csiMount struct {
	// name is the volume's folder under the pod's kubernetes.io~csi: the
	// PersistentVolume's name, or the inline volume's.
	name      string
	driver    string
	handle    string
	ephemeral bool
	readOnly  bool
	fsType    string
	// mountFlags are the PersistentVolume's mountOptions.
	mountFlags []string
	// block: the volume is a raw block device (volumeMode Block), mapped
	// into the pod rather than mounted; no fsType, mount flags or
	// fsGroup, as the kubelet's block mapper.
	block      bool
	accessMode corev1.PersistentVolumeAccessMode
	// context is the volume context NodePublishVolume gets; stageContext
	// the one NodeStageVolume gets (without the pod's information).
	context, stageContext map[string]string
	// stageSecret and publishSecret are the Secrets whose data the calls
	// carry.
	stageSecret, publishSecret *corev1.SecretReference
	// attach tells that the volume is attached by the attach/detach
	// controller first (the driver's attachRequired).
	attach bool
	// fsGroup is the pod's fsGroup to give the volume after publishing,
	// when the driver's fsGroupPolicy says nodelet gives it.
	fsGroup bool
	// tokenRequests are the service account tokens NodePublishVolume
	// carries for the pod (the driver's tokenRequests), in the Secrets
	// rather than the volume context when tokensInSecrets.
	tokenRequests   []storagev1.TokenRequest
	tokensInSecrets bool
	// republish: NodePublishVolume is called again while the pod runs
	// (the driver's requiresRepublish), so its tokens are refreshed.
	republish bool
}

// csiPersistentMount is how the pod mounts pv, a csi PersistentVolume,
// through a claim (readOnly is the claim source's), given the driver's
// CSIDriver object (nil when there is none).
func csiPersistentMount(pod *corev1.Pod, pv *corev1.PersistentVolume, readOnly bool, driver *storagev1.CSIDriver) (csiMount, error) {
	source := pv.Spec.CSI
	m := csiMount{
		name:         pv.Name,
		driver:       source.Driver,
		handle:       source.VolumeHandle,
		readOnly:     readOnly || source.ReadOnly,
		fsType:       source.FSType,
		mountFlags:   pv.Spec.MountOptions,
		accessMode:   corev1.ReadWriteOnce,
		stageContext: source.VolumeAttributes,
		stageSecret:  source.NodeStageSecretRef,
		// The kubelet reads it as the pod's namespace's.
		publishSecret: source.NodePublishSecretRef,
	}
	if len(pv.Spec.AccessModes) > 0 {
		m.accessMode = pv.Spec.AccessModes[0]
	}
	if err := checkCSIDriver(driver, storagev1.VolumeLifecyclePersistent, source.Driver); err != nil {
		return csiMount{}, err
	}
	m.attach = attachRequired(driver)
	m.context = csiVolumeContext(pod, source.VolumeAttributes, driver, false)
	setCSIRepublishing(&m, driver)
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		m.block, m.fsType, m.mountFlags = true, "", nil
		return m, nil
	}
	rwo := slices.Contains(pv.Spec.AccessModes, corev1.ReadWriteOnce) || slices.Contains(pv.Spec.AccessModes, corev1.ReadWriteOncePod)
	m.fsGroup = csiGivesFSGroup(pod, fsGroupPolicy(driver), m.readOnly, m.fsType, rwo)
	return m, nil
}

// csiInlineMount is how the pod mounts its inline csi volume vol: an
// ephemeral volume of the driver, never staged or attached.
func csiInlineMount(pod *corev1.Pod, vol *corev1.Volume, driver *storagev1.CSIDriver) (csiMount, error) {
	source := vol.CSI
	if err := checkCSIDriver(driver, storagev1.VolumeLifecycleEphemeral, source.Driver); err != nil {
		return csiMount{}, err
	}
	m := csiMount{
		name:       vol.Name,
		driver:     source.Driver,
		handle:     csiEphemeralHandle(pod.UID, vol.Name),
		ephemeral:  true,
		readOnly:   source.ReadOnly != nil && *source.ReadOnly,
		accessMode: corev1.ReadWriteOnce,
		context:    csiVolumeContext(pod, source.VolumeAttributes, driver, true),
	}
	if source.FSType != nil {
		m.fsType = *source.FSType
	}
	if ref := source.NodePublishSecretRef; ref != nil {
		m.publishSecret = &corev1.SecretReference{Name: ref.Name, Namespace: pod.Namespace}
	}
	m.fsGroup = csiGivesFSGroup(pod, fsGroupPolicy(driver), m.readOnly, m.fsType, true)
	setCSIRepublishing(&m, driver)
	return m, nil
}

// setCSIRepublishing gives m the driver's tokenRequests and
// requiresRepublish.
func setCSIRepublishing(m *csiMount, driver *storagev1.CSIDriver) {
	if driver == nil {
		return
	}
	m.tokenRequests = driver.Spec.TokenRequests
	m.tokensInSecrets = driver.Spec.ServiceAccountTokenInSecrets != nil && *driver.Spec.ServiceAccountTokenInSecrets
	m.republish = driver.Spec.RequiresRepublish != nil && *driver.Spec.RequiresRepublish
}

// csiTokensAttribute is the value of csiServiceAccountTokens for the
// tokens by audience, as the kubelet writes it.
func csiTokensAttribute(tokens map[string]authenticationv1.TokenRequestStatus) (string, error) {
	data, err := json.Marshal(tokens)
	return string(data), err
}

// withCSITokens adds the tokens attribute (none when empty) to the
// publish call's volume context, or to its secrets when the driver asks
// for them there (serviceAccountTokenInSecrets), leaving the mount's own
// maps as they are.
func withCSITokens(context, secrets map[string]string, tokens string, inSecrets bool) (map[string]string, map[string]string) {
	if tokens == "" {
		return context, secrets
	}
	add := func(to map[string]string) map[string]string {
		out := maps.Clone(to)
		if out == nil {
			out = map[string]string{}
		}
		out[csiServiceAccountTokens] = tokens
		return out
	}
	if inSecrets {
		return context, add(secrets)
	}
	return add(context), secrets
}

// checkCSIDriver is why the driver's CSIDriver object does not let the
// node mount its volumes in mode: a mode it does not list (the kubelet's
// words).
func checkCSIDriver(driver *storagev1.CSIDriver, mode storagev1.VolumeLifecycleMode, name string) error {
	if driver == nil {
		if mode == storagev1.VolumeLifecyclePersistent {
			return nil
		}
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, name)
	}
	modes := driver.Spec.VolumeLifecycleModes
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if !slices.Contains(modes, mode) {
		return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, name, modes)
	}
	return nil
}

// attachRequired is the driver's attachRequired; without a CSIDriver
// object, volumes are attached, as the kubelet assumes.
func attachRequired(driver *storagev1.CSIDriver) bool {
	return driver == nil || driver.Spec.AttachRequired == nil || *driver.Spec.AttachRequired
}

// fsGroupPolicy is the driver's, ReadWriteOnceWithFSType by default.
func fsGroupPolicy(driver *storagev1.CSIDriver) storagev1.FSGroupPolicy {
	if driver == nil || driver.Spec.FSGroupPolicy == nil {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	}
	return *driver.Spec.FSGroupPolicy
}

// csiGivesFSGroup tells whether the pod's fsGroup is given to the volume
// after publishing, as the kubelet decides it: never for None or a
// read-only volume; always for File; for ReadWriteOnceWithFSType only
// with an fsType and a ReadWriteOnce(Pod) volume.
func csiGivesFSGroup(pod *corev1.Pod, policy storagev1.FSGroupPolicy, readOnly bool, fsType string, rwo bool) bool {
	if sc := pod.Spec.SecurityContext; sc == nil || sc.FSGroup == nil || policy == storagev1.NoneFSGroupPolicy || readOnly {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	return fsType != "" && rwo
}

// csiVolumeContext is the volume context NodePublishVolume gets: the
// volume's attributes, and with podInfoOnMount the pod's identity.
func csiVolumeContext(pod *corev1.Pod, attributes map[string]string, driver *storagev1.CSIDriver, ephemeral bool) map[string]string {
	out := maps.Clone(attributes)
	if driver == nil || driver.Spec.PodInfoOnMount == nil || !*driver.Spec.PodInfoOnMount {
		return out
	}
	if out == nil {
		out = map[string]string{}
	}
	out[csiPodName] = pod.Name
	out[csiPodNamespace] = pod.Namespace
	out[csiPodUID] = string(pod.UID)
	out[csiServiceAccountName] = pod.Spec.ServiceAccountName
	out[csiEphemeral] = strconv.FormatBool(ephemeral)
	return out
}

// csiCapability is the volume capability the node service is asked for:
// a mounted file system (or a raw block device), with the
// PersistentVolume's access mode.
func csiCapability(m csiMount) *csipb.VolumeCapability {
	mode := csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	switch m.accessMode {
	case corev1.ReadOnlyMany:
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		mode = csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	}
	if m.block {
		return &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
		}
	}
	return &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: m.fsType, MountFlags: m.mountFlags}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
	}
}

// csiRecord is what is kept beside a published volume's mount
// (vol_data.json, the kubelet's file and keys, plus nodelet's own) so that
// it can be unpublished and unstaged after a restart, with nothing in
// memory. It is written before NodeStageVolume and removed only after
// NodeUnstageVolume, so a record exists whenever the volume may be staged
// or published for the pod.
type csiRecord struct {
	SpecVolumeID        string `json:"specVolumeID"`
	VolumeHandle        string `json:"volumeHandle"`
	DriverName          string `json:"driverName"`
	NodeName            string `json:"nodeName"`
	AttachmentID        string `json:"attachmentID,omitempty"`
	VolumeLifecycleMode string `json:"volumeLifecycleMode"`
	// StagingPath is where the volume is staged, empty when the driver
	// does not stage it.
	StagingPath string `json:"stagingPath,omitempty"`
	// TargetPath is where it is published: a folder, or for a block
	// volume a file.
	TargetPath string `json:"targetPath"`
	// DeviceMapPath is a block volume's link in the pod's folder to
	// TargetPath, the device the runtime is handed; empty for a mounted
	// volume. It goes first on teardown.
	DeviceMapPath string `json:"deviceMapPath,omitempty"`
	// Unpublished is set once NodeUnpublishVolume succeeded: the record
	// no longer holds the staging in use.
	Unpublished bool `json:"unpublished,omitempty"`
}

// csiOperations are the names the kubelet gives the steps of setting a
// volume up in its events: mounting, or for a block volume mapping.
type csiOperations struct {
	waitForAttach, stage, publish, mapDevice string
}

func csiOperationsFor(block bool) csiOperations {
	if block {
		return csiOperations{waitForAttach: "MapVolume.WaitForAttach", stage: "MapVolume.SetUpDevice", publish: "MapVolume.MapPodDevice", mapDevice: "MapVolume.MapBlockVolume"}
	}
	return csiOperations{waitForAttach: "MountVolume.WaitForAttach", stage: "MountVolume.MountDevice", publish: "MountVolume.SetUp"}
}

// csiTeardownStep is the next call tearing down a volume of a pod takes.
type csiTeardownStep int

const (
	csiUnpublish csiTeardownStep = iota
	csiUnstage
	// csiForget: nothing left to call; the record goes.
	csiForget
)

// nextCSITeardownStep is the call a record needs next: NodeUnpublishVolume
// until it succeeded, then NodeUnstageVolume when the volume is staged and
// no other record (another pod's, still published or being set up) uses
// the staging, else nothing. Unstaging is left to the last record, so a
// volume is never unstaged while published.
func nextCSITeardownStep(record csiRecord, others []csiRecord) csiTeardownStep {
	if !record.Unpublished {
		return csiUnpublish
	}
	if record.StagingPath == "" {
		return csiForget
	}
	for _, other := range others {
		if other.StagingPath == record.StagingPath && !other.Unpublished {
			return csiForget
		}
	}
	return csiUnstage
}
