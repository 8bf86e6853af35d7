package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/admission"
	"github.com/nodelet/nodelet/podstatus"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// admitPod judges a pod the node has made nothing for yet, once, before
// its cgroup, volumes or sandbox exist. A refused pod gets the kubelet's
// event and ends Failed with the reason and message in its status; the
// status update brings it back as terminal, with nothing to tear down.
func (r *PodReconciler) admitPod(ctx context.Context, pod *corev1.Pod, status *noderuntime.PodStatus) (rejected bool, err error) {
	if r.Admit == nil || admission.WasAdmitted(pod, len(status.Sandboxes)+len(status.Containers) > 0) {
		return false, nil
	}
	result := r.Admit(pod)
	if result.Admit {
		return false, nil
	}
	klog.FromContext(ctx).Info("Rejected pod", "pod", klog.KObj(pod), "reason", result.Reason, "message", result.Message)
	r.Recorder.Eventf(pod, corev1.EventTypeWarning, result.Reason, "%s", result.Message)
	failure := &podstatus.Failure{Reason: result.Reason, Message: result.StatusMessage()}
	return true, r.writeStatusFailing(ctx, pod, status, true, failure)
}
