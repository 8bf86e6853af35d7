package runtime

// Pure tests of resolv.conf parsing and of a pod's DNS configuration:
// content and pods in, values out.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestParseResolvConf(t *testing.T) {
	tests := map[string]struct {
		content string
		want    resolvConf
		wantErr bool
	}{
		"an empty file has nothing": {
			content: "",
			want:    resolvConf{},
		},
		"nameservers add up in order": {
			content: "nameserver 10.0.0.1\nnameserver 10.0.0.2\n",
			want:    resolvConf{Nameservers: []string{"10.0.0.1", "10.0.0.2"}},
		},
		"the last search line wins": {
			content: "search a.example b.example\nsearch c.example\n",
			want:    resolvConf{Searches: []string{"c.example"}},
		},
		"search domains lose their trailing dot and the root domain goes": {
			content: "search a.example. . b.example\n",
			want:    resolvConf{Searches: []string{"a.example", "b.example"}},
		},
		"options merge by name, later values winning in place": {
			content: "options ndots:2 rotate\noptions timeout:1 ndots:5\n",
			want:    resolvConf{Options: []string{"ndots:5", "rotate", "timeout:1"}},
		},
		"comments, blank lines, indentation and unknown keywords are skipped": {
			content: "# generated\n; also a comment\n\n   nameserver 1.1.1.1   \ndomain example\nsortlist 10.0.0.0\n",
			want:    resolvConf{Nameservers: []string{"1.1.1.1"}},
		},
		"a nameserver line without an address is an error": {
			content: "nameserver\n",
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseResolvConf(tc.content)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseResolvConf() error = %v, want error: %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseResolvConf() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodDNSConfig(t *testing.T) {
	host := resolvConf{
		Nameservers: []string{"10.0.0.1"},
		Searches:    []string{"corp.example"},
		Options:     []string{"ndots:1", "rotate"},
	}
	hostConfig := &runtimeapi.DNSConfig{
		Servers:  []string{"10.0.0.1"},
		Searches: []string{"corp.example"},
		Options:  []string{"ndots:1", "rotate"},
	}
	cluster := ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}
	// 40 domains of 100 characters: over both the count and the length limit.
	var manyDomains []string
	for i := range 40 {
		manyDomains = append(manyDomains, fmt.Sprintf("d%02d.%s", i, strings.Repeat("x", 96)))
	}

	tests := map[string]struct {
		mutate     func(*corev1.Pod)
		cluster    ClusterDNS
		want       *runtimeapi.DNSConfig
		wantEvents []string
		wantErr    bool
	}{
		"ClusterFirst without a cluster DNS falls back to the host's configuration": {
			mutate:     func(p *corev1.Pod) {},
			want:       hostConfig,
			wantEvents: []string{reasonMissingClusterDNS},
		},
		"ClusterFirst resolves through the cluster's DNS alone, cluster domains searched first": {
			mutate:  func(p *corev1.Pod) {},
			cluster: cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
				Options:  []string{"ndots:5"},
			},
		},
		"ClusterFirst without a cluster domain searches only the host's domains": {
			mutate:  func(p *corev1.Pod) {},
			cluster: ClusterDNS{Servers: []string{"10.96.0.10"}},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"corp.example"},
				Options:  []string{"ndots:5"},
			},
		},
		"a host search domain that is a cluster one is searched once": {
			mutate:  func(p *corev1.Pod) {},
			cluster: ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "corp.example"},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"team.svc.corp.example", "svc.corp.example", "corp.example"},
				Options:  []string{"ndots:5"},
			},
		},
		"ClusterFirst on the host network resolves as the host does": {
			mutate:  func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			cluster: cluster,
			want:    hostConfig,
		},
		"ClusterFirstWithHostNet on the host network resolves through the cluster's DNS": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
				p.Spec.HostNetwork = true
			},
			cluster: cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
				Options:  []string{"ndots:5"},
			},
		},
		"Default ignores the cluster's DNS": {
			mutate:  func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault },
			cluster: cluster,
			want:    hostConfig,
		},
		"the pod's dnsConfig adds to the cluster's, its options winning": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"9.9.9.9"},
					Searches:    []string{"svc.cluster.local", "pod.example"},
					Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
				}
			},
			cluster: cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10", "9.9.9.9"},
				Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "pod.example"},
				Options:  []string{"ndots:2", "edns0"},
			},
		},
		"None ignores the cluster's DNS too": {
			mutate:  func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			cluster: cluster,
			want:    &runtimeapi.DNSConfig{},
		},
		"Default uses the host's configuration": {
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault },
			want:   hostConfig,
		},
		"ClusterFirstWithHostNet without a cluster DNS falls back to the host's configuration": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
				p.Spec.HostNetwork = true
			},
			want:       hostConfig,
			wantEvents: []string{reasonMissingClusterDNS},
		},
		"None uses only the pod's dnsConfig": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSNone
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"9.9.9.9"},
					Searches:    []string{"pod.example"},
					Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("3")}},
				}
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"9.9.9.9"},
				Searches: []string{"pod.example"},
				Options:  []string{"ndots:3"},
			},
		},
		"None without dnsConfig has nothing": {
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			want:   &runtimeapi.DNSConfig{},
		},
		"the pod's dnsConfig merges into the host's without duplicates": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSDefault
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"10.0.0.1", "9.9.9.9"},
					Searches:    []string{"corp.example", "pod.example"},
					Options: []corev1.PodDNSConfigOption{
						{Name: "ndots", Value: ptr.To("5")},
						{Name: "edns0"},
						{Name: "attempts", Value: ptr.To("")},
					},
				}
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.0.0.1", "9.9.9.9"},
				Searches: []string{"corp.example", "pod.example"},
				Options:  []string{"ndots:5", "rotate", "edns0", "attempts"},
			},
		},
		"nameservers beyond three are left out with a warning": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSDefault
				p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}}
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.0.0.1", "1.1.1.1", "2.2.2.2"},
				Searches: []string{"corp.example"},
				Options:  []string{"ndots:1", "rotate"},
			},
			wantEvents: []string{reasonDNSConfigForming},
		},
		"search domains beyond the count and length limits are left out with a warning": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSDefault
				p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: manyDomains}
			},
			want: &runtimeapi.DNSConfig{
				Servers: []string{"10.0.0.1"},
				// 32 domains first, then cut from the end to fit 2048
				// characters: 12 for corp.example, 101 for each other.
				Searches: append([]string{"corp.example"}, manyDomains[:20]...),
				Options:  []string{"ndots:1", "rotate"},
			},
			wantEvents: []string{reasonDNSConfigForming},
		},
		"a search domain longer than 253 characters is left out with a warning": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSDefault
				p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{strings.Repeat("y", 254), "pod.example"}}
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.0.0.1"},
				Searches: []string{"corp.example", "pod.example"},
				Options:  []string{"ndots:1", "rotate"},
			},
			wantEvents: []string{reasonDNSConfigForming},
		},
		"an unknown policy is an error": {
			mutate:  func(p *corev1.Pod) { p.Spec.DNSPolicy = "Elsewhere" },
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}, Spec: corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst}}
			tc.mutate(pod)
			got, events, err := podDNSConfig(pod, host, tc.cluster)
			if (err != nil) != tc.wantErr {
				t.Fatalf("podDNSConfig() error = %v, want error: %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("podDNSConfig() mismatch (-want +got):\n%s", diff)
			}
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, e.Reason)
			}
			if diff := cmp.Diff(tc.wantEvents, reasons); diff != "" {
				t.Errorf("podDNSConfig() event reasons mismatch (-want +got):\n%s", diff)
			}
			if line := strings.Join(got.Searches, " "); len(line) > maxDNSSearchListChars || len(got.Searches) > maxDNSSearchPaths {
				t.Errorf("search line breaks the limits: %d domains, %d characters", len(got.Searches), len(line))
			}
		})
	}
}
