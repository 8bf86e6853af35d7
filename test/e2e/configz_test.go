package e2e

// The configuration file on the real stack: nodelet started with a
// NodeletConfiguration file and the stack's flags serves the effective
// configuration on /configz, to a client allowed nodes/configz, and runs
// with it.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestConfigzServesTheEffectiveConfiguration(t *testing.T) {
	ns := f.NewNamespace(t)
	// The stack's flags give --port and --address (and --cluster-dns
	// where it runs DNS); the file's are overridden by them.
	config := filepath.Join(t.TempDir(), "nodelet.yaml")
	data := `apiVersion: config.nodelet.dev/v1alpha1
kind: NodeletConfiguration
maxPods: 42
port: 1
clusterDomain: cluster.test
clusterDNS: [10.96.0.10]
authorization:
  webhook:
    cacheUnauthorizedTTL: 20s
`
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	// The binding exists before the first request: a refusal would be
	// remembered.
	token := f.serviceAccountToken(t, ns, "config-reader", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"nodes/configz"}, Verbs: []string{"get"},
	})
	f.waitForNodeAccess(t, fmt.Sprintf("system:serviceaccount:%s:config-reader", ns), "configz")
	f.restartNodeletWith(t, "--config="+config, "--cluster-domain=cluster.flag")

	code, body, err := f.nodeAPI(t.Context(), "/configz", nil, token)
	if err != nil || code != 200 {
		t.Fatalf("GET /configz as a user with nodes/configz: %d %.300q %v, want 200", code, body, err)
	}
	var configz struct {
		NodeletConfig configv1alpha1.NodeletConfiguration `json:"nodeletconfig"`
	}
	if err := json.Unmarshal(body, &configz); err != nil {
		t.Fatalf("GET /configz: %v in %.300q", err, body)
	}
	got := configz.NodeletConfig
	wantClusterDNS := "[10.96.0.10]"
	if f.Env.ClusterDNS != "" {
		wantClusterDNS = "[" + f.Env.ClusterDNS + "]"
	}
	port, _ := strconv.Atoi(f.Env.NodeletPort)
	checks := []struct {
		what      string
		got, want any
	}{
		{"apiVersion", got.APIVersion, "config.nodelet.dev/v1alpha1"},
		{"kind", got.Kind, "NodeletConfiguration"},
		{"maxPods (the file's)", got.MaxPods, int32(42)},
		{"clusterDNS (the stack's flag over the file's, when the stack runs DNS)", fmt.Sprint(got.ClusterDNS), wantClusterDNS},
		{"authorization.webhook.cacheUnauthorizedTTL (the file's)", got.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 20 * time.Second},
		{"port (the flag's over the file's)", got.Port, int32(port)},
		{"clusterDomain (the flag's over the file's)", got.ClusterDomain, "cluster.flag"},
		{"address (the flag's)", got.Address, "127.0.0.1"},
		{"containerLogMaxSize (the flag's)", got.ContainerLogMaxSize, "200Mi"},
		{"authentication.x509.clientCAFile (the flag's)", got.Authentication.X509.ClientCAFile != "", true},
		{"authorization.mode (the default)", got.Authorization.Mode, "Webhook"},
		{"authorization.webhook.cacheAuthorizedTTL (the default)", got.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5 * time.Minute},
		{"relistPeriod (the default)", got.RelistPeriod.Duration, time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("/configz %s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// The file's value is the one nodelet runs with, not only the one it
	// shows: the Node's pod capacity.
	await.Eventually(t, 60*time.Second, "the Node's pod capacity to be the file's 42", await.Condition(func(ctx context.Context) (bool, error) {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods := node.Status.Capacity[corev1.ResourcePods]
		return pods.Value() == 42, nil
	}))

	// nodes/stats does not open /configz.
	stats := f.serviceAccountToken(t, ns, "stats-reader", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"nodes/stats"}, Verbs: []string{"get"},
	})
	f.waitForNodeAccess(t, fmt.Sprintf("system:serviceaccount:%s:stats-reader", ns), "stats")
	if code, body, err := f.nodeAPI(t.Context(), "/configz", nil, stats); err != nil || code != 403 {
		t.Errorf("GET /configz as a user with nodes/stats only: %d %.200q %v, want 403", code, body, err)
	}
}
