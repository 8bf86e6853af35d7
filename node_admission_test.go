package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/options"
)

func TestHostPortsSharedRefusesHostPorts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}}}}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: nil, want: ""},
		{args: []string{"--host-ports-shared"}, want: "HostPortsNotSupported"},
	} {
		opts, err := options.Parse(append([]string{"--node-name=n"}, tc.args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		admitter, err := newAdmitter(opts)
		if err != nil {
			t.Fatal(err)
		}
		node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
		if got := admitter.Admit(pod, node, nil); got.Reason != tc.want {
			t.Errorf("%q: Admit() = %+v, want reason %q", tc.args, got, tc.want)
		}
	}
}
