// Package volume materialises a pod's volumes on the node, in the kubelet's
// layout, for the runtime to bind-mount into the pod's containers:
//
//	<RootDir>/pods/<uid>/volumes/kubernetes.io~projected/<name>
//	<RootDir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>
//	<RootDir>/pods/<uid>/volumes/kubernetes.io~configmap/<name>
//	<RootDir>/pods/<uid>/volumes/kubernetes.io~secret/<name>
//	<RootDir>/pods/<uid>/volumes/kubernetes.io~downward-api/<name>
//	<RootDir>/pods/<uid>/volumes/kubernetes.io~local-volume/<pv name>
//	<RootDir>/pods/<uid>/volumeDevices/<plugin>/<pv name> (a block volume's link)
//
// Supported: projected (serviceAccountToken, configMap, secret,
// downwardAPI sources), configMap, secret, downwardAPI, emptyDir (disk or
// memory) and hostPath volumes, and persistentVolumeClaim volumes bound to
// local or hostPath PersistentVolumes (claim*.go). Anything else is an
// *UnsupportedVolumeError. The pod's fsGroup is applied as the kubelet
// applies it (ownership*.go), and each volume's usage is measured for the
// node's API (stats.go, usage*.go).
//
// Volumes that hold secrets (projected, secret, downwardAPI, emptyDir of
// medium Memory) live on a tmpfs of their own, as under the kubelet;
// configMap volumes and disk emptyDirs are plain folders. Files that come
// from the API are published with the kubelet's atomic writer layout
// (see atomic_writer.go). Everything on disk can be found again from the
// disk and /proc/self/mountinfo alone, so TearDownPod works after a
// restart; what is kept in memory (tokens, when each volume is next due)
// only saves work.
package volume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// The kubelet's plugin folder names, so that tools which know the
// kubelet's layout find volumes here too.
const (
	pluginProjected   = "kubernetes.io~projected"
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
)

// DefaultSyncPeriod is how often volumes whose files come from the API are
// rewritten when Options.SyncPeriod is zero. With reads shared between pods
// for half of it (objectCache), an update reaches every pod within a minute,
// about as soon as the kubelet's periodic pod sync brings it.
const DefaultSyncPeriod = 40 * time.Second

// retryPeriod is how soon a volume that is in use is set up again after a
// failed resync or token refresh.
const retryPeriod = 10 * time.Second

// Options configure a Manager.
type Options struct {
	// RootDir is nodelet's root folder; pods live under
	// <RootDir>/pods/<uid>. Required.
	RootDir string
	// SyncPeriod is how often the files of projected, configMap, secret
	// and downwardAPI volumes are read again from the API server and the
	// pod and rewritten, so that updates reach running containers.
	// Default DefaultSyncPeriod; negative: written once, then only when a
	// service account token is due.
	SyncPeriod time.Duration
	// NodeAllocatable returns the node's allocatable resources, nil when
	// unknown: the size of memory emptyDirs and the unset limits of
	// downwardAPI resourceFieldRefs. Default: unknown.
	NodeAllocatable func(context.Context) corev1.ResourceList
	// NodeLabels returns the Node's labels, which a persistent volume's
	// nodeAffinity must match; nil when unknown. Default: unknown.
	NodeLabels func(context.Context) map[string]string
	// HostRoot is where the host's root is mounted, when nodelet does not
	// run in the host's mount namespace (a companion: /host); see OnHost.
	HostRoot string
	// StatsPeriod is how long a volume's measured usage is served before
	// it is measured again (see stats.go). Default DefaultStatsPeriod;
	// negative: volume usage is not reported.
	StatsPeriod time.Duration
	// CSI are the registered CSI drivers (package csi). Default: none, so
	// CSI volumes wait for a driver that never registers.
	CSI CSIDrivers
	// NodeName names the node's VolumeAttachments and CSI records.
	NodeName string
	// Recorder records the events of pods' volumes that are not about
	// setting them up (VolumeConditionAbnormal). Default: none.
	Recorder record.EventRecorder
	// SELinuxEnabled tells whether the host runs SELinux, asked once
	// (selinux.go). Default: the host's (go-selinux).
	SELinuxEnabled func() bool
	// SELinuxLabels makes pods' labels on such a host (selinux_mount.go).
	// Default: the host's policy.
	SELinuxLabels SELinuxLabels
}

// Manager materialises pod volumes. Safe for concurrent use on different
// pods; never called concurrently for one pod.
type Manager struct {
	rootDir     string
	hostRoot    string
	syncPeriod  time.Duration
	allocatable func(context.Context) corev1.ResourceList
	nodeLabels  func(context.Context) map[string]string
	client      kubernetes.Interface
	clock       clock.Clock
	// removals numbers the folders TearDownPod renames to remove.
	removals atomic.Uint64
	log      logr.Logger

	// objects shares ConfigMap and Secret reads between pods' resyncs.
	objects objectCache

	statsPeriod time.Duration
	// usage keeps the volumes' last measurements; walks bounds the
	// measurements under way.
	usage usageCache
	walks chan struct{}

	mu sync.Mutex
	// pods is what is remembered of each pod's volumes, by volume name.
	pods map[types.UID]map[string]*volumeState
	// statsTargets are the volumes of each pod whose usage is reported,
	// set up; read by the node's API, apart from the pod's calls.
	statsTargets map[types.UID][]statsTarget
	// csiInUse are the attachable CSI volumes each pod is setting up or
	// uses (VolumesInUse).
	csiInUse map[types.UID][]corev1.UniqueVolumeName
	// csiTokens are the service account tokens held for each pod's CSI
	// drivers (csi_token.go).
	csiTokens map[types.UID]map[csiTokenKey]*token

	csi      CSIDrivers
	nodeName string
	recorder record.EventRecorder
	// selinux: the host runs SELinux, so volumes are relabelled.
	selinux       bool
	selinuxLabels SELinuxLabels
	// csiLocks serialise the set-ups and teardowns of one staged volume.
	csiLocks keyedMutex
}

type volumeState struct {
	// path is the host path handed to the runtime.
	path string
	// ready is set once the volume was set up.
	ready bool
	// dueAt is when the volume must be set up again; zero when never.
	dueAt time.Time
	// tokens are the service account tokens of a projected volume, by
	// source index.
	tokens map[int]*token
	// downwardAPI is what the volume's downward API files held when it
	// was last set up (downwardAPIDigest); a change in the pod's labels,
	// annotations or resources makes them due at once.
	downwardAPI string
	// usage is how the volume's usage is measured; claim is the
	// PersistentVolumeClaim it mounts, if any.
	usage usageMethod
	claim *statsapi.PVCReference
	// csi names a CSI volume for its driver, which measures it.
	csi csiVolumeID
	// gid is a claim's volume's group annotation (see
	// ExtraSupplementalGroups).
	gid string
	// relabel: the runtime relabels the volume's mounts (SELinuxRelabel).
	relabel bool
	// plugin is a claim's volume plugin, as the metrics name it.
	plugin string
}

// NewManager returns a Manager that keeps pod folders under opts.RootDir
// and reads ConfigMaps and Secrets and requests tokens through client,
// straight from the API server (never a cache: a node may only read the
// objects its pods refer to).
func NewManager(opts Options, client kubernetes.Interface, clk clock.Clock, log logr.Logger) *Manager {
	syncPeriod := opts.SyncPeriod
	if syncPeriod == 0 {
		syncPeriod = DefaultSyncPeriod
	}
	allocatable := opts.NodeAllocatable
	if allocatable == nil {
		allocatable = func(context.Context) corev1.ResourceList { return nil }
	}
	nodeLabels := opts.NodeLabels
	if nodeLabels == nil {
		nodeLabels = func(context.Context) map[string]string { return nil }
	}
	statsPeriod := opts.StatsPeriod
	if statsPeriod == 0 {
		statsPeriod = DefaultStatsPeriod
	}
	csiDrivers := opts.CSI
	if csiDrivers == nil {
		csiDrivers = noCSIDrivers{}
	}
	return &Manager{
		selinux:       selinuxEnabled(opts),
		selinuxLabels: orHostSELinuxLabels(opts.SELinuxLabels),
		csi:           csiDrivers,
		nodeName:      opts.NodeName,
		recorder:      opts.Recorder,
		rootDir:       opts.RootDir,
		hostRoot:      opts.HostRoot,
		syncPeriod:    syncPeriod,
		allocatable:   allocatable,
		nodeLabels:    nodeLabels,
		client:        client,
		clock:         clk,
		log:           log,
		statsPeriod:   statsPeriod,
		walks:         make(chan struct{}, concurrentWalks),
		pods:          map[types.UID]map[string]*volumeState{},
		statsTargets:  map[types.UID][]statsTarget{},
	}
}

// SetUpPod makes every volume of the pod ready and returns the host path
// of each by volume name, and the time at which the pod needs SetUpPod
// again (token refresh, content resync; zero when never). Idempotent, and
// cheap when nothing is due: no I/O at all.
//
// It sets up every volume it can. The error joins one error per failed
// volume; the user errors among them (see IsUserError, UserErrors) carry
// the kubelet's FailedMount messages. paths holds every volume that can be
// mounted, which on error is not always none: a volume set up before whose
// resync failed keeps its previous files, stays in paths and is retried
// shortly (as the kubelet, which keeps running pods going and reports
// FailedMount). Containers can be started once paths holds every volume
// of the pod.
func (m *Manager) SetUpPod(ctx context.Context, pod *corev1.Pod) (paths map[string]string, refreshAt time.Time, err error) {
	if err := checkUID(pod.UID); err != nil {
		return nil, time.Time{}, fmt.Errorf("setting up volumes of pod %s: %w", klog.KObj(pod), err)
	}
	volumes := m.podVolumes(pod.UID)
	now := m.clock.Now()
	var allocatable corev1.ResourceList
	if hasDownwardAPI(pod.Spec.Volumes) {
		allocatable = m.allocatable(ctx)
	}

	paths = make(map[string]string, len(pod.Spec.Volumes))
	var errs []error
	var targets []statsTarget
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		state := volumes[vol.Name]
		if state == nil {
			state = &volumeState{}
			volumes[vol.Name] = state
		}
		downwardAPI := downwardAPIDigest(pod, vol, allocatable)
		if !state.ready || isDue(state.dueAt, now) || downwardAPI != state.downwardAPI {
			state.downwardAPI = downwardAPI
			if err := m.setUpVolume(ctx, pod, vol, state, now); err != nil {
				errs = append(errs, err)
				if !state.ready {
					continue
				}
				state.dueAt = now.Add(retryPeriod)
			}
		}
		paths[vol.Name] = state.path
		refreshAt = earliest(refreshAt, state.dueAt)
		if state.usage != usageNone {
			targets = append(targets, statsTarget{uid: pod.UID, pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, name: vol.Name, path: state.path, method: state.usage, claim: state.claim, csi: state.csi})
		}
	}
	m.setStatsTargets(pod.UID, targets)
	return paths, refreshAt, errors.Join(errs...)
}

// podVolumes is the pod's memory, made on first use. Only calls for that
// pod use it, never two at once: it needs no lock of its own.
func (m *Manager) podVolumes(uid types.UID) map[string]*volumeState {
	m.mu.Lock()
	defer m.mu.Unlock()
	volumes := m.pods[uid]
	if volumes == nil {
		volumes = map[string]*volumeState{}
		m.pods[uid] = volumes
	}
	return volumes
}

func (m *Manager) forgetPod(uid types.UID) {
	m.mu.Lock()
	delete(m.pods, uid)
	delete(m.statsTargets, uid)
	delete(m.csiTokens, uid)
	m.mu.Unlock()
	m.forgetUsage(uid)
}

// setUpVolumeOnce sets up one volume and records in state where it is and
// when it is next due. Files that come from the API are gathered before
// anything is mounted, so a volume whose ConfigMap is missing leaves
// nothing behind.
func (m *Manager) setUpVolumeOnce(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, state *volumeState, now time.Time) error {
	if err := checkSupported(vol); err != nil {
		return err
	}
	var (
		dir     string
		dueAt   time.Time
		err     error
		usage   = volumeUsageMethod(vol)
		claim   *statsapi.PVCReference
		csi     csiVolumeID
		relabel bool // a claim's, else relabelVolume's
	)
	switch {
	case vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil:
		set, err := m.setUpClaim(ctx, pod, vol)
		if err != nil {
			return err
		}
		dir, usage, claim, csi, relabel = set.dir, set.usage, set.claim, set.csi, set.relabel
		state.gid, state.plugin = set.gid, set.plugin
		if set.republish {
			dueAt = now.Add(m.csiRepublishPeriod())
		}
	case vol.CSI != nil:
		set, err := m.setUpCSIInline(ctx, pod, vol)
		if err != nil {
			return err
		}
		dir, usage, csi = set.path, usageCSI, set.volume
		if set.republish {
			dueAt = now.Add(m.csiRepublishPeriod())
		}
	case vol.HostPath != nil:
		if err := checkHostPath(m.hostRoot, vol.HostPath.Path, vol.HostPath.Type); err != nil {
			return &MountError{Volume: vol.Name, Err: err}
		}
		dir = vol.HostPath.Path
	case vol.EmptyDir != nil:
		dir = m.volumeDir(pod.UID, pluginEmptyDir, vol.Name)
		if vol.EmptyDir.Medium == corev1.StorageMediumMemory {
			err = m.ensureTmpfs(dir, memoryVolumeSize(pod, vol.EmptyDir.SizeLimit, m.allocatable(ctx)))
		} else {
			err = ensureDir(dir, 0o777)
		}
		if o := volumeOwnership(pod.Spec.SecurityContext, vol); err == nil && o != nil {
			// As the kubelet, which sets the volume up all the same: the
			// pod may not need the group.
			if err := m.changeOwnership(pod, vol.Name, dir, *o); err != nil {
				m.log.Error(err, "Failed to give a volume to the pod's fsGroup", "pod", klog.KObj(pod), "volume", vol.Name)
			}
		}
	default:
		var payload map[string]fileProjection
		payload, dueAt, err = m.contents(ctx, pod, vol, state, now)
		if err != nil {
			return &MountError{Volume: vol.Name, Err: err}
		}
		if m.syncPeriod > 0 {
			dueAt = earliest(dueAt, now.Add(m.syncPeriod))
		}
		switch {
		case vol.ConfigMap != nil:
			// On disk, as the kubelet keeps configMap volumes.
			dir = m.volumeDir(pod.UID, pluginConfigMap, vol.Name)
			err = ensureDir(dir, 0o777)
		case vol.Secret != nil:
			dir = m.volumeDir(pod.UID, pluginSecret, vol.Name)
			err = m.ensureTmpfs(dir, 0)
		case vol.DownwardAPI != nil:
			dir = m.volumeDir(pod.UID, pluginDownwardAPI, vol.Name)
			err = m.ensureTmpfs(dir, 0)
		case vol.Projected != nil:
			dir = m.volumeDir(pod.UID, pluginProjected, vol.Name)
			err = m.ensureTmpfs(dir, 0)
		}
		var beforeSwap func() error
		if o := volumeOwnership(pod.Spec.SecurityContext, vol); o != nil {
			payload = ownedPayload(payload, o.readOnly)
			beforeSwap = func() error { return m.changeOwnership(pod, vol.Name, dir, *o) }
		}
		if err == nil {
			var changed bool
			changed, err = writeAtomically(dir, payload, now, beforeSwap)
			if changed {
				m.log.V(2).Info("Wrote volume files", "pod", klog.KObj(pod), "volume", vol.Name, "files", len(payload))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting up volume %q of pod %s: %w", vol.Name, klog.KObj(pod), err)
	}
	if vol.PersistentVolumeClaim == nil && vol.Ephemeral == nil {
		relabel = m.relabelVolume(vol, dir)
	}
	state.path, state.ready, state.dueAt = dir, true, dueAt
	state.usage, state.claim, state.csi, state.relabel = usage, claim, csi, relabel
	return nil
}

// changeOwnership gives the volume at dir to the pod's fsGroup (see
// ownership.go). Files whose group or mode could not be changed are
// logged, as the kubelet logs them; only a walk that could not go on is
// an error.
func (m *Manager) changeOwnership(pod *corev1.Pod, volume, dir string, o ownership) error {
	walked, fileErrs, err := changeOwnership(dir, o)
	if fileErrs != nil {
		m.log.Error(fileErrs, "Failed to change the group or mode of some files of a volume", "pod", klog.KObj(pod), "volume", volume, "fsGroup", o.fsGroup)
	}
	if walked && err == nil {
		m.log.V(2).Info("Changed volume ownership", "pod", klog.KObj(pod), "volume", volume, "fsGroup", o.fsGroup, "readOnly", o.readOnly)
	}
	return err
}

// ensureTmpfs makes dir a tmpfs mount point, unless it already is one
// (SetUpPod again, or after a nodelet restart).
func (m *Manager) ensureTmpfs(dir string, sizeBytes int64) error {
	if err := ensureDir(dir, 0o777); err != nil {
		return err
	}
	mounted, err := isTmpfsMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	if err := mountTmpfs(dir, sizeBytes); err != nil {
		return err
	}
	m.log.V(2).Info("Mounted tmpfs", "path", dir)
	return nil
}

func isDue(dueAt, now time.Time) bool {
	return !dueAt.IsZero() && !now.Before(dueAt)
}

// earliest is the earlier of two times, where zero means never.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
