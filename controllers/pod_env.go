package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/pod/podutil"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// gatherEnv reads, only when containers are about to start, what they start
// with: the ConfigMaps and Secrets their env names, the Services, the
// node's allocatable and the pull secrets. It reports whether a read failed
// for another reason than the object's absence; the containers that need
// it then fail with the API server's error, and the pod is tried again
// soon rather than after the usual retry period.
func (r *PodReconciler) gatherEnv(ctx context.Context, pod *corev1.Pod, actions noderuntime.PodActions, env *noderuntime.PodEnv) (retrySoon bool) {
	var starting []*corev1.Container
	for _, plan := range actions.InitContainersToStart {
		starting = append(starting, &pod.Spec.InitContainers[plan.Index])
	}
	for _, plan := range actions.ContainersToStart {
		starting = append(starting, &pod.Spec.Containers[plan.Index])
	}
	if len(starting) == 0 || r.EnvSources == nil {
		return false
	}
	if podutil.IsStaticPod(pod) && !r.apiSynced() {
		// As the kubelet: a static pod does not wait for the Services
		// (it may reference nothing else of the API server).
		return false
	}
	if err := r.EnvSources.Gather(ctx, pod, starting, &env.EnvSources); err != nil {
		klog.FromContext(ctx).Info("Failed to read what the pod's containers start with", "pod", klog.KObj(pod), "err", err.Error())
		return true
	}
	r.mu.Lock()
	delete(r.envFailures, pod.UID)
	r.mu.Unlock()
	return false
}
