package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const header = "apiVersion: config.nodelet.dev/v1alpha1\nkind: NodeletConfiguration\n"

func TestDecode(t *testing.T) {
	data := header + `
maxPods: 42
relistPeriod: 2s
clusterDNS: [10.96.0.10]
authentication:
  anonymous:
    enabled: false
  x509:
    clientCAFile: /ca.crt
authorization:
  mode: AlwaysAllow
`
	got, err := Decode([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := &NodeletConfiguration{
		TypeMeta:     metav1.TypeMeta{APIVersion: "config.nodelet.dev/v1alpha1", Kind: "NodeletConfiguration"},
		MaxPods:      42,
		RelistPeriod: metav1.Duration{Duration: 2 * time.Second},
		ClusterDNS:   []string{"10.96.0.10"},
		Authentication: NodeletAuthentication{
			Anonymous: NodeletAnonymousAuthentication{Enabled: ptr.To(false)},
			X509:      NodeletX509Authentication{ClientCAFile: "/ca.crt"},
		},
		Authorization: NodeletAuthorization{Mode: "AlwaysAllow"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := map[string]struct {
		data    string
		wantErr string
	}{
		"an unknown field":                  {header + "maxPodz: 42\n", `unknown field "maxPodz"`},
		"an unknown nested field":           {header + "authentication:\n  webhok:\n    enabled: true\n", `unknown field "authentication.webhok"`},
		"a field of the wrong case":         {header + "MaxPods: 42\n", `unknown field "MaxPods"`},
		"a duplicate field":                 {header + "maxPods: 1\nmaxPods: 2\n", `"maxPods" already set in map`},
		"a string for a number":             {header + "maxPods: many\n", `field "maxPods": got string, want int32`},
		"a fraction for a whole number":     {header + "port: 1.5\n", `field "port": got number 1.5, want int32`},
		"a number for a list":               {header + "clusterDNS: 10\n", `field "clusterDNS": got number, want []string`},
		"a string for a nested bool":        {header + "authentication:\n  webhook:\n    enabled: maybe\n", `field "authentication.webhook.enabled": got string, want bool`},
		"a duration that is not one":        {header + "relistPeriod: soon\n", `field "relistPeriod": time: invalid duration "soon"`},
		"a nested duration that is not one": {header + "authorization:\n  webhook:\n    cacheAuthorizedTTL: 5\n", `field "authorization.webhook.cacheAuthorizedTTL": got number, want string`},
		"no apiVersion":                     {"kind: NodeletConfiguration\nmaxPods: 42\n", `missing apiVersion, want "config.nodelet.dev/v1alpha1"`},
		"an empty file":                     {"", `missing apiVersion, want "config.nodelet.dev/v1alpha1"`},
		"the kubelet's apiVersion":          {"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: NodeletConfiguration\n", `apiVersion "kubelet.config.k8s.io/v1beta1" is not supported, want "config.nodelet.dev/v1alpha1"`},
		"no kind":                           {"apiVersion: config.nodelet.dev/v1alpha1\n", `missing kind, want "NodeletConfiguration"`},
		"the kubelet's kind":                {"apiVersion: config.nodelet.dev/v1alpha1\nkind: KubeletConfiguration\n", `kind "KubeletConfiguration" is not supported, want "NodeletConfiguration"`},
		"not an object":                     {"- a\n- b\n", "not a NodeletConfiguration object"},
		"not YAML":                          {header + "maxPods: [\n", "yaml"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.data))
			if err == nil {
				t.Fatalf("Decode succeeded, want an error containing %q", tc.wantErr)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.wantErr) || strings.Contains(msg, "\n") {
				t.Errorf("Decode error %q, want one line containing %q", msg, tc.wantErr)
			}
		})
	}
}

// What /configz serves, every field with its value, empty ones included,
// is a file that reads back as the same configuration: a node's effective
// configuration can be given to another.
func TestServedConfigurationReadsBack(t *testing.T) {
	want := defaulted()
	want.RegisterWithTaints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}
	want.EvictionSoft = map[string]string{"memory.available": "1Gi"}
	served, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(served)
	if err != nil {
		t.Fatalf("Decode(%s): %v", served, err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
