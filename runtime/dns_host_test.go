package runtime

// Tests of what pods inherit from the node's resolver configuration when
// the node gives them none (an empty --resolv-conf), and of the check of
// the host's search line at start. Pure functions, and the Manager with a
// fake event recorder and resolv.conf files in a temporary folder.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPodDNSConfigWithoutHostResolvers(t *testing.T) {
	cluster := ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}
	tests := map[string]struct {
		policy     corev1.DNSPolicy
		nodeIP     string
		cluster    ClusterDNS
		own        *corev1.PodDNSConfig
		want       *runtimeapi.DNSConfig
		wantEvents []string
	}{
		"Default resolves through the local machine and searches nothing": {
			policy: corev1.DNSDefault,
			want:   &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}},
		},
		"on an IPv6 node the local resolver is ::1": {
			policy: corev1.DNSDefault,
			nodeIP: "fd00::5",
			want:   &runtimeapi.DNSConfig{Servers: []string{"::1"}, Searches: []string{"."}},
		},
		"an IPv4 node keeps 127.0.0.1": {
			policy: corev1.DNSDefault,
			nodeIP: "192.168.1.5",
			want:   &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}},
		},
		"ClusterFirst searches the cluster's domains and no host ones": {
			policy:  corev1.DNSClusterFirst,
			cluster: cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local"},
				Options:  []string{"ndots:5"},
			},
		},
		"ClusterFirst without a cluster DNS falls back to the local machine": {
			policy:     corev1.DNSClusterFirst,
			want:       &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}},
			wantEvents: []string{reasonMissingClusterDNS},
		},
		"the pod's dnsConfig adds to the local resolver": {
			policy: corev1.DNSDefault,
			own:    &corev1.PodDNSConfig{Nameservers: []string{"9.9.9.9"}, Searches: []string{"pod.example"}},
			want:   &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1", "9.9.9.9"}, Searches: []string{".", "pod.example"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
				Spec:       corev1.PodSpec{DNSPolicy: tc.policy, DNSConfig: tc.own},
			}
			got, events, err := podDNSConfig(pod, localResolvConf(tc.nodeIP), tc.cluster)
			if err != nil {
				t.Fatalf("podDNSConfig() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("podDNSConfig() mismatch (-want +got):\n%s", diff)
			}
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, e.Reason)
			}
			if diff := cmp.Diff(tc.wantEvents, reasons); diff != "" {
				t.Errorf("event reasons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolvConfLimitProblem(t *testing.T) {
	domains := func(n int) []string {
		var d []string
		for i := range n {
			d = append(d, fmt.Sprintf("d%d.example", i))
		}
		return d
	}
	tests := map[string]struct {
		searches      []string
		clusterDomain string
		want          string
	}{
		"a short search line fits": {
			searches: domains(3),
		},
		"32 domains fit without a cluster domain": {
			searches: domains(32),
		},
		"29 domains fit beside the cluster's three": {
			searches:      domains(29),
			clusterDomain: "cluster.local",
		},
		"30 domains do not fit beside the cluster's three": {
			searches:      domains(30),
			clusterDomain: "cluster.local",
			want:          "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!",
		},
		"33 domains do not fit": {
			searches: domains(33),
			want:     "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 32 domains!",
		},
		"a domain over 253 characters": {
			searches: []string{"a.example", strings.Repeat("b", 254)},
			want:     `Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!`,
		},
		"a line over 2048 characters": {
			searches: []string{strings.Repeat("c", 250), strings.Repeat("d", 250), strings.Repeat("e", 250), strings.Repeat("f", 250),
				strings.Repeat("g", 250), strings.Repeat("h", 250), strings.Repeat("i", 250), strings.Repeat("j", 250), strings.Repeat("k", 250)},
			want: "Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := resolvConfLimitProblem("/etc/resolv.conf", tc.searches, tc.clusterDomain); got != tc.want {
				t.Errorf("resolvConfLimitProblem() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckResolvConfLimitsWarnsOnTheNode(t *testing.T) {
	dir := t.TempDir()
	tooMany := filepath.Join(dir, "many")
	line := "search"
	for i := range 33 {
		line += fmt.Sprintf(" d%d.example", i)
	}
	if err := os.WriteFile(tooMany, []byte("nameserver 10.0.0.1\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fine := filepath.Join(dir, "fine")
	if err := os.WriteFile(fine, []byte("nameserver 10.0.0.1\nsearch corp.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		resolvConf string
		want       []string
	}{
		"a search line pods cannot inherit whole": {
			resolvConf: tooMany,
			want:       []string{fmt.Sprintf("Warning CheckLimitsForResolvConf Resolv.conf file '%s' contains search line consisting of more than 32 domains!", tooMany)},
		},
		"a file that cannot be read": {
			resolvConf: filepath.Join(dir, "missing"),
			want:       []string{fmt.Sprintf("Warning CheckLimitsForResolvConf reading the host's resolver configuration: open %s: no such file or directory", filepath.Join(dir, "missing"))},
		},
		"a file that fits says nothing": {
			resolvConf: fine,
		},
		"no resolver configuration is not checked": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(10)
			m := &Manager{config: Config{ResolvConf: tc.resolvConf, NodeName: "node-1"}, recorder: recorder, log: logr.Discard()}
			m.CheckResolvConfLimits()
			if diff := cmp.Diff(tc.want, drainEvents(recorder)); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
