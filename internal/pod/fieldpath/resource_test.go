package fieldpath

// Pure tests: a pod and the node's allocatable in, resource values out.

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestContainerResource(t *testing.T) {
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	basePod := func() *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			}}},
			Containers: []corev1.Container{
				{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("250m"),
						corev1.ResourceMemory: resource.MustParse("100M"),
					},
					Limits: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("1500m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
						"hugepages-2Mi":       resource.MustParse("4Mi"),
					},
				}},
				{Name: "bare"},
			},
		}}
	}
	withPodLimits := func(pod *corev1.Pod) {
		pod.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("1Gi"),
		}}
	}
	cases := map[string]struct {
		container string
		ref       corev1.ResourceFieldSelector
		mutate    func(*corev1.Pod)
		// noNode leaves out the node's allocatable, as when the Node
		// cannot be read.
		noNode  bool
		want    string
		wantErr string
	}{
		"a CPU limit in cores is rounded up": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, want: "2",
		},
		"a CPU limit in millicores": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, want: "1500",
		},
		"a CPU request": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, want: "250",
		},
		"a memory limit in bytes": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.memory"}, want: "134217728",
		},
		"a memory limit in Mi": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, want: "128",
		},
		"a memory request rounded up to Mi": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}, want: "96",
		},
		"a huge pages limit": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}, want: "4",
		},
		"an unset CPU limit is the node's allocatable": {
			container: "bare", ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, want: "4",
		},
		"an unset memory limit is the node's allocatable": {
			container: "bare", ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}, want: "8",
		},
		"an unset ephemeral storage limit is the node's allocatable": {
			container: "bare", ref: corev1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, want: "100",
		},
		"an unset request is zero": {
			container: "bare", ref: corev1.ResourceFieldSelector{Resource: "requests.memory"}, want: "0",
		},
		"an unset limit is the pod's own limit when it has one": {
			container: "bare", ref: corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")},
			mutate: withPodLimits, want: "1024",
		},
		"a container's own limit beats the pod's": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, mutate: withPodLimits, want: "2",
		},
		"another container named in the selector": {
			container: "bare", ref: corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, want: "128",
		},
		"an init container": {
			container: "app", ref: corev1.ResourceFieldSelector{ContainerName: "init", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, want: "64",
		},
		"an unknown container": {
			container: "app", ref: corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}, wantErr: "container nope not found",
		},
		"an unsupported resource": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}, wantErr: "unsupported container resource : limits.nvidia.com/gpu",
		},
		"limits without the node's allocatable": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "limits.cpu"}, noNode: true,
			wantErr: "failed to find node object, expected a node",
		},
		"requests without the node's allocatable": {
			container: "app", ref: corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, noNode: true,
			want: "250",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			alloc := allocatable
			if tc.noNode {
				alloc = nil
			}
			got, err := ContainerResource(pod, tc.container, &tc.ref, alloc)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ContainerResource() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerResource() error = %v", err)
			}
			if got != tc.want {
				t.Errorf("ContainerResource() = %q, want %q", got, tc.want)
			}
		})
	}
}
