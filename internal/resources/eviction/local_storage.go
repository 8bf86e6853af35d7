package eviction

// A pod's local ephemeral storage as the kubelet counts it — its running
// containers' writable layers (PodUsageOf), its logs and its local
// volumes — and the
// kubelet's per-pod local storage limits: an emptyDir past its sizeLimit,
// a pod past its containers' total ephemeral-storage limit, a container
// past its own. A pod over one is evicted whatever the node's pressure.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's messages of a local storage limit eviction.
const (
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// DiskUsage is what a folder's files take: bytes of disk and inodes.
type DiskUsage struct {
	Bytes  int64
	Inodes int64
}

// LocalStorage is what the node measured of a pod's files beside its
// containers' writable layers.
type LocalStorage struct {
	// Volumes are the pod's local volumes (LocalVolume), by name.
	Volumes map[string]DiskUsage
	// Logs are each container's log folder (every instance's files), by
	// container name.
	Logs map[string]DiskUsage
}

// LocalVolume says whether a volume's files are on the node's disk and so
// in the pod's ephemeral storage: an emptyDir on disk and a configMap
// volume, as the kubelet counts them. Secret, downward API and projected
// volumes and memory emptyDirs are on tmpfs (memory); a hostPath is the
// host's.
func LocalVolume(v *corev1.Volume) bool {
	return v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumDefault || v.ConfigMap != nil
}

// WithLocalStorage is the pod's usage with its logs and local volumes
// counted, as the kubelet counts ephemeral storage on a node whose images
// share its file system: each container's writable layer and logs, and
// for the pod those of all its containers and its local volumes.
func WithLocalStorage(u PodUsage, local LocalStorage) PodUsage {
	containers := make([]ContainerUsage, len(u.Containers))
	copy(containers, u.Containers)
	u.Containers = containers
	var bytes, inodes resource.Quantity
	addDisk := func(d DiskUsage) {
		bytes.Add(*resource.NewQuantity(d.Bytes, resource.BinarySI))
		inodes.Add(*resource.NewQuantity(d.Inodes, resource.DecimalSI))
	}
	counted := map[string]bool{}
	for i := range u.Containers {
		c := &u.Containers[i]
		logs, ok := local.Logs[c.Name]
		if !ok || counted[c.Name] {
			continue
		}
		// A container's logs are counted once, with its first instance.
		counted[c.Name] = true
		total := quantityOrZero(c.EphemeralStorage)
		total.Add(*resource.NewQuantity(logs.Bytes, resource.BinarySI))
		c.EphemeralStorage = &total
		addDisk(logs)
	}
	for name, logs := range local.Logs {
		if !counted[name] {
			// Logs of a container no longer in the runtime.
			addDisk(logs)
		}
	}
	for _, v := range local.Volumes {
		addDisk(v)
	}
	u.EphemeralStorage = addQuantity(u.EphemeralStorage, bytes)
	u.Inodes = addQuantity(u.Inodes, inodes)
	u.Volumes = local.Volumes
	return u
}

func addQuantity(sum *resource.Quantity, q resource.Quantity) *resource.Quantity {
	if sum == nil {
		q.Format = resource.BinarySI
		return &q
	}
	total := sum.DeepCopy()
	total.Add(q)
	return &total
}

// The kubelet's names for the three local storage limits, which are not
// thresholds but label the evictions they cause (kubelet_evictions).
const (
	SignalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
)

// LocalStorageViolation is the kubelet's message for a pod over one of its
// local storage limits, checked in the kubelet's order: an emptyDir over
// its sizeLimit, the pod's local ephemeral storage over its limit (its
// containers' ephemeral-storage limits summed, when any sets one), a
// container's writable layer and logs over its own limit. ok is false
// when the pod is within them all, or was not measured; signal names the
// limit it is over.
func LocalStorageViolation(pod *corev1.Pod, usage Usage) (signal Signal, message string, ok bool) {
	u, measured := usage[pod.UID]
	if !measured {
		return "", "", false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() != 1 {
			continue
		}
		used, ok := u.Volumes[v.Name]
		if ok && resource.NewQuantity(used.Bytes, resource.BinarySI).Cmp(*v.EmptyDir.SizeLimit) > 0 {
			return SignalEmptyDirFsLimit, fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String()), true
		}
	}
	if limit, ok := podLimit(pod, corev1.ResourceEphemeralStorage); ok && u.EphemeralStorage != nil && u.EphemeralStorage.Cmp(limit) > 0 {
		return SignalEphemeralPodFsLimit, fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String()), true
	}
	for _, cu := range u.Containers {
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if c.Name != cu.Name {
				continue
			}
			limit, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]
			if ok && !limit.IsZero() && cu.EphemeralStorage != nil && cu.EphemeralStorage.Cmp(limit) > 0 {
				return SignalEphemeralContainerFsLimit, fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String()), true
			}
		}
	}
	return "", "", false
}

// podLimit is the pod's limit of a resource as the kubelet's PodLimits
// computes it: the pod-level limit if set; else the containers' and
// sidecars' limits summed, or an init container's (with the sidecars
// started before it) when larger, plus the overhead. Containers without
// the limit add nothing; ok is false when none has it.
func podLimit(pod *corev1.Pod, name corev1.ResourceName) (resource.Quantity, bool) {
	sum, found := podQuantity(pod, name, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	if !found {
		return resource.Quantity{}, false
	}
	return sum, true
}

// HasLocalStorageLimit says whether the pod has a local storage limit to
// watch: an emptyDir sizeLimit or an ephemeral-storage limit.
func HasLocalStorageLimit(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if v := pod.Spec.Volumes[i].EmptyDir; v != nil && v.SizeLimit != nil && v.SizeLimit.Sign() == 1 {
			return true
		}
	}
	_, ok := podLimit(pod, corev1.ResourceEphemeralStorage)
	return ok
}

// LocalStorageGracePeriodSeconds is the grace period of a pod evicted for
// a local storage limit: the kubelet's immediate one.
const LocalStorageGracePeriodSeconds = immediateEvictionGracePeriodSeconds
