package e2e

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Serial: the pod in the critical pod's way fills what memory the node has
// left, so no other pod may come or go meanwhile. The stack's add-ons are
// critical themselves, and a critical pod never preempts those.
func TestCriticalPodPreemptsThePodInItsWay(t *testing.T) {
	ns := f.NewNamespace(t)
	allocatable := f.node(t).Status.Allocatable[corev1.ResourceMemory]
	free := allocatable.Value() - f.activeMemoryRequests(t)
	filler := f.createPod(t, newPod(ns, "in-the-way").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(free, resource.BinarySI)}
	}).obj())
	f.waitForPod(t, filler, podStartTimeout, "to be Running and Ready", runningAndReady)

	// Half of the filler's memory: only the filler can free it.
	critical := f.createPod(t, newPod(ns, "critical").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.PriorityClassName = "system-cluster-critical"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(free/2, resource.BinarySI)}
	}).obj())

	preempted := f.waitForPod(t, filler, podStartTimeout, "to be preempted", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	if preempted.Status.Reason != "Preempting" || preempted.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("preempted pod: reason %q, message %q; want the kubelet's Preempting, %q", preempted.Status.Reason, preempted.Status.Message, "Preempted in order to admit critical pod")
	}
	if !slices.ContainsFunc(preempted.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonTerminationByKubelet
	}) {
		t.Errorf("preempted pod has no DisruptionTarget condition by the kubelet: %+v", preempted.Status.Conditions)
	}
	for _, s := range preempted.Status.ContainerStatuses {
		if s.State.Terminated == nil {
			t.Errorf("preempted pod's container %s is not terminated: %+v", s.Name, s.State)
		}
	}
	f.waitForEvent(t, filler, "Preempting", "Preempted in order to admit critical pod", podStartTimeout)
	f.waitForPod(t, critical, podStartTimeout, "to be Running and Ready", runningAndReady)
}
