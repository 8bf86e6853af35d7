package runtime

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzParseResolvConf reads any bytes as the node's resolv.conf and builds
// a pod's DNS configuration from it, as generateSandboxConfig does: what
// is read holds no empty or blank-bearing field, and what a Default pod
// gets is within the resolver's limits.
func FuzzParseResolvConf(f *testing.F) {
	for _, seed := range []string{
		"nameserver 10.0.0.1\nsearch corp.example\noptions ndots:1\n",
		"# comment\n; comment\nnameserver\nsearch . a. a b c d e f g\noptions ndots:5 edns0 ndots:2\noptions\n",
		"nameserver 1.1.1.1\nnameserver 8.8.8.8\nnameserver 9.9.9.9\nnameserver ::1\n",
		"\x00\t\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		conf, _ := parseResolvConf(content)
		for _, list := range [][]string{conf.Nameservers, conf.Searches, conf.Options} {
			for _, v := range list {
				if v == "" || strings.ContainsAny(v, " \t\n") {
					t.Errorf("parseResolvConf(%q) read field %q", content, v)
				}
			}
		}
		for _, policy := range []corev1.DNSPolicy{corev1.DNSDefault, corev1.DNSClusterFirst} {
			pod := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: policy}}
			pod.Namespace = "ns"
			dns, _, err := podDNSConfig(pod, conf, ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"})
			if err != nil {
				continue
			}
			if len(dns.Servers) > maxDNSNameservers {
				t.Errorf("%s pod gets %d nameservers from %q", policy, len(dns.Servers), content)
			}
			if len(dns.Searches) > maxDNSSearchPaths {
				t.Errorf("%s pod gets %d search domains from %q", policy, len(dns.Searches), content)
			}
			if slices.Contains(dns.Searches, "") {
				t.Errorf("%s pod gets an empty search domain from %q", policy, content)
			}
		}
	})
}
