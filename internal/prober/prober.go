// Package prober runs the liveness, readiness and startup probes of the
// pods on this node, as the kubelet's prober does: one worker per probe of
// each container (regular containers and sidecars), probing through CRI
// ExecSync, HTTP GET, a TCP connect or a gRPC health check, with the
// kubelet's defaults, initial results and thresholds.
//
// Results are kept in memory by pod UID and container instance, and are a
// plain value for whoever reads them (kubecontainer.ProbeResults): the pod
// reconciler passes them to ComputePodActions (liveness and startup
// failures restart containers) and to status generation (started and
// ready). A result that changes calls OnChange, which requeues the pod at
// once.
//
// Workers learn what they probe from the status the reconciler last
// generated for the pod (UpdatePod): container IDs, running state and start
// time, whether the container has started, the pod's IP.
package prober

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/action"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// probeType is which of a container's probes a worker runs.
type probeType int

const (
	liveness probeType = iota
	readiness
	startup
)

// String names the probe as the kubelet's events do ("Readiness probe
// failed: ...").
func (t probeType) String() string {
	switch t {
	case liveness:
		return "Liveness"
	case readiness:
		return "Readiness"
	default:
		return "Startup"
	}
}

// Options configure a Manager.
type Options struct {
	// Runner runs exec probes in containers: the runtime's ExecRunner,
	// whose timeouts are action.ErrCommandTimedOut.
	Runner action.CommandRunner
	// Recorder records the Unhealthy and ProbeWarning events.
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Log      logr.Logger
	// OnChange is called (from a worker's goroutine) when a result of the
	// pod changes, to have the pod reconciled again.
	OnChange func(ctx context.Context, namespace, name string, uid types.UID)
}

// Manager owns the probe workers and their results.
type Manager struct {
	opts Options
	// started is when the manager was made: containers that were already
	// running well before it (nodelet restarted) keep the state their
	// status showed until a probe says otherwise.
	started   time.Time
	transport *http.Transport

	// ctx ends every worker when the manager stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	pods    map[types.UID]*podEntry
	workers map[workerKey]*worker
	results map[types.UID]kubecontainer.ProbeResults
}

// podEntry is what workers know of a pod: its spec and the status last
// generated for it.
type podEntry struct {
	pod    *corev1.Pod
	status *corev1.PodStatus
}

type workerKey struct {
	uid       types.UID
	container string
	probeType probeType
}

// NewManager returns a Manager; its workers run until Stop, or until the
// context given to Start ends.
func NewManager(opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.OnChange == nil {
		opts.OnChange = func(context.Context, string, string, types.UID) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		opts:      opts,
		started:   opts.Clock.Now(),
		transport: action.NewHTTPTransport(),
		ctx:       ctx,
		cancel:    cancel,
		pods:      map[types.UID]*podEntry{},
		workers:   map[workerKey]*worker{},
		results:   map[types.UID]kubecontainer.ProbeResults{},
	}
}

// Start waits until ctx ends, then stops every worker. It implements
// manager.Runnable.
func (m *Manager) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-m.ctx.Done():
	}
	m.Stop()
	return nil
}

// NeedLeaderElection is false: every node probes its own pods.
func (m *Manager) NeedLeaderElection() bool { return false }

// Stop ends every worker.
func (m *Manager) Stop() {
	m.cancel()
}

// UpdatePod hands the prober a pod and the status just generated for it,
// and starts the workers of its probes if they do not run yet. A pod that
// is done (Succeeded or Failed) gets no new workers; its workers end.
func (m *Manager) UpdatePod(pod *corev1.Pod, status *corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	m.pods[pod.UID] = &podEntry{pod: pod, status: status}
	if status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed {
		return
	}
	for _, c := range probedContainers(pod) {
		for _, t := range []probeType{startup, readiness, liveness} {
			spec := probeOf(c.container, t)
			if spec == nil {
				continue
			}
			key := workerKey{uid: pod.UID, container: c.container.Name, probeType: t}
			w, ok := m.workers[key]
			if !ok {
				if pod.DeletionTimestamp != nil && t != readiness {
					// A pod being deleted is no longer restarted for its
					// probes.
					continue
				}
				w = newWorker(m, pod, c.container, c.sidecar, t, spec)
				m.workers[key] = w
				go w.run(m.ctx)
				continue
			}
			// A container that is not ready is probed now rather than at
			// the next tick, as the kubelet does, so that a pod turns
			// Ready as soon as it is.
			if t == readiness && !m.readyLocked(pod.UID, status, c.container.Name) {
				w.trigger()
			}
		}
	}
}

// RemovePod stops the pod's workers and forgets its results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.uid == uid {
			w.stop()
			delete(m.workers, key)
		}
	}
	delete(m.pods, uid)
	delete(m.results, uid)
}

// CleanupPods removes every pod but those in keep: the safety net for pods
// that left without nodelet seeing them go.
func (m *Manager) CleanupPods(keep map[types.UID]bool) {
	m.mu.Lock()
	var gone []types.UID
	for uid := range m.pods {
		if !keep[uid] {
			gone = append(gone, uid)
		}
	}
	m.mu.Unlock()
	for _, uid := range gone {
		m.RemovePod(uid)
	}
}

// Results returns a copy of the pod's probe results.
func (m *Manager) Results(uid types.UID) kubecontainer.ProbeResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(kubecontainer.ProbeResults, len(m.results[uid]))
	for id, r := range m.results[uid] {
		out[id] = r
	}
	return out
}

// StartedAndReady gives the started and ready flags of the pod's running
// containers that have startup or readiness probes, from the results given
// (which the caller read with Results).
func (m *Manager) StartedAndReady(pod *corev1.Pod, rt *kubecontainer.PodStatus, results kubecontainer.ProbeResults) (started, ready map[string]bool) {
	return StartedAndReady(pod, rt, results, m.started)
}

// set records a worker's result for one container instance, and calls
// OnChange if it changed. ProbeUnknown clears the result.
func (m *Manager) set(pod *corev1.Pod, id kubecontainer.ContainerID, t probeType, result kubecontainer.ProbeResult) {
	m.mu.Lock()
	if _, live := m.pods[pod.UID]; !live {
		// Removed meanwhile: a late result must not bring it back.
		m.mu.Unlock()
		return
	}
	results := m.results[pod.UID]
	if results == nil {
		results = kubecontainer.ProbeResults{}
		m.results[pod.UID] = results
	}
	entry := results[id]
	field := resultField(&entry, t)
	changed := *field != result
	*field = result
	if entry == (kubecontainer.ContainerProbeResults{}) {
		delete(results, id)
	} else {
		results[id] = entry
	}
	m.mu.Unlock()
	if changed {
		m.opts.OnChange(m.ctx, pod.Namespace, pod.Name, pod.UID)
	}
}

func resultField(r *kubecontainer.ContainerProbeResults, t probeType) *kubecontainer.ProbeResult {
	switch t {
	case liveness:
		return &r.Liveness
	case readiness:
		return &r.Readiness
	default:
		return &r.Startup
	}
}

// snapshot is the pod and status a worker probes against.
func (m *Manager) snapshot(uid types.UID) (*corev1.Pod, *corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	entry, ok := m.pods[uid]
	if !ok {
		return nil, nil, false
	}
	return entry.pod, entry.status, true
}

// removeWorker forgets a worker that ended on its own.
func (m *Manager) removeWorker(key workerKey, w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[key] == w {
		delete(m.workers, key)
	}
}

// readyLocked reports whether the named container's current instance has
// passed its readiness probe (or does not run, so that there is nothing to
// probe).
func (m *Manager) readyLocked(uid types.UID, status *corev1.PodStatus, name string) bool {
	cs := containerStatus(status, name)
	if cs == nil || cs.State.Running == nil {
		return true
	}
	return m.results[uid][kubecontainer.ParseContainerID(cs.ContainerID)].Readiness == kubecontainer.ProbeSuccess
}

// probedContainer is a container whose probes the prober runs.
type probedContainer struct {
	container *corev1.Container
	sidecar   bool
}

// probedContainers are the pod's regular containers and its sidecars;
// other init containers and ephemeral containers have no probes.
func probedContainers(pod *corev1.Pod) []probedContainer {
	var out []probedContainer
	for i := range pod.Spec.Containers {
		out = append(out, probedContainer{container: &pod.Spec.Containers[i]})
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podutil.IsSidecar(c) {
			out = append(out, probedContainer{container: c, sidecar: true})
		}
	}
	return out
}

func probeOf(c *corev1.Container, t probeType) *corev1.Probe {
	switch t {
	case liveness:
		return c.LivenessProbe
	case readiness:
		return c.ReadinessProbe
	default:
		return c.StartupProbe
	}
}

// containerStatus finds a container's status among the regular and the
// init containers' (the first with a container ID).
func containerStatus(status *corev1.PodStatus, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name && list[i].ContainerID != "" {
				return &list[i]
			}
		}
	}
	return nil
}
