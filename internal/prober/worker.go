package prober

import (
	"context"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// restartGrace is how long before the prober started a container must have
// started to count as one that ran before nodelet did: its ready and
// started state then stays as its status showed until probed again, so
// that restarting nodelet does not flip Ready pods to not ready.
const restartGrace = 10 * time.Second

// worker runs one probe of one container, every periodSeconds, until the
// pod is done or removed.
type worker struct {
	m         *Manager
	key       workerKey
	pod       *corev1.Pod
	container *corev1.Container
	sidecar   bool
	probeType probeType
	spec      corev1.Probe
	// initial is the result of a new container instance before its first
	// probe: readiness fails, liveness succeeds, startup is unknown.
	initial kubecontainer.ProbeResult

	stopCh    chan struct{}
	triggerCh chan struct{}

	// Touched only by the worker's goroutine.
	containerID kubecontainer.ContainerID
	lastResult  kubecontainer.ProbeResult
	resultRun   int
	// onHold stops probing until a new instance: after a liveness failure
	// (the container is being restarted) or a startup verdict.
	onHold bool
}

func newWorker(m *Manager, pod *corev1.Pod, container *corev1.Container, sidecar bool, t probeType, spec *corev1.Probe) *worker {
	w := &worker{
		m:         m,
		key:       workerKey{uid: pod.UID, container: container.Name, probeType: t},
		pod:       pod,
		container: container,
		sidecar:   sidecar,
		probeType: t,
		spec:      withDefaults(*spec),
		stopCh:    make(chan struct{}),
		triggerCh: make(chan struct{}, 1),
	}
	switch t {
	case readiness:
		w.initial = kubecontainer.ProbeFailure
	case liveness:
		w.initial = kubecontainer.ProbeSuccess
	default:
		w.initial = kubecontainer.ProbeUnknown
	}
	return w
}

// withDefaults fills what the API server defaults, for probes that did not
// come through it.
func withDefaults(p corev1.Probe) corev1.Probe {
	if p.TimeoutSeconds <= 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds <= 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold <= 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold <= 0 {
		p.FailureThreshold = 3
	}
	return p
}

// stop ends the worker; it may be called more than once.
func (w *worker) stop() {
	select {
	case <-w.stopCh:
	default:
		close(w.stopCh)
	}
}

// trigger asks for a probe now rather than at the next tick.
func (w *worker) trigger() {
	select {
	case w.triggerCh <- struct{}{}:
	default:
	}
}

// run probes until the worker is stopped, the pod is done, or ctx ends.
func (w *worker) run(ctx context.Context) {
	clk := w.m.opts.Clock
	period := time.Duration(w.spec.PeriodSeconds) * time.Second
	// Right after nodelet starts, every worker starts at once: spread their
	// first probes over a period.
	if clk.Since(w.m.started) < period {
		select {
		case <-clk.After(time.Duration(rand.Int64N(int64(period)))):
		case <-w.stopCh:
			return
		case <-ctx.Done():
			return
		}
	}
	ticker := clk.NewTicker(period)
	defer func() {
		ticker.Stop()
		w.deleteMetrics()
		if w.containerID.ID != "" {
			w.m.set(w.pod, w.containerID, w.probeType, kubecontainer.ProbeUnknown)
		}
		w.m.removeWorker(w.key, w)
	}()
	for w.doProbe(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-w.stopCh:
			return
		case <-ticker.C():
		case <-w.triggerCh:
		}
	}
}

// doProbe probes once against the pod's latest status, records the
// result, and reports whether the worker should go on.
func (w *worker) doProbe(ctx context.Context) bool {
	log := w.m.opts.Log
	pod, status, ok := w.m.snapshot(w.pod.UID)
	if !ok {
		return true
	}
	if status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed {
		return false
	}
	c := containerStatus(status, w.container.Name)
	if c == nil {
		// Not created yet.
		return true
	}

	if id := kubecontainer.ParseContainerID(c.ContainerID); id != w.containerID {
		if w.containerID.ID != "" {
			w.m.set(pod, w.containerID, w.probeType, kubecontainer.ProbeUnknown)
		}
		w.containerID = id
		// A container that ran before nodelet started keeps its state until
		// probed; a sidecar that had started stays started, so that the
		// containers after it are not held back.
		ranBefore := c.State.Running != nil && c.State.Running.StartedAt.Time.Before(w.m.started.Add(-restartGrace))
		switch {
		case ranBefore && w.sidecar && w.probeType == startup && c.Started != nil && *c.Started:
			w.m.set(pod, id, w.probeType, kubecontainer.ProbeSuccess)
		case !ranBefore:
			w.m.set(pod, id, w.probeType, w.initial)
		}
		w.lastResult, w.resultRun, w.onHold = kubecontainer.ProbeUnknown, 0, false
	}
	if w.onHold {
		return true
	}

	if c.State.Running == nil {
		w.m.set(pod, w.containerID, w.probeType, kubecontainer.ProbeFailure)
		// Go on only for a container that will run again.
		return c.State.Terminated == nil || w.sidecar || podutil.ContainerShouldRestart(w.container, &pod.Spec, c.State.Terminated.ExitCode)
	}
	if pod.DeletionTimestamp != nil && w.probeType != readiness {
		// A pod being deleted is not restarted for its probes: leave it
		// healthy and stop.
		w.m.set(pod, w.containerID, w.probeType, kubecontainer.ProbeSuccess)
		return false
	}
	now := w.m.opts.Clock.Now()
	if int32(now.Sub(c.State.Running.StartedAt.Time).Seconds()) < w.spec.InitialDelaySeconds {
		return true
	}
	started := c.Started != nil && *c.Started
	if started == (w.probeType == startup) {
		// The startup probe runs until the container has started; the
		// other probes only after that.
		return true
	}

	probeStart := w.m.opts.Clock.Now()
	result, err := w.m.probe(ctx, w.probeType, &w.spec, pod, status, w.container, w.containerID)
	if err != nil {
		// The probe could not be run: no verdict either way.
		log.V(1).Info("Probe errored", "probeType", w.probeType.String(), "pod", klog.KObj(pod), "container", w.container.Name, "err", err.Error())
		return true
	}
	w.recordMetrics(result, w.m.opts.Clock.Since(probeStart))
	if result == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if (result == kubecontainer.ProbeFailure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == kubecontainer.ProbeSuccess && w.resultRun < int(w.spec.SuccessThreshold)) {
		return true
	}
	w.m.set(pod, w.containerID, w.probeType, result)
	if (w.probeType == liveness && result == kubecontainer.ProbeFailure) || w.probeType == startup {
		// The container is restarted for a liveness failure, and a startup
		// probe has said its last word: wait for the next instance.
		w.onHold, w.resultRun = true, 0
	}
	return true
}

// recordMetrics counts a probe's result and times it, in the kubelet's
// prober_probe_total and prober_probe_duration_seconds (which, as the
// kubelet's, times only successful and unknown results).
func (w *worker) recordMetrics(result kubecontainer.ProbeResult, took time.Duration) {
	label := kubeletmetrics.ProbeResultUnknown
	switch result {
	case kubecontainer.ProbeSuccess:
		label = kubeletmetrics.ProbeResultSuccessful
	case kubecontainer.ProbeFailure:
		label = kubeletmetrics.ProbeResultFailed
	}
	kubeletmetrics.ProberResults.WithLabelValues(w.probeType.String(), label, w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID)).Inc()
	if result != kubecontainer.ProbeFailure {
		kubeletmetrics.ProberDuration.WithLabelValues(w.probeType.String(), w.container.Name, w.pod.Name, w.pod.Namespace).Observe(took.Seconds())
	}
}

// deleteMetrics drops the worker's series once it stops, as the kubelet
// does, so that pods gone long ago do not stay in the metrics.
func (w *worker) deleteMetrics() {
	for _, result := range []string{kubeletmetrics.ProbeResultSuccessful, kubeletmetrics.ProbeResultFailed, kubeletmetrics.ProbeResultUnknown} {
		kubeletmetrics.ProberResults.DeleteLabelValues(w.probeType.String(), result, w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID))
	}
	kubeletmetrics.ProberDuration.DeleteLabelValues(w.probeType.String(), w.container.Name, w.pod.Name, w.pod.Namespace)
}
