package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// podKill is the kill under way of a pod being deleted: the grace period
// it was started with, and how to interrupt it.
type podKill struct {
	grace  int64
	cancel context.CancelFunc
	// shortened is set when a shorter grace period interrupted it.
	shortened *bool
}

// startKill registers the kill of a pod being deleted and returns its
// context, which ends if the pod's grace period is shortened meanwhile
// (a second delete with a shorter one), and a function that tells whether
// that happened. As in the kubelet, a grace period only ever shrinks, and
// the shorter one wins.
func (r *PodReconciler) startKill(ctx context.Context, pod *corev1.Pod) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	shortened := new(bool)
	r.mu.Lock()
	r.kills[pod.UID] = podKill{grace: podutil.TerminationGracePeriodSeconds(pod), cancel: cancel, shortened: shortened}
	r.mu.Unlock()
	// The cache may have seen the shorter grace period before the kill was
	// registered; its update event then found nothing to interrupt.
	current := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(pod), current); err == nil && current.UID == pod.UID {
		r.shortenKill(current)
	}
	return ctx, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return *shortened
	}
}

// endKill forgets a pod's kill once it returned.
func (r *PodReconciler) endKill(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.kills[uid]; ok {
		k.cancel()
		delete(r.kills, uid)
	}
}

// noticeGracePeriod interrupts a kill whose grace period a Pod update
// shortened.
func (r *PodReconciler) noticeGracePeriod(e event.UpdateEvent) {
	if pod, ok := e.ObjectNew.(*corev1.Pod); ok && pod.DeletionTimestamp != nil {
		r.shortenKill(pod)
	}
}

func (r *PodReconciler) shortenKill(pod *corev1.Pod) {
	if pod.DeletionTimestamp == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.kills[pod.UID]; ok && podutil.TerminationGracePeriodSeconds(pod) < k.grace {
		*k.shortened = true
		k.cancel()
	}
}

// failPod fails a pod that must not run on (it ran past its
// activeDeadlineSeconds): its containers are stopped within its grace
// period, then its status says Failed with the failure's reason.
func (r *PodReconciler) failPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, failure *podstatus.Failure) (ctrl.Result, error) {
	r.Recorder.Eventf(pod, corev1.EventTypeNormal, failure.Reason, "%s", failure.Message)
	if err := r.Runtime.KillPod(ctx, pod, status, nil); err != nil {
		return ctrl.Result{}, fmt.Errorf("stopping pod %s (%s): %w", klog.KObj(pod), failure.Reason, err)
	}
	if _, err := r.report(ctx, pod, status, true, true); err != nil {
		return ctrl.Result{}, err
	}
	// The pod is terminal now; the update of its status brings it back to
	// be torn down.
	return ctrl.Result{}, nil
}

// PodEviction is the eviction manager's order: stop the pod within the
// grace period, then fail it with the failure.
type PodEviction struct {
	Failure            podstatus.Failure
	GracePeriodSeconds int64
}

// eviction is the order to stop a pod of the node's own accord: to make
// room for a critical pod, or the eviction manager's.
func (r *PodReconciler) eviction(uid types.UID) (PodEviction, bool) {
	if p, ok := r.admissions.preemption(uid); ok {
		return p.order, true
	}
	if r.Eviction == nil {
		return PodEviction{}, false
	}
	return r.Eviction(uid)
}

// evictPod carries out an eviction or a preemption: the pod's containers
// are stopped with the order's grace period and its status says Failed
// with the order's reason (Evicted, Preempting). Whoever gave the order has
// recorded the event and the DisruptionTarget condition.
func (r *PodReconciler) evictPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, order PodEviction) (ctrl.Result, error) {
	grace := order.GracePeriodSeconds
	if err := r.Runtime.KillPod(ctx, pod, status, &grace); err != nil {
		return ctrl.Result{}, fmt.Errorf("stopping pod %s (%s): %w", klog.KObj(pod), order.Failure.Reason, err)
	}
	r.markSynced(pod.UID)
	status, err := r.readPodStatus(ctx, pod.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatusFailing(ctx, pod, status, true, &order.Failure); err != nil {
		return ctrl.Result{}, err
	}
	if p, ok := r.admissions.preemption(pod.UID); ok {
		r.preempted(p)
	}
	return ctrl.Result{}, nil
}

// startedSidecar reports whether a sidecar is among the containers a sync
// started.
func startedSidecar(pod *corev1.Pod, started []string) bool {
	for _, name := range started {
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == name && podutil.IsSidecar(&pod.Spec.InitContainers[i]) {
				return true
			}
		}
	}
	return false
}

// deleteForGood deletes the stopped and removed pod from the API server
// with grace 0, only if it is still the pod of this UID.
func (r *PodReconciler) deleteForGood(ctx context.Context, pod *corev1.Pod) (ctrl.Result, error) {
	uid := pod.UID
	err := r.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return ctrl.Result{}, fmt.Errorf("deleting pod %s: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).V(1).Info("Deleted pod", "pod", klog.KObj(pod))
	if err == nil || apierrors.IsNotFound(err) {
		r.deleted.mark(uid, r.Clock.Now())
	}
	r.forget(uid)
	return ctrl.Result{}, nil
}

// deletedPods holds when each pod was deleted for good, until the cache
// has seen it go: a reconcile meanwhile (the PLEG reporting its removal)
// has nothing left to do, and would delete it again.
type deletedPods struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// deletedMemory is how long a pod deleted for good is remembered: far
// longer than a watch takes to tell the cache.
const deletedMemory = 5 * time.Minute

// mark remembers that the pod is deleted for good, forgetting the pods
// deleted longer than deletedMemory ago.
func (d *deletedPods) mark(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[types.UID]time.Time{}
	}
	for other, at := range d.at {
		if now.Sub(at) > deletedMemory {
			delete(d.at, other)
		}
	}
	d.at[uid] = now
}

func (d *deletedPods) has(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.at[uid]
	return ok
}
