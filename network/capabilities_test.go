package network

// Pure functions: the per-pod capability arguments and CNI_ARGS.

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodCapabilities(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		}
	}
	tests := map[string]struct {
		mutate   func(*corev1.Pod)
		noPod    bool
		podCIDRs []string
		want     map[string]any
		wantErr  string
	}{
		"a plain pod on a single-stack node gets its range only": {
			podCIDRs: []string{"10.244.1.0/24"},
			want:     map[string]any{"ipRanges": [][]IPRange{{{Subnet: "10.244.1.0/24"}}}},
		},
		"dual stack gives one range set per family": {
			podCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"},
			want:     map[string]any{"ipRanges": [][]IPRange{{{Subnet: "10.244.1.0/24"}}, {{Subnet: "fd00:10:244:1::/64"}}}},
		},
		"host ports become port mappings, protocols lowercase, duplicates once": {
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{ContainerPort: 80, HostPort: 8080},
					{ContainerPort: 80, HostPort: 8080},
					{Name: "dns", ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
					{ContainerPort: 9090},
				}
			},
			want: map[string]any{"portMappings": []PortMapping{
				{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
				{HostPort: 5353, ContainerPort: 53, Protocol: "udp", HostIP: "127.0.0.1"},
			}},
		},
		"the bandwidth annotations become rates in bits per second": {
			mutate: func(p *corev1.Pod) {
				p.Annotations = map[string]string{AnnotationIngressBandwidth: "1M", AnnotationEgressBandwidth: "10M"}
			},
			want: map[string]any{"bandwidth": Bandwidth{IngressRate: 1000000, IngressBurst: math.MaxInt32, EgressRate: 10000000, EgressBurst: math.MaxInt32}},
		},
		"an unreasonably small bandwidth is refused": {
			mutate:  func(p *corev1.Pod) { p.Annotations = map[string]string{AnnotationIngressBandwidth: "10"} },
			wantErr: "unreasonably small",
		},
		"a bandwidth that is no quantity is refused": {
			mutate:  func(p *corev1.Pod) { p.Annotations = map[string]string{AnnotationEgressBandwidth: "fast"} },
			wantErr: "is not a quantity",
		},
		"no pod: only the node's ranges": {
			noPod:    true,
			podCIDRs: []string{"10.244.1.0/24"},
			want:     map[string]any{"ipRanges": [][]IPRange{{{Subnet: "10.244.1.0/24"}}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := base()
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			if tc.noPod {
				pod = nil
			}
			got, err := PodCapabilities(pod, tc.podCIDRs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PodCapabilities() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodCapabilities() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodArgs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
	runtimeArgs := "IgnoreUnknown=1;K8S_POD_NAMESPACE=other;K8S_POD_NAME=x;K8S_POD_UID=uid-0;K8S_POD_INFRA_CONTAINER_ID=abc"
	want := [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "web"}, {"K8S_POD_INFRA_CONTAINER_ID", "sb1"}, {"K8S_POD_UID", "uid-1"}}
	if diff := cmp.Diff(want, podArgs(runtimeArgs, "sb1", pod)); diff != "" {
		t.Errorf("podArgs(with the Pod) mismatch (-want +got):\n%s", diff)
	}
	want = [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "other"}, {"K8S_POD_NAME", "x"}, {"K8S_POD_INFRA_CONTAINER_ID", "sb1"}, {"K8S_POD_UID", "uid-0"}}
	if diff := cmp.Diff(want, podArgs(runtimeArgs, "sb1", nil)); diff != "" {
		t.Errorf("podArgs(without a Pod) mismatch (-want +got):\n%s", diff)
	}
}
