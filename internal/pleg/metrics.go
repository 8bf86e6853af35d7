package pleg

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// runningCounts is what kubelet_running_pods and kubelet_running_containers
// show after a relist: the pods with a ready sandbox, and the containers by
// state in the kubelet's words.
func runningCounts(pods map[types.UID]*noderuntime.PodStatus) (int, map[string]int) {
	runningPods := 0
	containers := map[string]int{}
	for _, pod := range pods {
		for _, sb := range pod.Sandboxes {
			if sb.State == noderuntime.SandboxReady {
				runningPods++
				break
			}
		}
		for _, c := range pod.Containers {
			containers[containerStateLabel(c.State)]++
		}
	}
	return runningPods, containers
}

func containerStateLabel(state noderuntime.ContainerState) string {
	switch state {
	case noderuntime.ContainerCreated:
		return kubeletmetrics.ContainerStateCreated
	case noderuntime.ContainerRunning:
		return kubeletmetrics.ContainerStateRunning
	case noderuntime.ContainerExited:
		return kubeletmetrics.ContainerStateExited
	default:
		return kubeletmetrics.ContainerStateUnknown
	}
}
