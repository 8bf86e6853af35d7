package controllers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// podStartSLIDuration is the kubelet's kubelet_pod_start_sli_duration_seconds
// for nodelet: from the Pod's creation to all of its containers started,
// without the time spent pulling images.
var podStartSLIDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "nodelet_pod_start_sli_duration_seconds",
	Help:    "Duration from pod creation to all containers started, excluding image pull time, for pods nodelet started.",
	Buckets: []float64{0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
})

func init() {
	metrics.Registry.MustRegister(podStartSLIDuration)
}

// podStartTracker observes each pod's start once: only pods whose containers
// this process started (not ones adopted after a restart), once all their
// containers are running.
type podStartTracker struct {
	mu   sync.Mutex
	pods map[types.UID]*podStart
}

type podStart struct {
	imagePullTime time.Duration
	observed      bool
}

func newPodStartTracker() *podStartTracker {
	return &podStartTracker{pods: map[types.UID]*podStart{}}
}

// started records a sync that started containers, and its image pull time.
func (t *podStartTracker) started(uid types.UID, imagePullTime time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pods[uid]
	if p == nil {
		p = &podStart{}
		t.pods[uid] = p
	}
	p.imagePullTime += imagePullTime
}

// observe records the pod's start latency the first time its status shows
// every container running.
func (t *podStartTracker) observe(pod *corev1.Pod, status *corev1.PodStatus, now time.Time) {
	if !allContainersRunning(pod, status) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pods[pod.UID]
	if p == nil || p.observed {
		return
	}
	p.observed = true
	podStartSLIDuration.Observe((now.Sub(pod.CreationTimestamp.Time) - p.imagePullTime).Seconds())
}

func (t *podStartTracker) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
}

func allContainersRunning(pod *corev1.Pod, status *corev1.PodStatus) bool {
	if len(status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}
