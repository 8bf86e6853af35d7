package prober

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// StartedAndReady turns probe results into the started and ready flags of
// a pod's running containers, as the kubelet's prober does:
//   - a container with a startup probe has started once that probe passed;
//   - a container with a readiness probe is ready once that probe passed
//     (and it has started);
//   - a container that ran since before proberStarted (nodelet restarted)
//     and has no result yet keeps what its status showed: started if it
//     was, ready if the pod was Ready.
//
// Containers without those probes, or not running, are left out: status
// generation counts a running one without an entry as started and ready.
// It is pure; proberStarted is when the prober started.
func StartedAndReady(pod *corev1.Pod, rt *kubecontainer.PodStatus, results kubecontainer.ProbeResults, proberStarted time.Time) (started, ready map[string]bool) {
	started, ready = map[string]bool{}, map[string]bool{}
	if rt == nil {
		return started, ready
	}
	podWasReady := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			podWasReady = true
		}
	}
	for _, pc := range probedContainers(pod) {
		c := pc.container
		if c.StartupProbe == nil && c.ReadinessProbe == nil {
			continue
		}
		latest := rt.LatestContainer(c.Name)
		if latest == nil || latest.State != kubecontainer.ContainerRunning {
			continue
		}
		result := results[latest.ID]
		ranBefore := latest.StartedAt.Before(proberStarted.Add(-restartGrace))
		if c.StartupProbe != nil {
			switch result.Startup {
			case kubecontainer.ProbeSuccess:
				started[c.Name] = true
			case kubecontainer.ProbeUnknown:
				started[c.Name] = ranBefore && wasStarted(pod, c.Name, latest.ID)
			default:
				started[c.Name] = false
			}
		}
		if c.ReadinessProbe != nil {
			switch result.Readiness {
			case kubecontainer.ProbeSuccess:
				ready[c.Name] = true
			case kubecontainer.ProbeUnknown:
				ready[c.Name] = ranBefore && podWasReady
			default:
				ready[c.Name] = false
			}
		}
	}
	return started, ready
}

// wasStarted reports whether the pod's status showed this very container
// instance started.
func wasStarted(pod *corev1.Pod, name string, id kubecontainer.ContainerID) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name && cs.ContainerID == id.String() {
				return cs.Started != nil && *cs.Started
			}
		}
	}
	return false
}
