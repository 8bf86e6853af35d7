package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// podProber runs the pods' probes (package prober). Its results are plain
// values the reconciler hands to ComputePodActions and status generation;
// it learns each pod's state from the status the reconciler generated.
type podProber interface {
	UpdatePod(pod *corev1.Pod, status *corev1.PodStatus)
	RemovePod(uid types.UID)
	CleanupPods(keep map[types.UID]bool)
	Results(uid types.UID) kubecontainer.ProbeResults
	StartedAndReady(pod *corev1.Pod, rt *kubecontainer.PodStatus, results kubecontainer.ProbeResults) (started, ready map[string]bool)
}

// noProbes is the prober of a reconciler given none: no results, every
// running container started and ready.
type noProbes struct{}

func (noProbes) UpdatePod(*corev1.Pod, *corev1.PodStatus)     {}
func (noProbes) RemovePod(types.UID)                          {}
func (noProbes) CleanupPods(map[types.UID]bool)               {}
func (noProbes) Results(types.UID) kubecontainer.ProbeResults { return nil }
func (noProbes) StartedAndReady(*corev1.Pod, *kubecontainer.PodStatus, kubecontainer.ProbeResults) (map[string]bool, map[string]bool) {
	return nil, nil
}

// EnqueuePod has a pod reconciled again soon (PodQueue.Enqueue).
func (r *PodReconciler) EnqueuePod(ctx context.Context, namespace, name string, uid types.UID) {
	r.Queue.Enqueue(ctx, namespace, name, uid)
}
