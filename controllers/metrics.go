package controllers

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// podStartTracker observes each pod's start once: only pods whose containers
// this process started (not ones adopted after a restart), once all their
// containers are running.
type podStartTracker struct {
	mu   sync.Mutex
	pods map[types.UID]*podStart
}

type podStart struct {
	// firstSeen is when this process first synced the pod, for
	// kubelet_pod_start_duration_seconds.
	firstSeen     time.Time
	startedHere   bool
	imagePullTime time.Duration
	observed      bool
	runObserved   bool
}

func newPodStartTracker() *podStartTracker {
	return &podStartTracker{pods: map[types.UID]*podStart{}}
}

// seen records the first time this process synced the pod.
func (t *podStartTracker) seen(uid types.UID, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pods[uid] == nil {
		t.pods[uid] = &podStart{firstSeen: now}
	}
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
	p.startedHere = true
	p.imagePullTime += imagePullTime
}

// observe records, for a pod whose containers this process started, the
// time from its first sync to its phase Running (the kubelet's
// pod_start_duration), and its start latency the first time its status
// shows every container running (pod_start_sli_duration).
func (t *podStartTracker) observe(pod *corev1.Pod, status *corev1.PodStatus, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pods[pod.UID]
	if p == nil || !p.startedHere {
		return
	}
	if !p.runObserved && !p.firstSeen.IsZero() && status.Phase == corev1.PodRunning {
		p.runObserved = true
		kubeletmetrics.PodStartDuration.Observe(now.Sub(p.firstSeen).Seconds())
	}
	if p.observed || !allContainersRunning(pod, status) {
		return
	}
	p.observed = true
	kubeletmetrics.PodStartSLIDuration.WithLabelValues().Observe((now.Sub(pod.CreationTimestamp.Time) - p.imagePullTime).Seconds())
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

// podWorkerOperation is the operation_type of
// kubelet_pod_worker_duration_seconds for one sync of the pod: kill for a
// pod being deleted, terminated for one that has finished, create before
// it has a sandbox, sync otherwise.
func podWorkerOperation(pod *corev1.Pod, status *kubecontainer.PodStatus) string {
	switch {
	case pod.DeletionTimestamp != nil:
		return kubeletmetrics.OperationKill
	case podIsTerminal(pod, status):
		return kubeletmetrics.OperationTerminated
	case len(status.Sandboxes) == 0:
		return kubeletmetrics.OperationCreate
	default:
		return kubeletmetrics.OperationSync
	}
}
