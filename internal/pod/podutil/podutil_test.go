package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestIsSidecar(t *testing.T) {
	cases := map[string]struct {
		container *corev1.Container
		want      bool
	}{
		"no container":                       {nil, false},
		"an init container without a policy": {&corev1.Container{}, false},
		"an init container restarted always": {&corev1.Container{RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsSidecar(tc.container); got != tc.want {
				t.Errorf("IsSidecar() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContainerByName(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers:      []corev1.Container{{Name: "init", Image: "i"}},
		Containers:          []corev1.Container{{Name: "app", Image: "a"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "d"}}},
	}}
	for name, wantImage := range map[string]string{"init": "i", "app": "a", "debug": "d"} {
		if c := ContainerByName(pod, name); c == nil || c.Image != wantImage {
			t.Errorf("ContainerByName(%q) = %v, want the container with image %q", name, c, wantImage)
		}
	}
	if c := ContainerByName(pod, "none"); c != nil {
		t.Errorf("ContainerByName(none) = %v, want nil", c)
	}
}
