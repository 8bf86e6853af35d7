package controllers

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelet/nodelet/internal/pod/podstart"
)

// reasonSlowPodStart is the event of a pod whose start took longer than
// the reconciler's SlowPodStartThreshold.
const reasonSlowPodStart = "SlowPodStart"

// podStartStepSeconds is nodelet's own: no kubelet metric says where a
// start's time goes.
var podStartStepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "nodelet_pod_start_step_seconds",
	Help:    "Time from a pod's creation to the end of each step of its start, for the pods whose sandbox this nodelet made; per-container steps are observed once per container.",
	Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 300, 600},
}, []string{"step"})

func init() {
	metrics.Registry.MustRegister(podStartStepSeconds)
}

// startBreakdowns keeps the trace of every pod start under way in this
// process: only starts it sees from the beginning (no sandbox yet), so a
// pod adopted after a restart or a sandbox made again is not told as a
// start.
type startBreakdowns struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// traces holds the starts under way; told says which were told, so a
	// pod Ready again later is not told twice.
	traces map[types.UID]*podstart.Trace
	told   map[types.UID]bool
}

func newStartBreakdowns(clk clock.PassiveClock) *startBreakdowns {
	return &startBreakdowns{clock: clk, traces: map[types.UID]*podstart.Trace{}, told: map[types.UID]bool{}}
}

// traced marks the pod seen and returns ctx carrying its marker, when this
// sync may be part of its start.
func (s *startBreakdowns) traced(ctx context.Context, pod *corev1.Pod, hasRuntimeState bool) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	trace := s.traces[pod.UID]
	if trace == nil {
		if s.told[pod.UID] || hasRuntimeState || len(pod.Status.ContainerStatuses) > 0 {
			return ctx
		}
		trace = &podstart.Trace{Created: pod.CreationTimestamp.Time}
		s.traces[pod.UID] = trace
	}
	trace.Mark(podstart.StepSeen, "", s.clock.Now())
	return podstart.WithMarker(ctx, func(step podstart.Step, container string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		trace.Mark(step, container, s.clock.Now())
	})
}

// written takes a status the API server holds since writtenAt: when it
// shows the pod Ready (found at readyAt), the start it traced is over,
// and its breakdown is returned, once.
func (s *startBreakdowns) written(pod *corev1.Pod, status *corev1.PodStatus, readyAt, writtenAt time.Time) (podstart.Breakdown, bool) {
	if !podReady(status) {
		return podstart.Breakdown{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	trace := s.traces[pod.UID]
	if trace == nil || !trace.Has(podstart.StepSandboxCreated) {
		return podstart.Breakdown{}, false
	}
	trace.Mark(podstart.StepReady, "", readyAt)
	trace.Mark(podstart.StepStatusWritten, "", writtenAt)
	delete(s.traces, pod.UID)
	s.told[pod.UID] = true
	return trace.Breakdown(), true
}

func (s *startBreakdowns) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.traces, uid)
	delete(s.told, uid)
}

// tellStart says where a start's time went: one log line, the steps'
// histogram, and an event naming the slowest step when the whole start
// took longer than the threshold.
func (r *PodReconciler) tellStart(ctx context.Context, pod *corev1.Pod, b podstart.Breakdown) {
	for _, p := range b.Phases {
		podStartStepSeconds.WithLabelValues(string(p.Step)).Observe(p.Since.Seconds())
	}
	slowest, _ := b.Slowest()
	klog.FromContext(ctx).Info("Pod started", "pod", klog.KObj(pod), "total", b.Total.Round(time.Millisecond).String(),
		"slowestStep", slowest.Name(), "steps", b.String())
	if r.SlowPodStartThreshold > 0 && b.Total > r.SlowPodStartThreshold {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, reasonSlowPodStart,
			"Pod took %s from creation to Ready, over %s; the slowest step was %s (%s); steps: %s",
			b.Total.Round(time.Millisecond), r.SlowPodStartThreshold, slowest.Name(), slowest.Took.Round(time.Millisecond), b.String())
	}
}

func podReady(status *corev1.PodStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
