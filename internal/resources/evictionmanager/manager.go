// Package evictionmanager is the kubelet's eviction manager at the edge:
// every period it reads the node's memory, disk and PID signals and the
// pods' usage, lets package eviction decide, reports the pressure
// conditions the Node shows, reclaims dead containers and unused images
// under disk pressure, and orders one pod at a time evicted: the pod
// reconciler stops it and fails it with reason Evicted.
package evictionmanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/eviction"
)

// DefaultPeriod is how often the signals are read: the kubelet's
// housekeeping interval.
const DefaultPeriod = 10 * time.Second

// podCleanupTimeout is how long an ordered eviction holds back the next
// one (beyond the pod's grace period), as the kubelet waits for an evicted
// pod's cleanup before evicting another.
const podCleanupTimeout = 30 * time.Second

// callTimeout bounds each pass's calls.
const callTimeout = 10 * time.Second

// ImageReclaimer frees the image file system before pods are evicted for
// disk; imagegc.Manager has it.
type ImageReclaimer interface {
	DeleteUnusedImages(ctx context.Context) error
}

// ContainerReclaimer removes dead containers and sandboxes before images
// are removed and pods evicted for disk, saying how many it removed;
// controllers.ContainerGC has it.
type ContainerReclaimer interface {
	DeleteAllUnusedContainers(ctx context.Context) (int, error)
}

// Options configure the Manager.
type Options struct {
	Config eviction.Config
	// NodeName is the Node the threshold events are on.
	NodeName string
	// MemoryCapacityBytes is the node's memory capacity.
	MemoryCapacityBytes int64
	// Cgroups are the mounted cgroup hierarchies; memory.available is
	// read from the root of the memory one, or from MemoryCgroup in it.
	Cgroups []cgroups.Hierarchy
	// MemoryCgroup is the cgroup that holds the whole node, whose working
	// set memory.available is measured on. Default: the root. A companion
	// node's is its DaemonSet pod's: MemoryCapacityBytes is then that
	// pod's share, and the host's other processes are not its own.
	MemoryCgroup string
	// RootDir is nodelet's state folder; its file system is nodefs.
	RootDir string
	// NodeFsShareBytes, when positive, is the node's ephemeral storage,
	// a share of nodefs (a companion node's DaemonSet pod's): nodefs.available
	// is then that share less the pods' use (eviction.NodeFsShare), so
	// its thresholds are of the share. Measuring the pods' use needs
	// LocalStorage.
	NodeFsShareBytes int64
	// PIDCgroupDir, when set, is the folder, in the pids hierarchy, of
	// the cgroup that holds the whole node and limits its tasks to MaxPID
	// (a companion node's DaemonSet pod's): pid.available is then MaxPID
	// less the tasks in it.
	PIDCgroupDir string
	MaxPID       int64
	// Period is how often the signals are read. Default: DefaultPeriod.
	Period time.Duration
	// Containers, when set, is asked to remove dead containers before
	// pods are evicted for disk pressure, and before Images.
	Containers ContainerReclaimer
	// Images, when set, is asked to free space before pods are evicted
	// for disk pressure.
	Images ImageReclaimer
	// LocalStorage, when set, measures a pod's logs and local volumes
	// (LocalStorageMeter.Measure): they count in its disk usage, and the
	// pods' local storage limits are enforced.
	LocalStorage func(pod *corev1.Pod) (eviction.LocalStorage, error)
	// Enqueue has the reconciler look at an evicted pod at once.
	Enqueue  func(namespace, name string, uid types.UID)
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Log      logr.Logger
}

// Order is an eviction the manager decided: the pod reconciler stops the
// pod within GracePeriodSeconds and fails it with Reason and Message.
type Order struct {
	Reason             string
	Message            string
	GracePeriodSeconds int64
	// signal is what the pod was evicted for: the threshold's signal,
	// or the local storage limit it went over.
	signal eviction.Signal
	at     time.Time
	pod    types.NamespacedName
	// withoutCondition: no DisruptionTarget condition, as the kubelet
	// sets none for a pod over its own local storage limits (a Job's
	// podFailurePolicy then counts the failure as the pod's own).
	withoutCondition bool
}

// Manager is the eviction manager, a manager.Runnable.
type Manager struct {
	client  client.Client
	stats   StatsService
	imageFs ImageFsService
	opts    Options
	host    host

	mu     sync.Mutex
	state  eviction.State
	orders map[types.UID]Order
}

// New returns a manager that lists pods and writes their status with c.
func New(c client.Client, stats StatsService, imageFs ImageFsService, opts Options) *Manager {
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	h := host{procDir: "/proc"}
	h.memoryCgroup, h.memoryUnified = memoryRoot(opts.Cgroups, opts.MemoryCgroup)
	return &Manager{client: c, stats: stats, imageFs: imageFs, opts: opts, host: h, orders: map[types.UID]Order{}}
}

// NeedLeaderElection is false: every node runs its own.
func (m *Manager) NeedLeaderElection() bool { return false }

// Start reads the signals every period until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	if len(m.opts.Config.Thresholds) == 0 && m.opts.LocalStorage == nil {
		<-ctx.Done()
		return nil
	}
	ticker := m.opts.Clock.NewTicker(m.opts.Period)
	defer ticker.Stop()
	for {
		m.synchronize(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// PressureConditions are the node's pressure conditions to report true.
func (m *Manager) PressureConditions() []corev1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]corev1.NodeConditionType(nil), m.state.NodeConditions...)
}

// Eviction is the eviction ordered for a pod, if any.
func (m *Manager) Eviction(uid types.UID) (Order, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[uid]
	return o, ok
}

// observe reads the node's signals; active are the pods that use the
// node, whose use a share of nodefs is measured from.
func (m *Manager) observe(ctx context.Context, now time.Time, active []*corev1.Pod) eviction.Observations {
	log := m.opts.Log
	obs := eviction.Observations{}
	if o, err := m.host.memoryAvailable(m.opts.MemoryCapacityBytes, now); err != nil {
		log.Error(err, "Eviction manager: failed to observe memory")
	} else {
		obs[eviction.SignalMemoryAvailable] = o
	}
	if err := fsObservations(m.opts.RootDir, eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree, now, obs); err != nil {
		log.Error(err, "Eviction manager: failed to observe nodefs")
	} else if m.opts.NodeFsShareBytes > 0 {
		if usage, err := m.podUsage(ctx, active, true); err != nil {
			log.Error(err, "Eviction manager: failed to observe the pods' use of the node's share of nodefs")
			delete(obs, eviction.SignalNodeFsAvailable)
		} else {
			obs[eviction.SignalNodeFsAvailable] = eviction.NodeFsShare(obs[eviction.SignalNodeFsAvailable], m.opts.NodeFsShareBytes, eviction.PodsEphemeralStorage(usage))
		}
	}
	if m.imageFs != nil {
		mp, err := imageFsMountpoint(ctx, m.imageFs)
		if err == nil {
			err = fsObservations(mp, eviction.SignalImageFsAvailable, eviction.SignalImageFsInodesFree, now, obs)
		}
		if err != nil {
			log.Error(err, "Eviction manager: failed to observe imagefs")
		}
	}
	if m.opts.PIDCgroupDir != "" {
		if current, err := readPidsCurrent(m.opts.PIDCgroupDir); err != nil {
			log.Error(err, "Eviction manager: failed to observe PIDs")
		} else {
			obs[eviction.SignalPIDAvailable] = eviction.PIDShare(m.opts.MaxPID, current, now)
		}
	} else if o, err := m.host.pidAvailable(now); err != nil {
		log.Error(err, "Eviction manager: failed to observe PIDs")
	} else {
		obs[eviction.SignalPIDAvailable] = o
	}
	return obs
}

// synchronize is one pass: observe, decide, and evict at most one pod.
func (m *Manager) synchronize(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	log := m.opts.Log
	now := m.opts.Clock.Now()
	// The pods first: a share of nodefs is measured from their use.
	pods := &corev1.PodList{}
	if err := m.client.List(ctx, pods); err != nil {
		log.Error(err, "Eviction manager: failed to list pods")
		return
	}
	var active []*corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		active = append(active, pod)
	}
	obs := m.observe(ctx, now, active)

	m.mu.Lock()
	state, act := eviction.Synchronize(m.opts.Config, m.state, obs, now)
	m.state = state
	m.mu.Unlock()

	if m.pruneOrders(pods.Items, now) {
		log.V(2).Info("Eviction manager: an evicted pod is still being cleaned up")
		return
	}
	if m.localStorageEviction(ctx, active, now) {
		return
	}
	if len(act) == 0 {
		return
	}
	threshold := act[0]
	resourceToReclaim := eviction.Resource(threshold.Signal)
	log.Info("Eviction manager: attempting to reclaim", "resourceName", resourceToReclaim)
	m.opts.Recorder.Eventf(m.nodeRef(), corev1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", resourceToReclaim)

	if m.reclaimNodeLevelResources(ctx, threshold, func() eviction.Observations { return m.observe(ctx, m.opts.Clock.Now(), active) }) {
		return
	}

	if len(active) == 0 {
		log.Error(nil, "Eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return
	}
	usage, err := m.podUsage(ctx, active, resourceToReclaim != corev1.ResourceMemory && threshold.Signal != eviction.SignalPIDAvailable)
	if err != nil {
		log.Error(err, "Eviction manager: failed to read the pods' usage")
		return
	}
	eviction.Rank(threshold.Signal, active, usage)
	log.Info("Eviction manager: pods ranked for eviction", "pods", klog.KObjSlice(active))
	for _, pod := range active {
		if !eviction.Evictable(pod) {
			log.Error(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod))
			continue
		}
		message := eviction.Message(resourceToReclaim, pod, usage, act, obs)
		m.evict(ctx, pod, Order{
			Reason:             eviction.Reason,
			Message:            message,
			GracePeriodSeconds: eviction.GracePeriodSeconds(threshold, pod, m.opts.Config.MaxPodGracePeriodSeconds),
			signal:             threshold.Signal,
			at:                 now,
			pod:                types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		})
		return
	}
	log.Info("Eviction manager: unable to evict any pods from the node")
}

// reclaimNodeLevelResources frees disk without evicting a pod, as the
// kubelet's eviction manager does first: dead containers, then unused
// images (a dead container's image is in use until the container goes).
// It says whether the round is to end without an eviction: when the
// threshold is no longer met once observed again, or when containers
// were removed, since the runtime frees their writable layers later, in
// its own garbage collection; the next round observes what that freed
// before any pod is evicted.
func (m *Manager) reclaimNodeLevelResources(ctx context.Context, threshold eviction.Threshold, observe func() eviction.Observations) bool {
	log := m.opts.Log
	resourceToReclaim := eviction.Resource(threshold.Signal)
	if resourceToReclaim == corev1.ResourceMemory || threshold.Signal == eviction.SignalPIDAvailable {
		return false
	}
	if m.opts.Containers == nil && m.opts.Images == nil {
		return false
	}
	removed := 0
	if m.opts.Containers != nil {
		var err error
		if removed, err = m.opts.Containers.DeleteAllUnusedContainers(ctx); err != nil {
			log.Error(err, "Eviction manager: failed to delete dead containers")
		}
	}
	if m.opts.Images != nil {
		if err := m.opts.Images.DeleteUnusedImages(ctx); err != nil {
			log.Error(err, "Eviction manager: failed to delete unused images")
		}
	}
	if removed > 0 {
		log.Info("Eviction manager: removed dead containers; observing again next round before evicting pods", "resourceName", resourceToReclaim, "removed", removed)
		return true
	}
	if len(eviction.ThresholdsMet([]eviction.Threshold{threshold}, observe(), true)) == 0 {
		log.Info("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", resourceToReclaim)
		return true
	}
	return false
}

// evict orders the pod evicted: the event and (unless the order says
// otherwise) the DisruptionTarget condition now, the stop and the Failed
// status by the reconciler.
func (m *Manager) evict(ctx context.Context, pod *corev1.Pod, order Order) {
	log := m.opts.Log
	m.opts.Recorder.Eventf(pod, corev1.EventTypeWarning, eviction.Reason, "%s", order.Message)
	log.Info("Evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "message", order.Message)
	m.mu.Lock()
	m.orders[pod.UID] = order
	m.mu.Unlock()
	kubeletmetrics.Evictions.WithLabelValues(string(order.signal)).Inc()
	if !order.withoutCondition {
		if err := m.setDisruptionTarget(ctx, pod, order.Message); err != nil {
			log.Error(err, "Eviction manager: failed to set the pod's DisruptionTarget condition", "pod", klog.KObj(pod))
		}
	}
	if m.opts.Enqueue != nil {
		m.opts.Enqueue(pod.Namespace, pod.Name, pod.UID)
	}
}

// setDisruptionTarget adds the kubelet's DisruptionTarget condition; the
// reconciler's status writes keep it, a condition it does not own.
func (m *Manager) setDisruptionTarget(ctx context.Context, pod *corev1.Pod, message string) error {
	patch, err := podstatus.DisruptionTargetPatch(pod, message, m.opts.Clock.Now())
	if err != nil {
		return err
	}
	if err := m.client.Status().Patch(ctx, pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("patching the status of pod %s: %w", klog.KObj(pod), err)
	}
	return nil
}

// pruneOrders forgets the orders whose pods are gone or done, and says
// whether one is still under way within its cleanup time, which holds the
// next eviction back.
func (m *Manager) pruneOrders(pods []corev1.Pod, now time.Time) bool {
	live := map[types.UID]bool{}
	for i := range pods {
		if p := &pods[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live[p.UID] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pending := false
	for uid, o := range m.orders {
		if !live[uid] {
			delete(m.orders, uid)
			continue
		}
		if now.Sub(o.at) < podCleanupTimeout+time.Duration(o.GracePeriodSeconds)*time.Second {
			pending = true
		}
	}
	return pending
}

func (m *Manager) nodeRef() *corev1.ObjectReference { return node.Ref(m.opts.NodeName) }
