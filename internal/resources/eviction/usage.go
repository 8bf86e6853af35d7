package eviction

// Which container instances a pod's usage is made of: the running ones,
// as the kubelet counts them.

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// ContainerStats is one container instance as the runtime reports it.
type ContainerStats struct {
	PodUID types.UID
	Name   string
	// Running says the instance is running. Only running instances are
	// the pod's usage, as in the kubelet (its stats drop the others): a
	// crash-looping container's dead instances keep their writable
	// layers until they are removed, but they are not what the pod uses
	// now, and counting them would evict the pod for its restarts
	// against its own ephemeral-storage limit. Under disk pressure the
	// node frees them first (dead containers are removed before any pod
	// is evicted).
	Running bool
	// Memory is its working set, WritableLayer and WritableLayerInodes
	// what its writable layer takes; nil when not reported.
	Memory, WritableLayer, WritableLayerInodes *resource.Quantity
}

// PodUsageOf sums the running instances' use per pod. A pod with
// instances, none running, is measured and uses nothing.
func PodUsageOf(stats []ContainerStats) Usage {
	usage := Usage{}
	for _, s := range stats {
		pod := usage[s.PodUID]
		if s.Running {
			c := ContainerUsage{Name: s.Name, Memory: copyQuantity(s.Memory), EphemeralStorage: copyQuantity(s.WritableLayer)}
			if s.Memory != nil {
				pod.Memory = addQuantity(pod.Memory, *s.Memory)
			}
			if s.WritableLayer != nil {
				pod.EphemeralStorage = addQuantity(pod.EphemeralStorage, *s.WritableLayer)
			}
			if s.WritableLayerInodes != nil {
				pod.Inodes = addQuantity(pod.Inodes, *s.WritableLayerInodes)
			}
			pod.Containers = append(pod.Containers, c)
		}
		usage[s.PodUID] = pod
	}
	return usage
}

func copyQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}
