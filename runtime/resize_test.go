package runtime

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// sizedAs gives the pod's container app the resources r (its allocation).
func sizedAs(r kubecontainer.ResizeValues) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { pod.Spec.Containers[0].Resources = r.Requirements() }
}

// runningWith has the runtime's app run with the resources r.
func runningWith(r kubecontainer.ResizeValues) func(*corev1.Pod, *kubecontainer.PodStatus) {
	return func(_ *corev1.Pod, status *kubecontainer.PodStatus) { status.Containers[0].Actuated = &r }
}

func TestComputePodActionsResize(t *testing.T) {
	small := kubecontainer.ResizeValues{CPURequest: 100, CPULimit: 200, MemoryRequest: 64 << 20, MemoryLimit: 128 << 20}
	appID := kubecontainer.ContainerID{Type: "containerd", ID: "app-0"}
	update := func(desired kubecontainer.ResizeValues) ContainerToUpdate {
		return ContainerToUpdate{Name: "app", ID: appID, Index: 0, Desired: desired, Current: small}
	}
	bigger := small
	bigger.CPULimit, bigger.MemoryLimit = 400, 256<<20
	cpuOnly := small
	cpuOnly.CPURequest = 150
	memoryRequestOnly := small
	memoryRequestOnly.MemoryRequest = 96 << 20
	restartOnMemory := func(pod *corev1.Pod) {
		sizedAs(bigger)(pod)
		pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	}
	runPodActionsCases(t, map[string]podActionsCase{
		"a container running with its allocation is kept as it is": {
			mutatePod: sizedAs(small), mutateStatus: runningWith(small),
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a container whose resources nodelet did not record is kept as it is": {
			mutatePod: sizedAs(bigger),
			want:      PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a larger allocation updates memory and CPU in place, and the pod's cgroup": {
			mutatePod: sizedAs(bigger), mutateStatus: runningWith(small),
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(), UpdatePodResources: true,
				ContainersToUpdate: map[corev1.ResourceName][]ContainerToUpdate{
					corev1.ResourceMemory: {update(bigger)},
					corev1.ResourceCPU:    {update(bigger)},
				}},
		},
		"a changed CPU request alone updates CPU alone": {
			mutatePod: sizedAs(cpuOnly), mutateStatus: runningWith(small),
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(), UpdatePodResources: true,
				ContainersToUpdate: map[corev1.ResourceName][]ContainerToUpdate{corev1.ResourceCPU: {update(cpuOnly)}}},
		},
		"a changed memory request alone is still an update, as the kubelet's": {
			mutatePod: sizedAs(memoryRequestOnly), mutateStatus: runningWith(small),
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(), UpdatePodResources: true,
				ContainersToUpdate: map[corev1.ResourceName][]ContainerToUpdate{corev1.ResourceMemory: {update(memoryRequestOnly)}}},
		},
		"a RestartContainer policy for a changed resource restarts the container": {
			mutatePod: restartOnMemory, mutateStatus: runningWith(small),
			want: PodActions{SandboxID: "sb1", UpdatePodResources: true,
				ContainersToKill:  map[kubecontainer.ContainerID]ContainerToKill{appID: {Name: "app", Message: "Container app resize requires restart"}},
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1}}},
		},
		"a RestartContainer policy for a resource that did not change does not": {
			mutatePod: func(pod *corev1.Pod) {
				sizedAs(cpuOnly)(pod)
				pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			},
			mutateStatus: runningWith(small),
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(), UpdatePodResources: true,
				ContainersToUpdate: map[corev1.ResourceName][]ContainerToUpdate{corev1.ResourceCPU: {update(cpuOnly)}}},
		},
	})
}

func TestResizeUpdatesPutDecreasesFirst(t *testing.T) {
	pod := basePod()
	status := baseStatus(pod)
	current := kubecontainer.ResizeValues{CPURequest: 500, CPULimit: 500}
	pod.Spec.Containers[0].Resources = kubecontainer.ResizeValues{CPURequest: 800, CPULimit: 800}.Requirements()
	pod.Spec.Containers[1].Resources = kubecontainer.ResizeValues{CPURequest: 200, CPULimit: 200}.Requirements()
	status.Containers[0].Actuated, status.Containers[1].Actuated = &current, &current
	got := ComputePodActions(pod, status, nil, testNow).ContainersToUpdate[corev1.ResourceCPU]
	if len(got) != 2 || got[0].Name != "sidecar" || got[1].Name != "app" {
		t.Errorf("CPU updates %+v, want the decrease (sidecar) before the increase (app)", got)
	}
}

func TestResizeInProgress(t *testing.T) {
	applied := kubecontainer.ResizeValues{CPURequest: 100, MemoryLimit: 128 << 20}
	tests := map[string]struct {
		allocated kubecontainer.ResizeValues
		actuated  *kubecontainer.ResizeValues
		state     kubecontainer.ContainerState
		want      bool
	}{
		"running with its allocation":           {allocated: applied, actuated: &applied, state: kubecontainer.ContainerRunning},
		"running with less than its allocation": {allocated: kubecontainer.ResizeValues{CPURequest: 200, MemoryLimit: 128 << 20}, actuated: &applied, state: kubecontainer.ContainerRunning, want: true},
		"exited: nothing to resize":             {allocated: kubecontainer.ResizeValues{CPURequest: 200}, actuated: &applied, state: kubecontainer.ContainerExited},
		"unknown resources":                     {allocated: kubecontainer.ResizeValues{CPURequest: 200}, state: kubecontainer.ContainerRunning},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			status := baseStatus(pod)
			pod.Spec.Containers = pod.Spec.Containers[:1]
			pod.Spec.Containers[0].Resources = tc.allocated.Requirements()
			status.Containers = status.Containers[:1]
			status.Containers[0].State, status.Containers[0].Actuated = tc.state, tc.actuated
			if got := ResizeInProgress(pod, status); got != tc.want {
				t.Errorf("ResizeInProgress() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResizeValuesRoundTrip(t *testing.T) {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	v := kubecontainer.ResizeValuesOf(r)
	if got := kubecontainer.ResizeValuesOf(v.Requirements()); got != v {
		t.Errorf("values read back as %+v, want %+v", got, v)
	}
	if got, ok := decodeResizeValues(encodeResizeValues(v)); !ok || got != v {
		t.Errorf("annotation read back as %+v (%v), want %+v", got, ok, v)
	}
	if _, ok := decodeResizeValues("{"); ok {
		t.Error("a damaged annotation decoded")
	}
}
