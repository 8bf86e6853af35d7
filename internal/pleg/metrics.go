package pleg

import (
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// runningCounts is what kubelet_running_pods and kubelet_running_containers
// show after a relist: the pods with a ready sandbox, and the containers by
// state in the kubelet's words.
func runningCounts(pods map[types.UID]*kubecontainer.PodStatus) (int, map[string]int) {
	runningPods := 0
	containers := map[string]int{}
	for _, pod := range pods {
		for _, sb := range pod.Sandboxes {
			if sb.State == kubecontainer.SandboxReady {
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

func containerStateLabel(state kubecontainer.ContainerState) string {
	switch state {
	case kubecontainer.ContainerCreated:
		return kubeletmetrics.ContainerStateCreated
	case kubecontainer.ContainerRunning:
		return kubeletmetrics.ContainerStateRunning
	case kubecontainer.ContainerExited:
		return kubeletmetrics.ContainerStateExited
	default:
		return kubeletmetrics.ContainerStateUnknown
	}
}
