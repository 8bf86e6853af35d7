package podutil

import corev1 "k8s.io/api/core/v1"

// PodQOS is the pod's QoS class: the API server's, which it sets when the
// pod is created and never changes, else computed by ComputePodQOS.
func PodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS ranks a pod by its CPU and memory: BestEffort when nothing
// is asked, Guaranteed when every container (or, with pod-level resources,
// the pod) limits both and requests what it limits, Burstable otherwise.
// Ephemeral containers have no resources and do not count; init containers
// and sidecars do.
func ComputePodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	if pod.Spec.Resources != nil {
		addQOSResources(requests, pod.Spec.Resources.Requests)
		if len(pod.Spec.Resources.Limits) > 0 {
			if !addQOSResources(limits, pod.Spec.Resources.Limits) {
				guaranteed = false
			}
		}
	} else {
		for _, containers := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range containers {
				addQOSResources(requests, containers[i].Resources.Requests)
				if !addQOSResources(limits, containers[i].Resources.Limits) {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, request := range requests {
			if limit, ok := limits[name]; !ok || limit.Cmp(request) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addQOSResources adds list's positive CPU and memory into sum, and reports
// whether both were there.
func addQOSResources(sum, list corev1.ResourceList) (both bool) {
	found := 0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := list[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		found++
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	return found == 2
}
