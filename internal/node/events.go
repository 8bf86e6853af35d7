package node

import (
	corev1 "k8s.io/api/core/v1"
)

// conditionEventReasons are the kubelet's event reasons for each
// condition nodelet sets, by the condition's new status: what `kubectl
// describe node` lists under Events when one changes.
var conditionEventReasons = []struct {
	condition      corev1.NodeConditionType
	ifTrue, ifElse string
}{
	{corev1.NodeMemoryPressure, "NodeHasInsufficientMemory", "NodeHasSufficientMemory"},
	{corev1.NodeDiskPressure, "NodeHasDiskPressure", "NodeHasNoDiskPressure"},
	{corev1.NodePIDPressure, "NodeHasInsufficientPID", "NodeHasSufficientPID"},
	{corev1.NodeReady, "NodeReady", "NodeNotReady"},
}

// conditionEvents are the reasons of the events due when the Node's
// conditions go from before to after, once per condition whose status
// changed; a condition new to the Node counts as changed (the kubelet's
// first status after registering reports them all).
func conditionEvents(before, after []corev1.NodeCondition) []string {
	var reasons []string
	for _, c := range conditionEventReasons {
		now := findCondition(after, c.condition)
		if now == nil {
			continue
		}
		if was := findCondition(before, c.condition); was != nil && was.Status == now.Status {
			continue
		}
		if now.Status == corev1.ConditionTrue {
			reasons = append(reasons, c.ifTrue)
		} else {
			reasons = append(reasons, c.ifElse)
		}
	}
	return reasons
}

func findCondition(conditions []corev1.NodeCondition, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// recordConditionEvents records the events conditionEvents finds, with
// the kubelet's message.
func (r *NodeStatusReporter) recordConditionEvents(before, after []corev1.NodeCondition) {
	if r.opts.Recorder == nil {
		return
	}
	for _, reason := range conditionEvents(before, after) {
		r.opts.Recorder.Eventf(Ref(r.opts.NodeName), corev1.EventTypeNormal, reason, "Node %s status is now: %s", r.opts.NodeName, reason)
	}
}
