package pleg

// Tests of what the PLEG reports as the kubelet's
// metrics: pure functions over plain values.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestRunningCountsAreThePodsWithAReadySandboxAndTheContainersByState(t *testing.T) {
	pods := map[types.UID]*kubecontainer.PodStatus{
		"running": {
			Sandboxes:  []*kubecontainer.SandboxStatus{{State: kubecontainer.SandboxReady}, {State: kubecontainer.SandboxNotReady}},
			Containers: []*kubecontainer.ContainerStatus{{State: kubecontainer.ContainerRunning}, {State: kubecontainer.ContainerExited}},
		},
		"starting": {
			Sandboxes:  []*kubecontainer.SandboxStatus{{State: kubecontainer.SandboxReady}},
			Containers: []*kubecontainer.ContainerStatus{{State: kubecontainer.ContainerCreated}},
		},
		"finished": {
			Sandboxes:  []*kubecontainer.SandboxStatus{{State: kubecontainer.SandboxNotReady}},
			Containers: []*kubecontainer.ContainerStatus{{State: kubecontainer.ContainerExited}, {State: kubecontainer.ContainerUnknown}},
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
