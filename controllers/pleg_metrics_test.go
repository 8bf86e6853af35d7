package controllers

// Tests of what the PLEG and the pod reconciler report as the kubelet's
// metrics: pure functions over plain values.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

func TestRunningCountsAreThePodsWithAReadySandboxAndTheContainersByState(t *testing.T) {
	pods := map[types.UID]*noderuntime.PodStatus{
		"running": {
			Sandboxes:  []*noderuntime.SandboxStatus{{State: noderuntime.SandboxReady}, {State: noderuntime.SandboxNotReady}},
			Containers: []*noderuntime.ContainerStatus{{State: noderuntime.ContainerRunning}, {State: noderuntime.ContainerExited}},
		},
		"starting": {
			Sandboxes:  []*noderuntime.SandboxStatus{{State: noderuntime.SandboxReady}},
			Containers: []*noderuntime.ContainerStatus{{State: noderuntime.ContainerCreated}},
		},
		"finished": {
			Sandboxes:  []*noderuntime.SandboxStatus{{State: noderuntime.SandboxNotReady}},
			Containers: []*noderuntime.ContainerStatus{{State: noderuntime.ContainerExited}, {State: noderuntime.ContainerUnknown}},
		},
	}
	runningPods, containers := runningCounts(pods)
	if runningPods != 2 {
		t.Errorf("running pods = %d, want 2", runningPods)
	}
	want := map[string]int{"running": 1, "exited": 2, "created": 1, "unknown": 1}
	if diff := cmp.Diff(want, containers); diff != "" {
		t.Errorf("containers by state (-want +got):\n%s", diff)
	}
}

func TestPodWorkerOperation(t *testing.T) {
	withSandbox := &noderuntime.PodStatus{Sandboxes: []*noderuntime.SandboxStatus{{State: noderuntime.SandboxReady}}}
	cases := map[string]struct {
		pod    *corev1.Pod
		status *noderuntime.PodStatus
		want   string
	}{
		"a new pod is created": {
			pod: &corev1.Pod{}, status: &noderuntime.PodStatus{}, want: "create",
		},
		"a pod with its sandbox is synced": {
			pod: &corev1.Pod{}, status: withSandbox, want: "sync",
		},
		"a pod being deleted is killed": {
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}}, status: withSandbox, want: "kill",
		},
		"a finished pod is terminated": {
			pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, status: withSandbox, want: "terminated",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podWorkerOperation(tc.pod, tc.status); got != tc.want {
				t.Errorf("podWorkerOperation() = %q, want %q", got, tc.want)
			}
		})
	}
}
