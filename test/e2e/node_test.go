package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

var semanticNodeletVersion = regexp.MustCompile(`^v1\.[0-9]+\.[0-9]+\+nodelet\.v0\.[0-9]+\.[0-9]+(\.[0-9a-f]{7,}(-dirty)?)?$`)

func TestNodeReadyWithAddressRuntimeAndRenewedLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting node %s: %v", f.Env.NodeName, err)
	}
	if !nodeReady(node) {
		t.Errorf("node conditions = %v, want Ready=True", nodeConditions(node))
	}
	if hasTaint(node, corev1.TaintNodeNotReady) {
		t.Errorf("node taints = %v, want no %s", nodeTaints(node), corev1.TaintNodeNotReady)
	}
	hasInternalIP := false
	for _, address := range node.Status.Addresses {
		if address.Type == corev1.NodeInternalIP && address.Address == "127.0.0.1" {
			hasInternalIP = true
		}
	}
	if !hasInternalIP {
		t.Errorf("node addresses = %v, want InternalIP 127.0.0.1", node.Status.Addresses)
	}
	// The kubelet's reasons and messages, which dashboards and alerts match.
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && (c.Reason != "KubeletReady" || c.Message != "kubelet is posting ready status") {
			t.Errorf("Ready condition reason %q, message %q; want KubeletReady, %q", c.Reason, c.Message, "kubelet is posting ready status")
		}
		if c.Type == corev1.NodeMemoryPressure && c.Reason != "KubeletHasSufficientMemory" {
			t.Errorf("MemoryPressure condition reason %q, want KubeletHasSufficientMemory", c.Reason)
		}
	}
	// The Kubernetes version nodelet implements, a semantic version with
	// nodelet's own and the commit, when the binary was stamped with one,
	// as build metadata.
	if version := node.Status.NodeInfo.KubeletVersion; !semanticNodeletVersion.MatchString(version) {
		t.Errorf("nodeInfo.kubeletVersion = %q, want v1.x.y+nodelet.v0.x.y[.COMMIT]", version)
	}
	if version := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(version, "containerd://") {
		t.Errorf("nodeInfo.containerRuntimeVersion = %q, want containerd://...", version)
	}

	leases := f.Client.CoordinationV1().Leases("kube-node-lease")
	lease, err := leases.Get(ctx, f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the node's lease: %v", err)
	}
	if lease.Spec.RenewTime == nil {
		t.Fatalf("lease kube-node-lease/%s has no renewTime", lease.Name)
	}
	first := lease.Spec.RenewTime.Time
	// The kubelet renews every quarter of the 40s lease; give it two
	// whole leases.
	await.Eventually(t, 80*time.Second, "the node's lease renewTime to advance past "+first.Format(time.RFC3339Nano), await.Condition(func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(first), nil
	}))
}
