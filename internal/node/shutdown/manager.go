package shutdown

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/resources/admission"
)

const (
	// reconnectPeriod is how soon a lost connection to logind is made
	// again, as the kubelet's.
	reconnectPeriod = time.Second
	// pollPeriod is how often a band's pods are looked at while they stop.
	pollPeriod = 200 * time.Millisecond
	// callTimeout bounds each API call.
	callTimeout = 10 * time.Second
)

// Options configure the Manager.
type Options struct {
	// Bands are the shutdown's (Bands); none turns the manager off.
	Bands []Band
	// NodeName is the node's, which its events name.
	NodeName string
	// Connect reaches logind. Default: ConnectLogind(LogindConfDir).
	Connect func() (Logind, error)
	// Enqueue has the pod reconciler look at a pod to stop at once.
	Enqueue func(namespace, name string, uid types.UID)
	// SyncNodeStatus has the node's status written at once, so that it
	// says not ready before the pods stop.
	SyncNodeStatus func()
	Recorder       record.EventRecorder
	Clock          clock.WithTicker
	Log            logr.Logger
}

// Manager is the node's graceful shutdown, a manager.Runnable. The pod
// reconciler carries out its orders (Order) as it carries out the
// eviction manager's: through the pod's own reconcile, preStop hooks
// and all.
type Manager struct {
	client client.Client
	opts   Options

	mu           sync.Mutex
	shuttingDown bool
	orders       map[types.UID]int64

	// lock is the inhibitor lock held; Start's goroutine alone uses it.
	lock *os.File
}

// New returns a manager that lists the node's pods and writes their
// DisruptionTarget condition with c, the manager's client.
func New(c client.Client, opts Options) *Manager {
	if opts.Connect == nil {
		opts.Connect = func() (Logind, error) { return ConnectLogind(LogindConfDir) }
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SyncNodeStatus == nil {
		opts.SyncNodeStatus = func() {}
	}
	return &Manager{client: c, opts: opts, orders: map[types.UID]int64{}}
}

// SetSyncNodeStatus sets Options.SyncNodeStatus, for a reporter made
// after the manager (it reads ShutdownStatus); call before Start.
func (m *Manager) SetSyncNodeStatus(sync func()) { m.opts.SyncNodeStatus = sync }

// NeedLeaderElection is false: every node shuts down on its own.
func (m *Manager) NeedLeaderElection() bool { return false }

// ShutdownStatus says why the node is not ready while it shuts down, in
// the kubelet's words; nil otherwise.
func (m *Manager) ShutdownStatus() error {
	if m.ShuttingDown() {
		return errors.New(messageShuttingDown)
	}
	return nil
}

// ShuttingDown reports whether logind announced a shutdown, not
// cancelled since.
func (m *Manager) ShuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shuttingDown
}

// Admit refuses every pod while the node shuts down, as the kubelet's
// last admit handler.
func (m *Manager) Admit() admission.Result {
	if m.ShuttingDown() {
		return admission.Result{Reason: ReasonNodeShutdown, Message: messageNotAdmitted}
	}
	return admission.Result{Admit: true}
}

// Order is the shutdown's order to stop a pod: the grace period it has.
// Its failure is ReasonTerminated with MessageTerminated.
func (m *Manager) Order(uid types.UID) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	grace, ok := m.orders[uid]
	return grace, ok
}

// Start holds the inhibitor lock and watches for shutdowns until ctx
// ends. Where logind cannot be reached (no systemd, a container without
// the system bus) it says once that graceful shutdown is off and why, and
// nodelet runs on without it, as the kubelet does.
func (m *Manager) Start(ctx context.Context) error {
	log := m.log(ctx)
	if len(m.opts.Bands) == 0 {
		<-ctx.Done()
		return nil
	}
	log.Info("Creating node shutdown manager", "shutdownGracePeriodByPodPriority", m.opts.Bands)
	conn, events, err := m.connect(ctx, log)
	if err != nil {
		log.Info("Graceful node shutdown is off: failed to start the node shutdown manager", "err", err.Error())
		<-ctx.Done()
		return nil
	}
	for {
		m.watch(ctx, log, conn, events)
		conn.Close()
		for {
			select {
			case <-ctx.Done():
				m.release(log)
				return nil
			case <-m.opts.Clock.After(reconnectPeriod):
			}
			log.V(1).Info("Restarting watch for node shutdown events")
			if conn, events, err = m.connect(ctx, log); err == nil {
				break
			}
			log.Error(err, "Unable to watch the node for shutdown events")
		}
	}
}

func (m *Manager) log(ctx context.Context) logr.Logger {
	if m.opts.Log.GetSink() != nil {
		return m.opts.Log
	}
	return klog.FromContext(ctx)
}

// connect reaches logind, makes sure its InhibitDelayMaxSec holds the
// whole shutdown (writing the drop-in and reloading logind if not), takes
// the lock and watches PrepareForShutdown.
func (m *Manager) connect(ctx context.Context, log logr.Logger) (Logind, <-chan bool, error) {
	conn, err := m.opts.Connect()
	if err != nil {
		return nil, nil, err
	}
	if err := m.ensureInhibitDelay(conn, log); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := m.acquire(conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	events, err := conn.WatchShutdown(ctx)
	if err != nil {
		m.release(log)
		conn.Close()
		return nil, nil, err
	}
	return conn, events, nil
}

// ensureInhibitDelay raises logind's InhibitDelayMaxSec to the period
// requested if it is lower, and checks that logind took it, looking five
// times over about three seconds as the kubelet does.
func (m *Manager) ensureInhibitDelay(conn Logind, log logr.Logger) error {
	requested := PeriodRequested(m.opts.Bands)
	current, err := conn.InhibitDelayMax()
	if err != nil {
		return err
	}
	if requested <= current {
		return nil
	}
	if err := conn.OverrideInhibitDelay(requested); err != nil {
		return fmt.Errorf("unable to override inhibit delay by shutdown manager: %w", err)
	}
	if err := conn.ReloadConf(); err != nil {
		return err
	}
	wait := 100 * time.Millisecond
	const attempts = 5
	for attempt := 1; ; attempt++ {
		<-m.opts.Clock.After(wait)
		if current, err = conn.InhibitDelayMax(); err != nil {
			return err
		}
		if requested <= current {
			log.Info("Raised systemd-logind's InhibitDelayMaxSec", "inhibitDelayMax", current)
			return nil
		}
		if attempt == attempts {
			return fmt.Errorf("node shutdown manager was timed out after %d attempts waiting for logind InhibitDelayMaxSec to update to %v (ShutdownGracePeriod), current value is %v", attempt, requested, current)
		}
		wait *= 2
	}
}

// acquire takes a new lock, then lets the old one go, so the node is never
// without one.
func (m *Manager) acquire(conn Logind) error {
	lock, err := conn.Inhibit()
	if err != nil {
		return err
	}
	if m.lock != nil {
		m.lock.Close()
	}
	m.lock = lock
	return nil
}

func (m *Manager) release(log logr.Logger) {
	if m.lock == nil {
		return
	}
	if err := m.lock.Close(); err != nil {
		log.Error(err, "Failed to release the systemd-logind inhibitor lock")
	}
	m.lock = nil
}

// watch acts on logind's announcements until the connection or ctx ends.
func (m *Manager) watch(ctx context.Context, log logr.Logger, conn Logind, events <-chan bool) {
	ref := node.Ref(m.opts.NodeName)
	for {
		var shuttingDown bool
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				log.Info("Ended watching the node for shutdown events")
				return
			}
			shuttingDown = e
		}
		m.mu.Lock()
		m.shuttingDown = shuttingDown
		if !shuttingDown {
			m.orders = map[types.UID]int64{}
		}
		m.mu.Unlock()
		if !shuttingDown {
			log.Info("Shutdown manager detected new shutdown event", "event", "cancelled")
			m.opts.Recorder.Event(ref, corev1.EventTypeNormal, eventShutdown, "Shutdown manager detected shutdown cancellation")
			if err := m.acquire(conn); err != nil {
				log.Error(err, "Failed to take the systemd-logind inhibitor lock again")
			}
			m.opts.SyncNodeStatus()
			continue
		}
		log.Info("Shutdown manager detected new shutdown event", "event", "shutdown")
		m.opts.Recorder.Event(ref, corev1.EventTypeNormal, eventShutdown, "Shutdown manager detected shutdown event")
		m.opts.SyncNodeStatus()
		m.stopPods(ctx, log)
		m.release(log)
		log.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly")
	}
}

// stopPods stops the node's pods band by band, lowest priority first,
// each band's within its time: the next band starts when every pod of
// this one stopped, or its time is up.
func (m *Manager) stopPods(ctx context.Context, log logr.Logger) {
	pods, err := m.activePods(ctx)
	if err != nil {
		log.Error(err, "Shutdown manager failed to list the node's pods; the shutdown goes on without stopping them")
		return
	}
	for _, group := range GroupByPriority(m.opts.Bands, pods) {
		if len(group.Pods) == 0 {
			continue
		}
		for _, pod := range group.Pods {
			m.order(ctx, log, pod, GracePeriod(pod, group.Band))
		}
		if m.waitStopped(ctx, group) {
			log.V(1).Info("Done waiting for all pods in group to terminate", "gracePeriod", group.ShutdownGracePeriodSeconds, "priority", group.Priority)
		} else {
			log.Info("Shutdown manager pod killing time out", "gracePeriod", group.ShutdownGracePeriodSeconds, "priority", group.Priority)
		}
	}
}

// order has the pod reconciler stop a pod with grace seconds: its
// DisruptionTarget condition now, then the stop and its Failed status.
func (m *Manager) order(ctx context.Context, log logr.Logger, pod *corev1.Pod, grace int64) {
	log.V(1).Info("Shutdown manager killing pod with gracePeriod", "pod", klog.KObj(pod), "gracePeriod", grace)
	m.mu.Lock()
	m.orders[pod.UID] = grace
	m.mu.Unlock()
	if err := m.setDisruptionTarget(ctx, pod); err != nil {
		log.Error(err, "Shutdown manager failed to set the pod's DisruptionTarget condition", "pod", klog.KObj(pod))
	}
	if m.opts.Enqueue != nil {
		m.opts.Enqueue(pod.Namespace, pod.Name, pod.UID)
	}
}

func (m *Manager) setDisruptionTarget(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	patch, err := podstatus.DisruptionTargetPatch(pod, MessageTerminated, m.opts.Clock.Now())
	if err != nil {
		return err
	}
	if err := m.client.Status().Patch(ctx, pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("patching the status of pod %s: %w", klog.KObj(pod), err)
	}
	return nil
}

// activePods are the node's pods that have not ended.
func (m *Manager) activePods(ctx context.Context) ([]*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list := &corev1.PodList{}
	if err := m.client.List(ctx, list); err != nil {
		return nil, err
	}
	var active []*corev1.Pod
	for i := range list.Items {
		if !podstatus.IsTerminalPhase(list.Items[i].Status.Phase) {
			active = append(active, &list.Items[i])
		}
	}
	return active, nil
}

// waitStopped waits until every pod of the group ended or is gone, or the
// band's time is up, and says which.
func (m *Manager) waitStopped(ctx context.Context, group Group) bool {
	deadline := m.opts.Clock.NewTimer(time.Duration(group.ShutdownGracePeriodSeconds) * time.Second)
	defer deadline.Stop()
	poll := m.opts.Clock.NewTicker(pollPeriod)
	defer poll.Stop()
	for {
		if m.stopped(ctx, group.Pods) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C():
			return m.stopped(ctx, group.Pods)
		case <-poll.C():
		}
	}
}

func (m *Manager) stopped(ctx context.Context, pods []*corev1.Pod) bool {
	active, err := m.activePods(ctx)
	if err != nil {
		return false
	}
	live := map[types.UID]bool{}
	for _, p := range active {
		live[p.UID] = true
	}
	for _, p := range pods {
		if live[p.UID] {
			return false
		}
	}
	return true
}
