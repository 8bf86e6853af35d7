package fieldpath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// ContainerResource returns a container's resource as the downward API
// shows it (a resourceFieldRef): the request or limit ref names, divided by
// ref's divisor (1 when unset) and rounded up. The container is
// ref.ContainerName, else containerName (an env var's own container).
//
// A limit the container leaves unset is the pod's own limit (pod-level
// resources), else the node's allocatable, as the kubelet defaults them:
// allocatable is the Node's, nil when unknown, which is then an error for
// limits only.
func ContainerResource(pod *corev1.Pod, containerName string, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	if ref.ContainerName != "" {
		containerName = ref.ContainerName
	}
	container := podutil.ContainerByName(pod, containerName)
	if container == nil {
		return "", fmt.Errorf("container %s not found", containerName)
	}

	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	resourceName := corev1.ResourceName(name)

	var list corev1.ResourceList
	if kind == "requests" {
		list = container.Resources.Requests
	} else {
		if allocatable == nil {
			// The kubelet's words when it cannot read its Node.
			return "", errors.New("failed to find node object, expected a node")
		}
		list = defaultedLimits(pod, container, allocatable)
	}
	quantity := list[resourceName]

	switch {
	case resourceName == corev1.ResourceCPU:
		return strconv.FormatInt(ceilDiv(quantity.MilliValue(), divisor.MilliValue()), 10), nil
	case resourceName == corev1.ResourceMemory, resourceName == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return strconv.FormatInt(ceilDiv(quantity.Value(), divisor.Value()), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

// defaultedLimits are the container's limits with the unset (or zero)
// CPU, memory and ephemeral storage ones filled in: from the pod's own
// limits for CPU and memory, else from the node's allocatable. Huge pages
// always have a limit.
func defaultedLimits(pod *corev1.Pod, container *corev1.Container, allocatable corev1.ResourceList) corev1.ResourceList {
	defaults := allocatable.DeepCopy()
	if pod.Spec.Resources != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if limit, ok := pod.Spec.Resources.Limits[name]; ok && !limit.IsZero() {
				if _, known := defaults[name]; known {
					defaults[name] = limit.DeepCopy()
				}
			}
		}
	}
	limits := container.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if limit, ok := limits[name]; ok && !limit.IsZero() {
			continue
		}
		if value, ok := defaults[name]; ok {
			limits[name] = value
		}
	}
	return limits
}

// ceilDiv divides a by b, rounding up; b is positive, as API validation
// allows only positive divisors.
func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		b = 1
	}
	q := a / b
	if a%b > 0 {
		q++
	}
	return q
}
