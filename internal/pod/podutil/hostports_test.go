package podutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestHostPorts(t *testing.T) {
	tcp := func(containerPort, hostPort int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: containerPort, HostPort: hostPort, Protocol: corev1.ProtocolTCP}
	}
	cases := map[string]struct {
		// init are the init containers' ports, sidecar says which of
		// them are sidecars.
		init       [][]corev1.ContainerPort
		sidecar    []bool
		containers [][]corev1.ContainerPort
		want       []corev1.ContainerPort
	}{
		"no ports": {
			containers: [][]corev1.ContainerPort{nil},
		},
		"a port without a host port is not mapped": {
			containers: [][]corev1.ContainerPort{{{ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}},
		},
		"an empty protocol is TCP": {
			containers: [][]corev1.ContainerPort{{{ContainerPort: 80, HostPort: 8080}}},
			want:       []corev1.ContainerPort{tcp(80, 8080)},
		},
		"an unnamed port listed twice is mapped once, with or without its protocol": {
			containers: [][]corev1.ContainerPort{{{ContainerPort: 80, HostPort: 8080}, tcp(80, 8080), tcp(80, 8080)}},
			want:       []corev1.ContainerPort{tcp(80, 8080)},
		},
		"a name listed twice is mapped once, the first": {
			containers: [][]corev1.ContainerPort{{
				{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
				{Name: "http", ContainerPort: 81, HostPort: 8081, Protocol: corev1.ProtocolTCP},
			}},
			want: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
		},
		"one port under two protocols is mapped for each": {
			containers: [][]corev1.ContainerPort{{
				tcp(53, 5353),
				{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
			}},
			want: []corev1.ContainerPort{tcp(53, 5353), {ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"}},
		},
		"the same port in two containers is listed for each": {
			containers: [][]corev1.ContainerPort{{tcp(80, 8080)}, {tcp(80, 8080)}},
			want:       []corev1.ContainerPort{tcp(80, 8080), tcp(80, 8080)},
		},
		"a sidecar's ports come first, as the scheduler lists them": {
			init:       [][]corev1.ContainerPort{{{ContainerPort: 15001, HostPort: 9901}}},
			sidecar:    []bool{true},
			containers: [][]corev1.ContainerPort{{tcp(80, 8080)}},
			want:       []corev1.ContainerPort{tcp(15001, 9901), tcp(80, 8080)},
		},
		"a sidecar's name listed twice is mapped once": {
			init:    [][]corev1.ContainerPort{{tcp(15001, 9901), tcp(15001, 9901)}},
			sidecar: []bool{true},
			want:    []corev1.ContainerPort{tcp(15001, 9901)},
		},
		"an init container that runs to completion holds no port": {
			init:       [][]corev1.ContainerPort{{tcp(80, 7070)}, {tcp(15001, 9901)}},
			sidecar:    []bool{false, true},
			containers: [][]corev1.ContainerPort{nil},
			want:       []corev1.ContainerPort{tcp(15001, 9901)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{}
			for i, ports := range tc.init {
				c := corev1.Container{Name: "i", Ports: ports}
				if tc.sidecar[i] {
					c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				}
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			}
			for _, ports := range tc.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c", Ports: ports})
			}
			if diff := cmp.Diff(tc.want, HostPorts(pod)); diff != "" {
				t.Errorf("HostPorts() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
