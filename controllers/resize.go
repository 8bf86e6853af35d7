package controllers

// In-place resize: the allocation a running pod has, the judgement of a
// resize its spec asks for, and the PodResizePending and
// PodResizeInProgress conditions and events, as the kubelet's allocation
// and status managers keep them.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/resources/admission"
	"github.com/nodelet/nodelet/internal/resources/allocation"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// ResizeFunc decides whether the node can give a running pod what its
// spec asks (desired) in place of its allocation (allocated), beside the
// other pods at their allocations (package admission's
// Admitter.AdmitResize).
type ResizeFunc func(desired, allocated *corev1.Pod, node *corev1.Node, others []*corev1.Pod) admission.ResizeResult

// The kubelet's events about resizes.
const (
	eventResizeStarted    = "ResizeStarted"
	eventResizeCompleted  = "ResizeCompleted"
	eventResizeError      = "ResizeError"
	eventResizeDeferred   = "ResizeDeferred"
	eventResizeInfeasible = "ResizeInfeasible"
)

// resizeRetryPeriod is how often a pending resize is judged again, the
// kubelet's.
const resizeRetryPeriod = 30 * time.Second

// allocatedPod returns the pod as the node runs it: its spec's resources
// replaced by its allocation. A pod with no allocation yet (just admitted,
// or admitted before allocations were kept) is allocated what its spec
// asks. A spec that asks for other resources is a resize: judged beside
// the other pods; accepted, it becomes the allocation; else it stays
// pending, the pod runs as allocated, and the resize is judged again
// later. Nothing is locked or written when nothing is resized.
func (r *PodReconciler) allocatedPod(ctx context.Context, pod *corev1.Pod, requeue *requeueAfter) (*corev1.Pod, error) {
	if r.Allocations == nil {
		return pod, nil
	}
	r.resizes.backfill(pod)
	allocated, pending, err := r.allocate(ctx, pod)
	if pending {
		requeue.in(r.Clock.Now(), resizeRetryPeriod)
	}
	return allocated, err
}

func (r *PodReconciler) allocate(ctx context.Context, pod *corev1.Pod) (allocated *corev1.Pod, pending bool, err error) {
	a, ok := r.Allocations.Get(pod.UID)
	if !ok {
		if err := r.Allocations.Set(pod.UID, allocation.FromPod(pod)); err != nil {
			return nil, false, fmt.Errorf("recording the allocation of pod %s: %w", klog.KObj(pod), err)
		}
		return pod, false, nil
	}
	allocated, updated := allocation.Apply(pod, a)
	if !updated {
		r.resizes.clearPending(pod.UID)
		return pod, false, nil
	}
	result := admission.ResizeResult{Accepted: true}
	if r.AdmitResize != nil {
		// Judged, and recorded if accepted, under admission's lock.
		if result, err = r.admissions.judgeResize(ctx, pod, allocated, r.admissionReader(), r.AdmitResize); err != nil {
			return nil, false, err
		}
	} else if err := r.Allocations.Set(pod.UID, allocation.FromPod(pod)); err != nil {
		return nil, false, fmt.Errorf("recording the allocation of pod %s: %w", klog.KObj(pod), err)
	}
	if !result.Accepted {
		log := klog.FromContext(ctx)
		if r.resizes.setPending(pod.UID, result.Reason, result.Message, pod.Generation, r.Clock.Now()) {
			log.Info("Resize pending", "pod", klog.KObj(pod), "reason", result.Reason, "message", result.Message)
			event := eventResizeDeferred
			if result.Reason == corev1.PodReasonInfeasible {
				event = eventResizeInfeasible
			}
			r.Recorder.Eventf(pod, corev1.EventTypeWarning, event, "%s",
				resizeMessage(pod, pod.Generation, result.Message, "Pod resize "+result.Reason))
		}
		return allocated, true, nil
	}
	now := r.Clock.Now()
	r.resizes.clearPending(pod.UID)
	r.resizes.clearInProgress(pod.UID)
	r.resizes.setInProgress(pod.UID, "", "", pod.Generation, now)
	r.Recorder.Eventf(pod, corev1.EventTypeNormal, eventResizeStarted, "%s", resizeMessage(pod, pod.Generation, "", "Pod resize started"))
	return pod, false, nil
}

// observeResize sets PodResizeInProgress while a running container has
// other resources than the allocation, and clears it, with the kubelet's
// ResizeCompleted event, once none has.
func (r *PodReconciler) observeResize(pod *corev1.Pod, status *kubecontainer.PodStatus) {
	if r.Allocations == nil {
		return
	}
	if noderuntime.ResizeInProgress(pod, status) {
		r.resizes.setInProgress(pod.UID, "", "", pod.Generation, r.Clock.Now())
	} else if generation, cleared := r.resizes.clearInProgress(pod.UID); cleared {
		r.Recorder.Eventf(pod, corev1.EventTypeNormal, eventResizeCompleted, "%s", resizeMessage(pod, generation, "", "Pod resize completed"))
	}
}

// resized follows a sync that resized the pod: a failure marks the resize
// in progress as failed, with the kubelet's ResizeError event the first
// time; else the next look finds the resize applied and says so.
func (r *PodReconciler) resized(pod *corev1.Pod, actions noderuntime.PodActions, result noderuntime.SyncResult, requeue *requeueAfter) {
	err := result.ResizeErr
	if err == nil {
		if actions.UpdatePodResources || len(actions.ContainersToUpdate) > 0 {
			requeue.in(r.Clock.Now(), 0)
		}
		return
	}
	if generation, updated := r.resizes.setInProgress(pod.UID, corev1.PodReasonError, err.Error(), pod.Generation, r.Clock.Now()); updated {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, eventResizeError, "%s", resizeMessage(pod, generation, err.Error(), "Pod resize error"))
	}
}

// forgetAllocation drops a removed pod's allocation.
func (r *PodReconciler) forgetAllocation(uid types.UID) {
	if r.Allocations == nil {
		return
	}
	if err := r.Allocations.Remove(func(other types.UID) bool { return other != uid }); err != nil {
		klog.Background().Error(err, "Failed to forget the allocation of a removed pod", "podUID", uid)
	}
}

// AllocatedPods are the pods that have an allocation; none when nodelet
// keeps no allocations.
func (r *PodReconciler) AllocatedPods() []types.UID {
	if r.Allocations == nil {
		return nil
	}
	return r.Allocations.UIDs()
}

// ForgetAllocations drops the allocations of pods that are gone, in one
// write (housekeeping finds them).
func (r *PodReconciler) ForgetAllocations(gone map[types.UID]bool) error {
	if r.Allocations == nil {
		return nil
	}
	return r.Allocations.Remove(func(uid types.UID) bool { return !gone[uid] })
}

// judgeResize decides a resize under admission's lock, beside the other
// admitted pods at their allocations, and records an accepted one as the
// pod's allocation before the lock is let go: a resize or an admission
// judged meanwhile would otherwise count the old allocation, and two of
// them could overcommit the node, as the kubelet's one allocation lock
// prevents.
func (a *admissions) judgeResize(ctx context.Context, desired, allocated *corev1.Pod, read admissionReader, decide ResizeFunc) (admission.ResizeResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	all, err := read.pods(ctx)
	if err != nil {
		return admission.ResizeResult{}, err
	}
	node, err := read.node(ctx)
	if err != nil {
		return admission.ResizeResult{}, err
	}
	var others []*corev1.Pod
	for _, p := range all {
		if p.UID == desired.UID || podPhaseTerminal(p) {
			continue
		}
		if r, ok := a.judged[p.UID]; (ok && r.Admit) || (!ok && admission.WasAdmitted(p, false)) {
			others = append(others, a.allocatedOf(p))
		}
	}
	result := decide(desired, allocated, node, others)
	if result.Accepted && a.allocations != nil {
		if err := a.allocations.Set(desired.UID, allocation.FromPod(desired)); err != nil {
			return admission.ResizeResult{}, fmt.Errorf("recording the allocation of pod %s: %w", klog.KObj(desired), err)
		}
	}
	return result, nil
}

// resizeConditions holds each pod's PodResizePending and
// PodResizeInProgress conditions, as the kubelet's status manager keeps
// them; a pod first seen after a restart starts with those its status has.
type resizeConditions struct {
	mu   sync.Mutex
	pods map[types.UID]*podResize
}

type podResize struct {
	pending, inProgress *corev1.PodCondition
}

func (c *resizeConditions) get(uid types.UID) *podResize {
	if c.pods == nil {
		c.pods = map[types.UID]*podResize{}
	}
	p := c.pods[uid]
	if p == nil {
		p = &podResize{}
		c.pods[uid] = p
	}
	return p
}

// backfill takes the conditions a pod's status has the first time the pod
// is seen.
func (c *resizeConditions) backfill(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.pods[pod.UID]; seen {
		return
	}
	p := c.get(pod.UID)
	for i := range pod.Status.Conditions {
		cond := pod.Status.Conditions[i]
		switch cond.Type {
		case corev1.PodResizePending:
			p.pending = &cond
		case corev1.PodResizeInProgress:
			p.inProgress = &cond
		}
	}
}

// setPending reports whether the reason or generation changed; any reason
// but Infeasible is Deferred, as the kubelet's.
func (c *resizeConditions) setPending(uid types.UID, reason, message string, generation int64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reason != corev1.PodReasonInfeasible {
		reason = corev1.PodReasonDeferred
	}
	p := c.get(uid)
	previous := p.pending
	p.pending = resizeCondition(corev1.PodResizePending, previous, reason, message, generation, now)
	return previous == nil || previous.Reason != reason || previous.ObservedGeneration != generation
}

// setInProgress keeps the condition's generation, and its reason and
// message unless new ones are given; it reports the generation and
// whether the condition changed.
func (c *resizeConditions) setInProgress(uid types.UID, reason, message string, generation int64, now time.Time) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.get(uid)
	previous := p.inProgress
	if previous != nil {
		if reason == "" && message == "" {
			reason, message = previous.Reason, previous.Message
		}
		generation = previous.ObservedGeneration
	}
	p.inProgress = resizeCondition(corev1.PodResizeInProgress, previous, reason, message, generation, now)
	changed := previous == nil || previous.Reason != reason || previous.Message != message
	return generation, changed
}

func (c *resizeConditions) clearPending(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pods[uid]; p != nil {
		p.pending = nil
	}
}

// clearInProgress reports the cleared condition's generation.
func (c *resizeConditions) clearInProgress(uid types.UID) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pods[uid]
	if p == nil || p.inProgress == nil {
		return 0, false
	}
	generation := p.inProgress.ObservedGeneration
	p.inProgress = nil
	return generation, true
}

// list is the pod's resize conditions; none for a terminal pod.
func (c *resizeConditions) list(uid types.UID, terminal bool) []corev1.PodCondition {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pods[uid]
	if p == nil {
		return nil
	}
	if terminal {
		p.pending, p.inProgress = nil, nil
	}
	var out []corev1.PodCondition
	for _, cond := range []*corev1.PodCondition{p.pending, p.inProgress} {
		if cond != nil {
			out = append(out, *cond)
		}
	}
	return out
}

func (c *resizeConditions) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// resizeCondition is a condition of type t, True. Its transition time is
// the previous one's while the reason stays, as the kubelet's; so is its
// probe time while nothing changes, which spares a status write per look
// at a resize still pending.
func resizeCondition(t corev1.PodConditionType, previous *corev1.PodCondition, reason, message string, generation int64, now time.Time) *corev1.PodCondition {
	at := metav1.NewTime(now.Truncate(time.Second).UTC())
	cond := &corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: generation, LastProbeTime: at, LastTransitionTime: at}
	if previous != nil && previous.Reason == reason {
		cond.LastTransitionTime = previous.LastTransitionTime
		if previous.Message == message && previous.ObservedGeneration == generation {
			cond.LastProbeTime = previous.LastProbeTime
		}
	}
	return cond
}

// resizeMessage is the kubelet's resize event message: its words, then
// the resources the pod's containers ask for, as JSON.
func resizeMessage(pod *corev1.Pod, generation int64, errorMessage, prefix string) string {
	type containerResources struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []containerResources `json:"initContainers,omitempty"`
		Containers     []containerResources `json:"containers,omitempty"`
		Generation     int64                `json:"generation"`
		Error          string               `json:"error,omitempty"`
	}{Generation: generation, Error: errorMessage}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, containerResources{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, containerResources{Name: c.Name, Resources: c.Resources})
	}
	data, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(data)
}
