package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// removePod removes a stopped pod's runtime objects and logs, its cgroup
// and its volumes, in that order: the cgroup only empties once the
// runtime is done, and the volumes go once nothing can use them.
//
// A runtime may refuse to remove a container it reports exited:
// containerd 1.6 keeps the task of a start cut short by a nodelet SIGKILL
// ("failed to get task pid: context canceled", then "cannot delete
// running task"), and stopping the pod does not stop it. Then what is left
// in the pod's cgroup is killed, as the kubelet's cleanup of a pod's
// cgroup kills it, and once the cgroup is gone nothing of the pod runs:
// its volumes go too, and the runtime's refusal comes back as leftovers,
// not err. The Pod need not wait for them, as under the kubelet, whose
// Pod goes once nothing of it runs, its volumes are unmounted and its
// cgroup is gone, and whose garbage collection keeps trying the rest.
func (r *PodReconciler) removePod(ctx context.Context, status *kubecontainer.PodStatus) (leftovers, err error) {
	leftovers = r.Runtime.RemovePod(ctx, status)
	if err := r.Cgroups.RemovePod(status.UID); err != nil {
		return nil, errors.Join(leftovers, fmt.Errorf("removing cgroup of pod %s/%s: %w", status.Namespace, status.Name, err))
	}
	if leftovers != nil && anyContainerRunning(status) {
		// The runtime's record says something runs, though the cgroup
		// is empty: the record is out of date, and is read again first.
		return nil, leftovers
	}
	if err := r.tearDownPodFolder(ctx, status.UID); err != nil {
		return nil, errors.Join(leftovers, fmt.Errorf("removing volumes of pod %s/%s: %w", status.Namespace, status.Name, err))
	}
	return leftovers, nil
}

// anyContainerRunning reports whether the runtime's record of a pod has a
// container running or in an unknown state.
func anyContainerRunning(status *kubecontainer.PodStatus) bool {
	for _, c := range status.Containers {
		if c.State == kubecontainer.ContainerRunning || c.State == kubecontainer.ContainerUnknown {
			return true
		}
	}
	return false
}

// syncTerminatingPod stops a Pod being deleted within its grace period,
// removes all it left on the node, and then deletes the Pod for good.
func (r *PodReconciler) syncTerminatingPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus) (ctrl.Result, error) {
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
	leftovers, err := r.removePod(ctx, status)
	r.releaseRemoval(pod.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	result, err := r.deleteForGood(ctx, pod)
	if err == nil && leftovers != nil {
		// Tried again as an orphan's, now that the Pod is gone.
		delay := r.orphanRemovalFailed(ctx, pod.UID)
		log.Error(leftovers, "Pod deleted with runtime objects the runtime will not remove yet; nothing of it runs", "pod", klog.KObj(pod), "retryIn", delay)
	}
	return result, err
}

// removalUnderWayRetry is how soon a terminating pod whose runtime objects
// another removal is taking looks again: about as long as removing a
// pod's containers takes.
const removalUnderWayRetry = 200 * time.Millisecond
