package podstatus

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Merge applies the status invariants against what the API server
// has, so that nothing nodelet writes moves backwards:
//   - a terminal phase never changes (with its reason and message);
//   - the phase's reason and message are kept while the phase is unchanged;
//   - a terminated container instance never turns back into a waiting or
//     running one, and restart counts never decrease;
//   - conditions nodelet does not own (readiness gates', DisruptionTarget,
//     ...) are kept as they are, before nodelet's own; a condition keeps its
//     lastTransitionTime while its status is unchanged;
//   - a terminal pod is never Ready;
//   - startTime, qosClass, nominatedNodeName, resize and resource claim
//     statuses are kept.
//
// It is idempotent: merging a merged status again changes nothing.
func Merge(old corev1.PodStatus, generated corev1.PodStatus) corev1.PodStatus {
	s := *generated.DeepCopy()

	if IsTerminalPhase(old.Phase) {
		s.Phase = old.Phase
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
	}

	s.InitContainerStatuses = mergeContainerStatuses(old.InitContainerStatuses, s.InitContainerStatuses)
	s.ContainerStatuses = mergeContainerStatuses(old.ContainerStatuses, s.ContainerStatuses)
	s.EphemeralContainerStatuses = mergeContainerStatuses(old.EphemeralContainerStatuses, s.EphemeralContainerStatuses)

	s.Conditions = mergeConditions(old.Conditions, s.Conditions)
	if IsTerminalPhase(s.Phase) && (conditionTrue(s.Conditions, corev1.PodReady) || conditionTrue(s.Conditions, corev1.ContainersReady)) {
		reason := reasonPodCompleted
		if s.Phase == corev1.PodFailed {
			reason = reasonPodFailed
		}
		for i := range s.Conditions {
			c := &s.Conditions[i]
			if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.Reason, c.Message = corev1.ConditionFalse, reason, ""
			}
		}
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if prev := findCondition(old.Conditions, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}

	if old.StartTime != nil && !old.StartTime.IsZero() {
		s.StartTime = old.StartTime.DeepCopy()
	}
	if old.ObservedGeneration > s.ObservedGeneration {
		s.ObservedGeneration = old.ObservedGeneration
	}
	if s.HostIP == "" {
		s.HostIP, s.HostIPs = old.HostIP, old.HostIPs
	}
	if old.QOSClass != "" {
		s.QOSClass = old.QOSClass
	}
	s.NominatedNodeName = old.NominatedNodeName
	s.Resize = old.Resize
	s.ResourceClaimStatuses = old.ResourceClaimStatuses
	s.ExtendedResourceClaimStatus = old.ExtendedResourceClaimStatus
	s.NodeAllocatableResourceClaimStatuses = old.NodeAllocatableResourceClaimStatuses
	return *s.DeepCopy()
}

// Equal compares two statuses as the API server stores them: times
// to the second, nil and empty alike, conditions in any order. An unchanged
// status is then not patched again.
func Equal(a, b corev1.PodStatus) bool {
	a, b = normalizedStatus(a), normalizedStatus(b)
	for _, conditions := range [][]corev1.PodCondition{a.Conditions, b.Conditions} {
		sort.SliceStable(conditions, func(i, j int) bool { return conditions[i].Type < conditions[j].Type })
	}
	return equality.Semantic.DeepEqual(a, b)
}

// mergeContainerStatuses keeps restart counts from decreasing and a
// terminated container instance from being shown as anything else.
func mergeContainerStatuses(old, generated []corev1.ContainerStatus) []corev1.ContainerStatus {
	for i := range generated {
		status := &generated[i]
		prev := findContainerStatus(old, status.Name)
		if prev == nil {
			continue
		}
		if prev.State.Terminated != nil && !showsTerminatedInstance(status, prev) {
			*status = *prev.DeepCopy()
		}
		if prev.RestartCount > status.RestartCount {
			status.RestartCount = prev.RestartCount
		}
	}
	return generated
}

// showsTerminatedInstance reports whether a status still accounts for the
// terminated instance prev showed: as its state, as its last state, or by
// showing a newer instance.
func showsTerminatedInstance(status, prev *corev1.ContainerStatus) bool {
	if status.State.Terminated != nil {
		return true
	}
	id := prev.State.Terminated.ContainerID
	if id == "" {
		id = prev.ContainerID
	}
	if last := status.LastTerminationState.Terminated; last != nil && last.ContainerID == id && id != "" {
		return true
	}
	return status.ContainerID != "" && status.ContainerID != id
}

// ownedConditions are the pod conditions nodelet (like the kubelet) sets;
// all others belong to someone else and are kept as they are.
var ownedConditions = map[corev1.PodConditionType]bool{
	corev1.PodScheduled:              true,
	corev1.PodReady:                  true,
	corev1.PodInitialized:            true,
	corev1.ContainersReady:           true,
	corev1.PodReadyToStartContainers: true,
	corev1.PodResizePending:          true,
	corev1.PodResizeInProgress:       true,
	corev1.AllContainersRestarting:   true,
}

// mergeConditions keeps the conditions others own, first and in their
// order, replaced by a generated one of the same type if there is one;
// then the generated ones. One condition of each type is kept, the first.
func mergeConditions(old, generated []corev1.PodCondition) []corev1.PodCondition {
	conditions := make([]corev1.PodCondition, 0, len(old)+len(generated))
	seen := map[corev1.PodConditionType]bool{}
	for _, c := range old {
		if ownedConditions[c.Type] || seen[c.Type] {
			continue
		}
		seen[c.Type] = true
		if g := findCondition(generated, c.Type); g != nil {
			c = *g
		}
		conditions = append(conditions, c)
	}
	for _, c := range generated {
		if !seen[c.Type] {
			seen[c.Type] = true
			conditions = append(conditions, c)
		}
	}
	if len(conditions) == 0 {
		return nil
	}
	return conditions
}

// normalizedStatus is a copy of a status with every time cut to the second,
// as the API server stores it.
func normalizedStatus(s corev1.PodStatus) corev1.PodStatus {
	s = *s.DeepCopy()
	second := func(t *metav1.Time) { *t = apiTime(t.Time) }
	if s.StartTime != nil {
		second(s.StartTime)
	}
	for i := range s.Conditions {
		second(&s.Conditions[i].LastProbeTime)
		second(&s.Conditions[i].LastTransitionTime)
	}
	state := func(st *corev1.ContainerState) {
		if st.Running != nil {
			second(&st.Running.StartedAt)
		}
		if st.Terminated != nil {
			second(&st.Terminated.StartedAt)
			second(&st.Terminated.FinishedAt)
		}
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	return s
}
