package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/resources/admission"
)

// preemptionWait is how soon a critical pod waiting for the pods preempted
// for it to stop looks again, if their ends did not bring it back sooner.
const preemptionWait = time.Second

// preemption is the order to stop a pod admission chose to make room for a
// critical pod, and which pod that was.
type preemption struct {
	victim       *corev1.Pod
	order        PodEviction
	preemptor    types.NamespacedName
	preemptorUID types.UID
	// resource is the first resource the critical pod lacked.
	resource corev1.ResourceName
}

// recordPreemptions marks a critical pod's victims as no longer admitted,
// so the pods judged after count them out, and keeps the order to stop
// each. Called with a.mu held.
func (a *admissions) recordPreemptions(critical *corev1.Pod, result admission.Result) []preemption {
	if a.preemptions == nil {
		a.preemptions = map[types.UID]preemption{}
	}
	var made []preemption
	for _, victim := range result.Preempt {
		p := preemption{
			victim: victim,
			order: PodEviction{
				Failure:            podstatus.Failure{Reason: admission.ReasonPreempting, Message: admission.PreemptedMessage},
				GracePeriodSeconds: podutil.TerminationGracePeriodSeconds(victim),
			},
			preemptor:    client.ObjectKeyFromObject(critical),
			preemptorUID: critical.UID,
			resource:     result.PreemptFor,
		}
		a.judged[victim.UID] = admission.Result{Reason: admission.ReasonPreempting, Message: admission.PreemptedMessage}
		a.preemptions[victim.UID] = p
		made = append(made, p)
	}
	return made
}

// preemption is the order to stop uid, if admission preempted it.
func (a *admissions) preemption(uid types.UID) (preemption, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.preemptions[uid]
	return p, ok
}

// victimsOf are the pods preempted for the critical pod uid.
func (a *admissions) victimsOf(uid types.UID) []*corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range a.preemptions {
		if p.preemptorUID == uid {
			out = append(out, p.victim)
		}
	}
	return out
}

// announcePreemptions says, for each pod just preempted, what the kubelet
// says before it stops one: an event on the pod and its DisruptionTarget
// condition; then has it reconciled, which stops it.
func (r *PodReconciler) announcePreemptions(ctx context.Context, made []preemption) {
	log := klog.FromContext(ctx)
	for _, p := range made {
		log.Info("Preempting pod to free up resources", "pod", klog.KObj(p.victim), "podUID", p.victim.UID,
			"insufficientResource", p.resource, "requestingPod", p.preemptor)
		r.Recorder.Eventf(p.victim, corev1.EventTypeWarning, admission.ReasonPreempting, "%s", admission.PreemptedMessage)
		patch, err := podstatus.DisruptionTargetPatch(p.victim, admission.PreemptedDisruptionMessage, r.Clock.Now())
		if err == nil {
			err = r.Client.Status().Patch(ctx, p.victim.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, patch))
		}
		if err != nil {
			log.Error(err, "Failed to set the preempted pod's DisruptionTarget condition", "pod", klog.KObj(p.victim))
		}
		r.Queue.Resync(p.victim.Namespace, p.victim.Name, p.victim.UID)
	}
}

// preempted is told that a preempted pod has stopped: it is counted, and
// the critical pod waiting for it looks again.
func (r *PodReconciler) preempted(p preemption) {
	kubeletmetrics.Preemptions.WithLabelValues(string(p.resource)).Inc()
	r.Queue.Resync(p.preemptor.Namespace, p.preemptor.Name, p.preemptorUID)
}

// waitingForPreemption reports whether a critical pod must wait before it
// starts: a pod preempted for it is still there and not yet stopped. The
// kubelet admits a critical pod only once its victims are killed; nodelet
// has each victim stopped by its own reconcile and has the critical pod
// wait for them here.
func (r *PodReconciler) waitingForPreemption(ctx context.Context, pod *corev1.Pod) (bool, error) {
	for _, preempted := range r.admissions.victimsOf(pod.UID) {
		victim := &corev1.Pod{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(preempted), victim)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading pod %s, preempted for pod %s: %w", klog.KObj(preempted), klog.KObj(pod), err)
		}
		if victim.UID == preempted.UID && !podPhaseTerminal(victim) {
			return true, nil
		}
	}
	return false, nil
}
