package controllers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/resources/admission"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// TestAdmissionReservesTheHostPortsTheSandboxMaps holds admission and the
// sandbox, which the reconciler drives one after the other, to one rule: every host port admission keeps for a pod (refusing
// a later pod that asks for it) is mapped on the pod's sandbox, and every
// one mapped is kept. A port kept but not mapped would be refused to
// others and reach nobody; one mapped but not kept could be given twice.
func TestAdmissionReservesTheHostPortsTheSandboxMaps(t *testing.T) {
	sidecar := func(name string, ports ...corev1.ContainerPort) corev1.Container {
		return corev1.Container{Name: name, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: ports}
	}
	tcp := func(containerPort, hostPort int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: containerPort, HostPort: hostPort, Protocol: corev1.ProtocolTCP}
	}
	cases := map[string]struct {
		init, regular []corev1.Container
	}{
		"a regular container's host port": {
			regular: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{tcp(80, 8080)}}},
		},
		"a sidecar's host port": {
			init:    []corev1.Container{sidecar("proxy", tcp(15001, 9901))},
			regular: []corev1.Container{{Name: "app"}},
		},
		"a sidecar's and a regular container's": {
			init:    []corev1.Container{sidecar("proxy", tcp(15001, 9901), corev1.ContainerPort{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"})},
			regular: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{tcp(80, 8080)}}},
		},
		"a run-to-completion init container's host port is neither kept nor mapped": {
			init:    []corev1.Container{{Name: "setup", Ports: []corev1.ContainerPort{tcp(80, 7070)}}, sidecar("proxy", tcp(15001, 9901))},
			regular: []corev1.Container{{Name: "app"}},
		},
	}
	admitter, err := admission.New(admission.Node{OS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.init, Containers: tc.regular}}

			mappings, err := noderuntime.PortMappings(pod)
			if err != nil {
				t.Fatal(err)
			}
			var mapped []string
			for _, m := range mappings {
				mapped = append(mapped, fmt.Sprintf("%s %s:%d", m.Protocol, m.HostIp, m.HostPort))
			}

			// What admission keeps: each host port the pod declares, asked
			// for by a second pod, is refused for its ports (NodePorts)
			// when admission counts it as the first pod's.
			var kept []string
			for _, c := range append(slices.Clone(tc.init), tc.regular...) {
				for _, p := range c.Ports {
					probe := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Ports: []corev1.ContainerPort{p}}}}}
					switch r := admitter.Admit(probe, node, []*corev1.Pod{pod}); {
					case r.Admit:
					case r.Reason == admission.ReasonNodePorts:
						kept = append(kept, fmt.Sprintf("%s %s:%d", p.Protocol, p.HostIP, p.HostPort))
					default:
						t.Fatalf("the probe for %v was refused for another reason: %+v", p, r)
					}
				}
			}
			slices.Sort(mapped)
			slices.Sort(kept)
			if diff := cmp.Diff(kept, mapped); diff != "" {
				t.Errorf("the ports admission keeps (-) differ from those the sandbox maps (+):\n%s", diff)
			}
		})
	}
}
