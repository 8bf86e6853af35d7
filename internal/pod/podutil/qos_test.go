package podutil

// ComputePodQOS and PodQOS are pure: tables of pods, no fakes.

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil/resources"
)

func TestComputePodQOS(t *testing.T) {
	c := func(requests, limits string) corev1.Container {
		return corev1.Container{Name: "c", Resources: resources.Requirements(requests, limits)}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := c("", "")
	sidecar.RestartPolicy = &always
	tests := map[string]struct {
		containers, initContainers []corev1.Container
		podLevel                   *corev1.ResourceRequirements
		want                       corev1.PodQOSClass
	}{
		"nothing asked is BestEffort": {
			containers: []corev1.Container{c("", "")},
			want:       corev1.PodQOSBestEffort,
		},
		"only other resources asked is BestEffort": {
			containers: []corev1.Container{c("ephemeral-storage=1Gi", "ephemeral-storage=1Gi")},
			want:       corev1.PodQOSBestEffort,
		},
		"limits equal to requests on cpu and memory is Guaranteed": {
			containers: []corev1.Container{c("cpu=100m,memory=64Mi", "cpu=100m,memory=64Mi"), c("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")},
			want:       corev1.PodQOSGuaranteed,
		},
		"a limit on cpu only is Burstable": {
			containers: []corev1.Container{c("", "cpu=1")},
			want:       corev1.PodQOSBurstable,
		},
		"a request below the limit is Burstable": {
			containers: []corev1.Container{c("cpu=100m,memory=64Mi", "cpu=200m,memory=64Mi")},
			want:       corev1.PodQOSBurstable,
		},
		"one container without limits makes the pod Burstable": {
			containers: []corev1.Container{c("cpu=1,memory=1Gi", "cpu=1,memory=1Gi"), c("", "")},
			want:       corev1.PodQOSBurstable,
		},
		"an init container without limits makes the pod Burstable": {
			containers:     []corev1.Container{c("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")},
			initContainers: []corev1.Container{c("cpu=1", "")},
			want:           corev1.PodQOSBurstable,
		},
		"a sidecar without resources keeps a Guaranteed pod from it": {
			containers:     []corev1.Container{c("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")},
			initContainers: []corev1.Container{sidecar},
			want:           corev1.PodQOSBurstable,
		},
		"pod-level limits equal to requests make the pod Guaranteed whatever the containers": {
			containers: []corev1.Container{c("", "")},
			podLevel:   ptrTo(resources.Requirements("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")),
			want:       corev1.PodQOSGuaranteed,
		},
		"pod-level requests alone make the pod Burstable": {
			containers: []corev1.Container{c("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")},
			podLevel:   &corev1.ResourceRequirements{Requests: resources.Requirements("cpu=1", "").Requests},
			want:       corev1.PodQOSBurstable,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tt.containers, InitContainers: tt.initContainers, Resources: tt.podLevel}}
			if got := ComputePodQOS(pod); got != tt.want {
				t.Errorf("ComputePodQOS() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPodQOSTakesTheAPIServersClass(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{QOSClass: corev1.PodQOSGuaranteed}}
	if got := PodQOS(pod); got != corev1.PodQOSGuaranteed {
		t.Errorf("PodQOS() = %s, want the status's Guaranteed", got)
	}
}

func ptrTo[T any](v T) *T { return &v }
