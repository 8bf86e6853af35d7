package hollow

// A hollow node against a real API server (envtest: kube-apiserver and
// etcd, no controller-manager or scheduler), over the CRI fake it is built
// on: it registers its Node, renews its Lease, and runs a pod bound to it
// to Running and Ready with an IP of its fake range, with events.

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func TestHollowNodeRunsAPodToReady(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	clientset := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	const nodeName = "hollow-0"
	podCIDR := netip.MustParsePrefix("10.128.16.0/20")
	mgr, err := New(ctx, Options{
		NodeName:  nodeName,
		Config:    cfg,
		StateDir:  t.TempDir(),
		PodCIDR:   podCIDR,
		MilliCPUs: 2000,
		MaxPods:   30,
		// A cluster's DNS, as nodes have: no MissingClusterDNS events.
		ClusterDNS:    []string{"10.96.0.10"},
		ClusterDomain: "cluster.local",
		Version:       "v0.0.0-test",
		Log:           logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(t, mgr)

	await.Eventually(t, 60*time.Second, "the Node registered, Ready, with the capacity it was given", func(ctx context.Context) error {
		node, err := clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := node.Status.Capacity.Cpu().MilliValue(); got != 2000 {
			return fmt.Errorf("cpu capacity %dm, want 2000m", got)
		}
		if got := node.Status.Capacity.Pods().Value(); got != 30 {
			return fmt.Errorf("pods capacity %d, want 30", got)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not Ready: %v", node.Status.Conditions)
	})
	await.Eventually(t, 60*time.Second, "the node's Lease renewed", func(ctx context.Context) error {
		lease, err := clientset.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.RenewTime == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != nodeName {
			return fmt.Errorf("lease not held by %s: %+v", nodeName, lease.Spec)
		}
		return nil
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{
			NodeName: nodeName,
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example/web:1",
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	if _, err := clientset.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 60*time.Second, "the pod Running and Ready with an IP of the node's range", func(ctx context.Context) error {
		got, err := clientset.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		ready := false
		for _, c := range got.Status.Conditions {
			ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		if !ready {
			return fmt.Errorf("not Ready: %v", got.Status.Conditions)
		}
		ip, err := netip.ParseAddr(got.Status.PodIP)
		if err != nil || !podCIDR.Contains(ip) {
			return fmt.Errorf("pod IP %q not in %s", got.Status.PodIP, podCIDR)
		}
		return nil
	})
	await.Eventually(t, 30*time.Second, "the Started event from the node", func(ctx context.Context) error {
		events, err := clientset.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "web", "reason": "Started"}.String(),
		})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Source.Host == nodeName {
				return nil
			}
		}
		return fmt.Errorf("no Started event from %s among %d", nodeName, len(events.Items))
	})
	// Recorded, if at all, before the container was created.
	missing, err := clientset.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=MissingClusterDNS"})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing.Items) > 0 {
		t.Errorf("MissingClusterDNS events with the cluster's DNS given: %s", missing.Items[0].Message)
	}
}
