package node

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func TestNodeStatusPatch(t *testing.T) {
	base := readyNodeStatus(nodeT0, nodeT0)
	tests := map[string]func(*corev1.NodeStatus){
		"nothing changed": func(*corev1.NodeStatus) {},
		"the Ready condition changed": func(s *corev1.NodeStatus) {
			ready := findNodeCondition(s, corev1.NodeReady)
			ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, "KubeletNotReady", "container runtime is down"
		},
		"a second InternalIP was added (addresses share their merge key)": func(s *corev1.NodeStatus) {
			s.Addresses = []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
				{Type: corev1.NodeInternalIP, Address: "fd00::7"},
				{Type: corev1.NodeHostName, Address: "node-a"},
			}
		},
		"an InternalIP was replaced": func(s *corev1.NodeStatus) {
			s.Addresses[0].Address = "10.0.0.9"
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			wanted := *base.DeepCopy()
			mutate(&wanted)
			patch, err := nodeStatusPatch(base, wanted)
			if err != nil {
				t.Fatalf("nodeStatusPatch() error = %v", err)
			}
			from, err := json.Marshal(corev1.Node{Status: base})
			if err != nil {
				t.Fatal(err)
			}
			patched, err := strategicpatch.StrategicMergePatch(from, patch, corev1.Node{})
			if err != nil {
				t.Fatalf("applying patch %s: %v", patch, err)
			}
			var got corev1.Node
			if err := json.Unmarshal(patched, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wanted, got.Status, nodeQuantityEqual); diff != "" {
				t.Errorf("patch %s gives (-want +got):\n%s", patch, diff)
			}
		})
	}
}
