package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// CSI volumes, the calls: a volume is staged once on the node (when the
// driver offers STAGE_UNSTAGE_VOLUME) and published into each pod's
// folder; teardown unpublishes, then unstages once no other pod's record
// holds the staging. A record (csiRecord) is written before the first
// call and removed after the last, so a nodelet killed between any two
// calls makes the reverse ones, in order, when it tears the pod down
// again; a driver not registered (yet, after a restart) fails the
// teardown, which is retried.

// CSIDrivers hands out the node service clients of the registered CSI
// drivers (package csi).
type CSIDrivers interface {
	NodeClient(driver string) (csipb.NodeClient, error)
}

// csiTimeout bounds one call to a driver, as the kubelet's.
const csiTimeout = 2 * time.Minute

// keyedMutex serialises what is done to one staging path: a set-up
// writing its record and staging, and a teardown deciding to unstage.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*sync.Mutex{}
	}
	l := k.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		k.locks[key] = l
	}
	k.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// csiDriverObject reads the driver's CSIDriver object, nil when there is
// none.
func (m *Manager) csiDriverObject(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	driver, err := m.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CSIDriver %s: %w", name, err)
	}
	return driver, nil
}

// csiSetUp is what setting up a CSI volume gives.
type csiSetUp struct {
	// path is where the volume is published.
	path   string
	volume csiVolumeID
	// republish: NodePublishVolume is due again at the next resync.
	republish bool
	// selinuxMounted: mounted with the pod's SELinux label
	// (selinux_mount.go), so not relabelled.
	selinuxMounted bool
}

// setUpCSIClaim mounts pv, a csi PersistentVolume, for the pod's volume
// of that name; with the pod's SELinux label when its driver mounts with
// one (the CSIDriver's seLinuxMount).
func (m *Manager) setUpCSIClaim(ctx context.Context, pod *corev1.Pod, volume string, pv *corev1.PersistentVolume, readOnly bool) (csiSetUp, error) {
	driver, err := m.csiDriverObject(ctx, pv.Spec.CSI.Driver)
	if err != nil {
		return csiSetUp{}, &MountError{Volume: pv.Name, Err: err}
	}
	label, err := m.claimSELinuxLabel(pod, volume, pv, driver != nil && driver.Spec.SELinuxMount != nil && *driver.Spec.SELinuxMount)
	if err != nil {
		return csiSetUp{}, err
	}
	mount, err := csiPersistentMount(pod, pv, readOnly, driver)
	if err != nil {
		return csiSetUp{}, &MountError{Volume: pv.Name, Err: err}
	}
	if label != "" {
		// At NodeStageVolume and NodePublishVolume alike.
		mount.mountFlags = append(slices.Clone(mount.mountFlags), selinuxContextMountOption(label))
	}
	set, err := m.setUpCSI(ctx, pod, mount)
	set.selinuxMounted = label != ""
	return set, err
}

// setUpCSIInline mounts the pod's inline csi volume.
func (m *Manager) setUpCSIInline(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) (csiSetUp, error) {
	driver, err := m.csiDriverObject(ctx, vol.CSI.Driver)
	if err != nil {
		return csiSetUp{}, &MountError{Volume: vol.Name, Err: err}
	}
	mount, err := csiInlineMount(pod, vol, driver)
	if err != nil {
		return csiSetUp{}, &MountError{Volume: vol.Name, Err: err}
	}
	return m.setUpCSI(ctx, pod, mount)
}

// setUpCSI stages (when the driver stages) and publishes the volume into
// the pod's folder. A volume whose record says it is published and whose
// target is mounted is left as it is (SetUpPod again after a restart),
// unless its driver requires republishing: then NodePublishVolume alone
// is called again, with the tokens refreshed when due.
func (m *Manager) setUpCSI(ctx context.Context, pod *corev1.Pod, mount csiMount) (csiSetUp, error) {
	dir := m.volumeDir(pod.UID, pluginCSI, mount.name)
	target := filepath.Join(dir, "mount")
	recordPath := filepath.Join(dir, csiVolumeDataFile)
	out := csiSetUp{path: target, volume: csiVolumeID{driver: mount.driver, handle: mount.handle}, republish: mount.republish}
	ops := csiOperationsFor(mount.block)
	mapPath := ""
	if mount.block {
		target = csiBlockPublishPath(m.rootDir, mount.name, pod.UID)
		mapPath = m.deviceDir(pod.UID, pluginCSI, mount.name)
		out.path = mapPath
	}
	if mount.attach {
		m.markCSIInUse(pod.UID, csiUniqueName(mount.driver, mount.handle))
	}
	published := false
	if record, err := readCSIRecord(recordPath); err == nil && !record.Unpublished {
		if mount.block {
			// The driver bind-mounts the device on the file or makes
			// a device node there.
			published = checkBlockDevice(target) == nil
		} else if mounted, err := isMountPoint(target); err == nil && mounted {
			published = true
		}
	}
	fail := func(operation string, err error) (csiSetUp, error) {
		return csiSetUp{}, &MountError{Operation: operation, Volume: mount.name, Err: err}
	}
	if published && !mount.republish {
		// A nodelet killed between publishing and mapping maps now.
		if err := mapBlockDevice(target, mapPath); err != nil {
			return fail(ops.mapDevice, err)
		}
		return out, nil
	}

	var publishContext map[string]string
	attachment := ""
	if mount.attach {
		attachment = csiAttachmentName(mount.handle, mount.driver, m.nodeName)
		va, err := m.client.StorageV1().VolumeAttachments().Get(ctx, attachment, metav1.GetOptions{})
		switch {
		case err != nil:
			return fail(ops.waitForAttach, fmt.Errorf("volume %s has GET error for volume attachment %s: %w", mount.handle, attachment, err))
		case !va.Status.Attached:
			return fail(ops.waitForAttach, fmt.Errorf("volume %s is not attached for volume attachment %s", mount.handle, attachment))
		}
		publishContext = va.Status.AttachmentMetadata
	}
	client, err := m.csi.NodeClient(mount.driver)
	if err != nil {
		return fail(ops.stage, fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: %w", err))
	}
	stage := false
	if !mount.ephemeral {
		if stage, err = stagesVolumes(ctx, client); err != nil {
			return fail(ops.stage, err)
		}
	}
	stageSecrets, err := m.csiSecrets(ctx, "NodeStageSecretRef", mount.stageSecret)
	if err != nil {
		return fail(ops.stage, err)
	}
	publishSecrets, err := m.csiSecrets(ctx, "NodePublishSecretRef", mount.publishSecret)
	if err != nil {
		return fail(ops.publish, err)
	}
	tokens, err := m.csiTokensFor(ctx, pod, mount.tokenRequests, m.clock.Now())
	if err != nil {
		return fail(ops.publish, fmt.Errorf("failed to get service account token attributes: %w", err))
	}
	volumeContext, publishSecrets := withCSITokens(mount.context, publishSecrets, tokens, mount.tokensInSecrets)

	record := csiRecord{
		SpecVolumeID:        mount.name,
		VolumeHandle:        mount.handle,
		DriverName:          mount.driver,
		NodeName:            m.nodeName,
		AttachmentID:        attachment,
		VolumeLifecycleMode: string(storagev1.VolumeLifecyclePersistent),
		TargetPath:          target,
		DeviceMapPath:       mapPath,
	}
	if mount.ephemeral {
		record.VolumeLifecycleMode = string(storagev1.VolumeLifecycleEphemeral)
	}
	switch {
	case stage && mount.block:
		record.StagingPath = csiBlockStagingPath(m.rootDir, mount.name)
	case stage:
		record.StagingPath = csiStagingPath(m.rootDir, mount.driver, mount.handle)
	}
	// The record first, under the staging's lock: from then on a teardown
	// of another pod sees this one holds the staging.
	unlock := m.csiLocks.lock(record.StagingPath + "|" + mount.handle)
	defer unlock()
	if err := ensureDir(dir, 0o750); err != nil {
		return fail(ops.publish, err)
	}
	if !published {
		if err := writeCSIRecord(recordPath, record); err != nil {
			return fail(ops.publish, err)
		}
	}
	capability := csiCapability(mount)
	if stage && !published {
		if err := os.MkdirAll(record.StagingPath, 0o750); err != nil {
			return fail(ops.stage, err)
		}
		callCtx, cancel := context.WithTimeout(ctx, csiTimeout)
		_, err := client.NodeStageVolume(callCtx, &csipb.NodeStageVolumeRequest{
			VolumeId:          mount.handle,
			PublishContext:    publishContext,
			StagingTargetPath: record.StagingPath,
			VolumeCapability:  capability,
			Secrets:           stageSecrets,
			VolumeContext:     mount.stageContext,
		})
		cancel()
		if err != nil {
			return fail(ops.stage, err)
		}
	}
	if mount.block {
		// The publish file's folder is the node's to make, the file the
		// driver's.
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			return fail(ops.publish, err)
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, csiTimeout)
	_, err = client.NodePublishVolume(callCtx, &csipb.NodePublishVolumeRequest{
		VolumeId:          mount.handle,
		PublishContext:    publishContext,
		StagingTargetPath: record.StagingPath,
		TargetPath:        target,
		VolumeCapability:  capability,
		Readonly:          mount.readOnly,
		Secrets:           publishSecrets,
		VolumeContext:     volumeContext,
	})
	cancel()
	if err != nil {
		return fail(ops.publish, err)
	}
	m.log.V(2).Info("Published CSI volume", "pod", klog.KObj(pod), "volume", mount.name, "driver", mount.driver, "handle", mount.handle, "staged", stage, "republished", published, "block", mount.block)
	if err := mapBlockDevice(target, mapPath); err != nil {
		return fail(ops.mapDevice, err)
	}
	if mount.fsGroup && !published {
		if o := claimOwnership(pod.Spec.SecurityContext, mount.readOnly, true); o != nil {
			if err := m.changeOwnership(pod, mount.name, target, *o); err != nil {
				return fail(ops.publish, err)
			}
		}
	}
	return out, nil
}

// stagesVolumes asks the driver whether it stages volumes.
func stagesVolumes(ctx context.Context, client csipb.NodeClient) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, csiTimeout)
	defer cancel()
	caps, err := client.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return false, err
	}
	for _, c := range caps.GetCapabilities() {
		if c.GetRpc().GetType() == csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
			return true, nil
		}
	}
	return false, nil
}

// csiSecrets reads the data of the Secret ref (the volume's field names
// it) names, nil for none.
func (m *Manager) csiSecrets(ctx context.Context, field string, ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	secret, err := m.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: %w", field, ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(secret.Data))
	for k, v := range secret.Data {
		out[k] = string(v)
	}
	return out, nil
}

// tearDownCSI unpublishes the pod's CSI volumes, and unstages those no
// other pod holds, in the order the records say is next. It stops at the
// first failure, keeping the records for the retry.
func (m *Manager) tearDownCSI(ctx context.Context, uid types.UID) error {
	paths, err := filepath.Glob(filepath.Join(m.PodDir(uid), "volumes", pluginCSI, "*", csiVolumeDataFile))
	if err != nil {
		return err
	}
	for _, path := range paths {
		if err := m.tearDownCSIVolume(ctx, path); err != nil {
			return err
		}
	}
	m.forgetCSIInUse(uid)
	return nil
}

func (m *Manager) tearDownCSIVolume(ctx context.Context, recordPath string) error {
	record, err := readCSIRecord(recordPath)
	if err != nil {
		return err
	}
	client, err := m.csi.NodeClient(record.DriverName)
	if err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", record.SpecVolumeID, err)
	}
	if nextCSITeardownStep(record, nil) == csiUnpublish {
		// A block volume's link in the pod's folder goes first: the
		// reverse of mapping it last.
		if record.DeviceMapPath != "" {
			if err := os.Remove(record.DeviceMapPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("UnmapVolume.UnmapBlockVolume failed for volume %q: %w", record.SpecVolumeID, err)
			}
		}
		callCtx, cancel := context.WithTimeout(ctx, csiTimeout)
		_, err := client.NodeUnpublishVolume(callCtx, &csipb.NodeUnpublishVolumeRequest{VolumeId: record.VolumeHandle, TargetPath: record.TargetPath})
		cancel()
		if err != nil {
			return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", record.SpecVolumeID, err)
		}
		record.Unpublished = true
		if err := writeCSIRecord(recordPath, record); err != nil {
			return err
		}
		m.log.V(2).Info("Unpublished CSI volume", "volume", record.SpecVolumeID, "driver", record.DriverName, "target", record.TargetPath)
	}
	if record.StagingPath != "" {
		unlock := m.csiLocks.lock(record.StagingPath + "|" + record.VolumeHandle)
		defer unlock()
		others, err := m.csiRecords(recordPath)
		if err != nil {
			return err
		}
		if nextCSITeardownStep(record, others) == csiUnstage {
			callCtx, cancel := context.WithTimeout(ctx, csiTimeout)
			_, err := client.NodeUnstageVolume(callCtx, &csipb.NodeUnstageVolumeRequest{VolumeId: record.VolumeHandle, StagingTargetPath: record.StagingPath})
			cancel()
			if err != nil {
				return fmt.Errorf("UnmountDevice failed for volume %q: %w", record.SpecVolumeID, err)
			}
			// The staging folder and the one named for the handle go,
			// as the kubelet removes them; a folder still mounted or
			// not empty stays. A block volume's staging folder holds
			// what its driver left: removed whole, unless something
			// under it is still mounted.
			if record.DeviceMapPath != "" {
				if err := removeUnmounted(record.StagingPath); err != nil {
					return fmt.Errorf("UnmapDevice failed for volume %q: %w", record.SpecVolumeID, err)
				}
			} else {
				_ = os.Remove(record.StagingPath)
				_ = os.Remove(filepath.Dir(record.StagingPath))
			}
			m.log.V(2).Info("Unstaged CSI volume", "volume", record.SpecVolumeID, "driver", record.DriverName, "staging", record.StagingPath)
		}
	}
	if mounted, err := isMountPoint(record.TargetPath); err != nil || mounted {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %s is still mounted after NodeUnpublishVolume", record.SpecVolumeID, record.TargetPath)
	}
	_ = os.Remove(record.TargetPath)
	if record.DeviceMapPath != "" {
		// The volume's publish folder, once no pod's file is left in it.
		_ = os.Remove(filepath.Dir(record.TargetPath))
	}
	if err := os.Remove(recordPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// noCSIDrivers is a node with no CSI driver registered.
type noCSIDrivers struct{}

func (noCSIDrivers) NodeClient(driver string) (csipb.NodeClient, error) {
	return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers", driver)
}

// isMountPoint tells whether something is mounted at path (a bind mount
// of a folder of the same file system too, which only mountinfo shows).
func isMountPoint(path string) (bool, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	mounts, err := readMountInfo()
	if err != nil {
		return false, fmt.Errorf("listing mounts: %w", err)
	}
	for _, mount := range mounts {
		if mount.MountPoint == resolved {
			return true, nil
		}
	}
	return false, nil
}
