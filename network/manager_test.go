package network

// Tests of the network Manager in runtime mode: the node's conflist against
// a controller-runtime fake client holding the Node, with stand-in CNI
// plugins and the real clock.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestPodCIDRs(t *testing.T) {
	tests := map[string]struct {
		configured []string
		spec       corev1.NodeSpec
		want       []string
	}{
		"the configured CIDRs win over the Node's": {configured: []string{"10.1.0.0/24"}, spec: corev1.NodeSpec{PodCIDRs: []string{"10.2.0.0/24"}}, want: []string{"10.1.0.0/24"}},
		"the Node's dual-stack CIDRs":              {spec: corev1.NodeSpec{PodCIDR: "10.2.0.0/24", PodCIDRs: []string{"10.2.0.0/24", "fd00::/64"}}, want: []string{"10.2.0.0/24", "fd00::/64"}},
		"the Node's single CIDR":                   {spec: corev1.NodeSpec{PodCIDR: "10.2.0.0/24"}, want: []string{"10.2.0.0/24"}},
		"none yet":                                 {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := PodCIDRs(tc.configured, &corev1.Node{Spec: tc.spec})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodCIDRs() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// stubNodeCNIPlugins writes stand-in CNI plugins answering VERSION, so that the
// conflist validates without the real ones.
func stubNodeCNIPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"bridge", "host-local", "portmap", "bandwidth"} {
		script := "#!/bin/sh\necho '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestManagerRendersTheConflistOnceTheNodeGetsAPodCIDR(t *testing.T) {
	const nodeName = "node-under-test"
	admin := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}).Build()
	confDir := filepath.Join(t.TempDir(), "net.d")
	m, err := NewManager(ManagerOptions{
		Mode:     ModeRuntime,
		NodeName: nodeName,
		Config:   ConfigOptions{ConfDir: confDir, BinDir: stubNodeCNIPlugins(t)},
		Reader:   admin,
		Log:      logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start() = %v", err)
		}
	})

	if ready, _ := Status(confDir); ready {
		t.Fatal("a CNI configuration was written before the node had a pod CIDR")
	}
	node := &corev1.Node{}
	if err := admin.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.PodCIDR, node.Spec.PodCIDRs = "10.244.3.0/24", []string{"10.244.3.0/24"}
	if err := admin.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	conflist := filepath.Join(confDir, "10-nodelet.conflist")
	await.Eventually(t, 10*time.Second, "the conflist with the pod CIDR", func(context.Context) error {
		data, err := os.ReadFile(conflist)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), `"10.244.3.0/24"`) {
			return errors.New("conflist without the pod CIDR: " + string(data))
		}
		return nil
	})
}
