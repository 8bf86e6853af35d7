package node

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestConditionEventsOncePerChangedCondition(t *testing.T) {
	healthy := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
	}
	with := func(t corev1.NodeConditionType, s corev1.ConditionStatus) []corev1.NodeCondition {
		out := slices.Clone(healthy)
		for i := range out {
			if out[i].Type == t {
				out[i].Status = s
			}
		}
		return out
	}
	for name, tc := range map[string]struct {
		before, after []corev1.NodeCondition
		want          []string
	}{
		"registered: every condition is new": {
			before: nil, after: healthy,
			want: []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"},
		},
		"nothing changed":      {before: healthy, after: healthy},
		"disk pressure begins": {before: healthy, after: with(corev1.NodeDiskPressure, corev1.ConditionTrue), want: []string{"NodeHasDiskPressure"}},
		"memory pressure ends": {before: with(corev1.NodeMemoryPressure, corev1.ConditionTrue), after: healthy, want: []string{"NodeHasSufficientMemory"}},
		"PID pressure begins":  {before: healthy, after: with(corev1.NodePIDPressure, corev1.ConditionTrue), want: []string{"NodeHasInsufficientPID"}},
		"not ready":            {before: healthy, after: with(corev1.NodeReady, corev1.ConditionFalse), want: []string{"NodeNotReady"}},
		// The node lifecycle controller set Unknown while nodelet was
		// away; nodelet's next status is a change.
		"ready again after Unknown": {before: with(corev1.NodeReady, corev1.ConditionUnknown), after: healthy, want: []string{"NodeReady"}},
		"a condition nodelet does not set is left alone": {
			before: nil, after: []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse}},
		},
	} {
		if got := conditionEvents(tc.before, tc.after); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
