package main

// Tests of `nodelet-approver check-companions`: the split by the Ready
// condition (pure), and the check against a real API server (envtest,
// package internal/testenv), whose Nodes' status the test writes.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func readyNode(name string, status corev1.ConditionStatus, reason string) corev1.Node {
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if status != "" {
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason, Message: "said " + reason}}
	}
	return node
}

func TestCompanionsReady(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes                  []corev1.Node
		wantReady, wantMissing []string
	}{
		"none": {},
		"every one Ready": {
			nodes:     []corev1.Node{readyNode("b-nodelet", corev1.ConditionTrue, "KubeletReady"), readyNode("a-nodelet", corev1.ConditionTrue, "KubeletReady")},
			wantReady: []string{"a-nodelet", "b-nodelet"},
		},
		"one not Ready, one unknown, one without the condition": {
			nodes: []corev1.Node{
				readyNode("a-nodelet", corev1.ConditionTrue, "KubeletReady"),
				readyNode("b-nodelet", corev1.ConditionFalse, "KubeletNotReady"),
				readyNode("c-nodelet", corev1.ConditionUnknown, "NodeStatusUnknown"),
				readyNode("d-nodelet", "", ""),
			},
			wantReady:   []string{"a-nodelet"},
			wantMissing: []string{"b-nodelet (KubeletNotReady: said KubeletNotReady)", "c-nodelet (NodeStatusUnknown: said NodeStatusUnknown)", "d-nodelet (NoReadyCondition: )"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ready, notReady := companionsReady(tc.nodes)
			if !slices.Equal(ready, tc.wantReady) || !slices.Equal(notReady, tc.wantMissing) {
				t.Errorf("companionsReady = %q, %q; want %q, %q", ready, notReady, tc.wantReady, tc.wantMissing)
			}
		})
	}
}

func TestCheckCompanions(t *testing.T) {
	client, err := kubernetes.NewForConfig(testenv.StartAPIServer(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	opts := checkOptions{nodeSelector: "nodelet.dev/release=companion,nodelet.dev/release-namespace=nodelet-system", timeout: 2 * time.Second}
	check := func() error {
		return checkCompanions(ctx, client, opts, 100*time.Millisecond, testr.New(t))
	}
	if err := check(); err == nil || !strings.Contains(err.Error(), "no companion Node") {
		t.Errorf("with no companion: %v, want an error saying there is none", err)
	}

	release := map[string]string{"nodelet.dev/release": "companion", "nodelet.dev/release-namespace": "nodelet-system", "nodelet.dev/agent": "nodelet"}
	setReady := func(name string, status corev1.ConditionStatus) {
		t.Helper()
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewTime(time.Now())
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test", Message: string(status), LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a-nodelet", "b-nodelet"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: release}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Another release's companion, not Ready, is not this release's concern.
	other := map[string]string{"nodelet.dev/release": "other", "nodelet.dev/release-namespace": "nodelet-system", "nodelet.dev/agent": "nodelet"}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c-nodelet", Labels: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setReady("a-nodelet", corev1.ConditionTrue)
	setReady("b-nodelet", corev1.ConditionFalse)
	if err := check(); err == nil || !strings.Contains(err.Error(), "b-nodelet (Test: False)") || strings.Contains(err.Error(), "a-nodelet") {
		t.Errorf("with b-nodelet not Ready: %v, want an error naming b-nodelet alone", err)
	}

	setReady("b-nodelet", corev1.ConditionTrue)
	if err := check(); err != nil {
		t.Errorf("with every companion Ready: %v", err)
	}
}
