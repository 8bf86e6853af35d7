package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

// removePod removes a stopped pod's runtime objects, logs, volumes and
// cgroup, in that order: the cgroup only empties once the runtime is done.
func (r *PodReconciler) removePod(ctx context.Context, status *noderuntime.PodStatus) error {
	if err := r.Runtime.RemovePod(ctx, status); err != nil {
		// A container the runtime will not remove may still run though
		// the runtime reports it exited: containerd 1.6 leaves a start
		// cut short by a nodelet SIGKILL so ("cannot delete running
		// task"), and stopping the pod does not stop it. The pod is
		// stopped: what is left in its cgroup is killed now, as the
		// kubelet's cleanup of a pod's cgroup kills it, so that the next
		// try removes the container.
		if cgroupErr := r.Cgroups.RemovePod(status.UID); cgroupErr != nil {
			return errors.Join(err, fmt.Errorf("removing cgroup of pod %s/%s: %w", status.Namespace, status.Name, cgroupErr))
		}
		return err
	}
	if err := r.tearDownPodFolder(ctx, status.UID); err != nil {
		return fmt.Errorf("removing volumes of pod %s/%s: %w", status.Namespace, status.Name, err)
	}
	if err := r.Cgroups.RemovePod(status.UID); err != nil {
		return fmt.Errorf("removing cgroup of pod %s/%s: %w", status.Namespace, status.Name, err)
	}
	return nil
}

// syncTerminatingPod stops a Pod being deleted within its grace period,
// removes all it left on the node, and then deletes the Pod for good.
func (r *PodReconciler) syncTerminatingPod(ctx context.Context, pod *corev1.Pod, status *noderuntime.PodStatus) (ctrl.Result, error) {
	log := klog.FromContext(ctx)
	if r.deleted.has(pod.UID) {
		return ctrl.Result{}, nil
	}
	killCtx, shortened := r.startKill(ctx, pod)
	err := r.Runtime.KillPod(killCtx, pod, status, pod.DeletionGracePeriodSeconds)
	r.endKill(pod.UID)
	if shortened() {
		log.V(1).Info("Restarting the pod's termination with its shortened grace period", "pod", klog.KObj(pod))
		return ctrl.Result{RequeueAfter: time.Millisecond}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("killing pod %s: %w", klog.KObj(pod), err)
	}
	if status, err = r.report(ctx, pod, status, true, true); err != nil {
		return ctrl.Result{}, err
	}
	if !r.claimRemoval(pod.UID) {
		// Its removal as an orphan is under way: the next turn finds
		// what that removal left.
		return ctrl.Result{RequeueAfter: removalUnderWayRetry}, nil
	}
	err = r.removePod(ctx, status)
	r.releaseRemoval(pod.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.deleteForGood(ctx, pod)
}

// removalUnderWayRetry is how soon a terminating pod whose runtime objects
// another removal is taking looks again: about as long as removing a
// pod's containers takes.
const removalUnderWayRetry = 200 * time.Millisecond
