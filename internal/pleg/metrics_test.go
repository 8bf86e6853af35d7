package pleg

// Tests of what the PLEG reports as the kubelet's
// metrics: pure functions over plain values.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
