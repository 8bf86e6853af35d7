package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// progressDelay is how long a pod's first start may take before its
// status shows that it is starting. A pod that starts within it gets one
// status write, the final one; a slower one (a long pull, a busy runtime)
// shows Pending with its containers waiting in ContainerCreating (or
// PodInitializing) and PodReadyToStartContainers False meanwhile, as the
// kubelet's first status write does, so `kubectl get pods -w` shows it.
const progressDelay = time.Second

// progressReport writes the status of a pod whose first start is under
// way once progressDelay has passed, unless stopped before.
type progressReport struct {
	stopCh chan struct{}
	done   chan struct{}
	// written is what the report wrote, set before done is closed.
	written *corev1.PodStatus
}

// reportProgressAfterDelay arms the progress report of a pod whose status
// shows none of its containers yet; nil (a report that never writes) for
// the others, whose status already shows them.
func (r *PodReconciler) reportProgressAfterDelay(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus) *progressReport {
	if len(pod.Status.ContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0 {
		return nil
	}
	p := &progressReport{stopCh: make(chan struct{}), done: make(chan struct{})}
	// The sync goes on with pod; the report works on its own copy.
	pod = pod.DeepCopy()
	go func() {
		defer close(p.done)
		select {
		case <-p.stopCh:
			return
		case <-ctx.Done():
			return
		case <-r.Clock.After(progressDelay):
		}
		merged := r.generateStatus(pod, status, false, nil, r.Clock.Now())
		_, written, err := r.patchStatus(ctx, pod, merged)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to report a starting pod's progress", "pod", klog.KObj(pod))
			return
		}
		if written {
			p.written = &merged
		}
	}()
	return p
}

// stopInto stops the report, waiting for a write under way, and gives pod
// the status it wrote, if any, so that the sync's final status is patched
// against what the API server now holds. Safe to call more than once.
func (p *progressReport) stopInto(pod *corev1.Pod) {
	if p == nil {
		return
	}
	select {
	case <-p.stopCh:
	default:
		close(p.stopCh)
	}
	<-p.done
	if p.written != nil {
		pod.Status = *p.written
		p.written = nil
	}
}
