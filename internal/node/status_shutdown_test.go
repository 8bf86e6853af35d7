package node

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeShuttingDownIsNotReady(t *testing.T) {
	now := nodeT0.Add(10 * time.Second)
	rt := readyRuntimeState(now)
	rt.shutdownError = errors.New("node is shutting down")
	node := &corev1.Node{Status: readyNodeStatus(nodeT0, nodeT0)}
	status, changed := nodeStatus(node, nodeTestFacts(), rt, now, time.Hour)
	ready := findNodeCondition(&status, corev1.NodeReady)
	if !changed || ready.Status != corev1.ConditionFalse || ready.Reason != "KubeletNotReady" || ready.Message != "node is shutting down" {
		t.Errorf("Ready while shutting down = %+v (changed %t), want False, the kubelet's KubeletNotReady and %q", ready, changed, "node is shutting down")
	}
	if !ready.LastTransitionTime.Time.Equal(now) {
		t.Errorf("Ready's transition at %v, want now", ready.LastTransitionTime)
	}
}

func TestRebooted(t *testing.T) {
	for _, tc := range []struct {
		node, machine string
		want          bool
	}{{"", "b", false}, {"b", "b", false}, {"a", "b", true}} {
		if got := Rebooted(tc.node, tc.machine); got != tc.want {
			t.Errorf("Rebooted(%q, %q) = %t, want %t", tc.node, tc.machine, got, tc.want)
		}
	}
}
