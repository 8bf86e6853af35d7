package eviction

// Which pod goes first, and what it is told: the kubelet's ranking of
// pods under memory, disk and PID pressure, its grace periods and its
// eviction message.

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// Reason is the evicted pod's status reason, and the reason of the event
// on it.
const Reason = "Evicted"

// The kubelet's message parts.
const (
	nodeLowMessageFmt      = "The node was low on resource: %v. "
	thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "
	containerMessageFmt    = "Container %s was using %s, request is %s, has larger consumption of %v. "
)

// immediateEvictionGracePeriodSeconds is the grace period of a pod evicted
// for a hard threshold.
const immediateEvictionGracePeriodSeconds = 1

// ContainerUsage is one container's measured use.
type ContainerUsage struct {
	Name string
	// Memory is its working set; EphemeralStorage its writable layer,
	// and its logs once WithLocalStorage has counted them. Nil when not
	// measured.
	Memory           *resource.Quantity
	EphemeralStorage *resource.Quantity
}

// PodUsage is one pod's measured use, what ranking compares.
type PodUsage struct {
	Memory           *resource.Quantity
	EphemeralStorage *resource.Quantity
	Inodes           *resource.Quantity
	Processes        *int64
	Containers       []ContainerUsage
	// Volumes are its local volumes' usage by name (WithLocalStorage).
	Volumes map[string]DiskUsage
}

// Usage is the pods' measured use by UID; a pod missing was not measured.
type Usage map[types.UID]PodUsage

// cmpFunc orders two pods: negative when the first goes before.
type cmpFunc func(p1, p2 *corev1.Pod) int

func orderedBy(pods []*corev1.Pod, cmps ...cmpFunc) {
	sort.SliceStable(pods, func(i, j int) bool {
		for _, cmp := range cmps {
			if c := cmp(pods[i], pods[j]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// cmpBool places true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func podPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// byPriority places the lower priority first.
func byPriority(p1, p2 *corev1.Pod) int {
	a, b := podPriority(p1), podPriority(p2)
	switch {
	case a == b:
		return 0
	case a < b:
		return -1
	default:
		return 1
	}
}

// podRequest is the pod's effective request of a resource: the larger of
// its containers' sum and its largest init container's, plus the
// overhead, as the kubelet's GetResourceRequestQuantity.
func podRequest(pod *corev1.Pod, name corev1.ResourceName) resource.Quantity {
	sum, _ := podQuantity(pod, name, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
	return sum
}

// podQuantity is the pod's effective request or limit (of picks) of a
// resource, as the kubelet computes both: the pod-level one if set; else
// the containers' and sidecars' summed, or an init container's (with the
// sidecars started before it) when larger, plus the overhead. Containers
// without it add nothing; found is false when none has it.
func podQuantity(pod *corev1.Pod, name corev1.ResourceName, of func(corev1.ResourceRequirements) corev1.ResourceList) (sum resource.Quantity, found bool) {
	if pod.Spec.Resources != nil {
		if q, ok := of(*pod.Spec.Resources)[name]; ok {
			return q.DeepCopy(), true
		}
	}
	sum = resource.Quantity{Format: resource.BinarySI}
	for i := range pod.Spec.Containers {
		if q, ok := of(pod.Spec.Containers[i].Resources)[name]; ok {
			sum.Add(q)
			found = true
		}
	}
	var sidecars resource.Quantity
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q, ok := of(c.Resources)[name]
		if !ok {
			continue
		}
		found = true
		if podutil.IsSidecar(c) {
			sum.Add(q)
			sidecars.Add(q)
			continue
		}
		init := q.DeepCopy()
		init.Add(sidecars)
		if init.Cmp(sum) > 0 {
			sum = init
		}
	}
	if q, ok := pod.Spec.Overhead[name]; ok {
		sum.Add(q)
	}
	return sum, found
}

// usageOf picks one measure of a pod's usage.
type usageOf func(PodUsage) *resource.Quantity

func memoryOf(u PodUsage) *resource.Quantity           { return u.Memory }
func ephemeralStorageOf(u PodUsage) *resource.Quantity { return u.EphemeralStorage }
func inodesOf(u PodUsage) *resource.Quantity           { return u.Inodes }

// exceedsRequests places the pods using more than they request first, and
// pods not measured before all.
func exceedsRequests(usage Usage, of usageOf, name corev1.ResourceName) cmpFunc {
	return func(p1, p2 *corev1.Pod) int {
		u1, ok1 := usage[p1.UID]
		u2, ok2 := usage[p2.UID]
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		used1, used2 := quantityOrZero(of(u1)), quantityOrZero(of(u2))
		return cmpBool(used1.Cmp(podRequest(p1, name)) > 0, used2.Cmp(podRequest(p2, name)) > 0)
	}
}

// aboveRequests places the pod using the most above its request first.
// Ephemeral storage's and inodes' usage is compared with the ephemeral
// storage request, as the kubelet does.
func aboveRequests(usage Usage, of usageOf, request corev1.ResourceName) cmpFunc {
	return func(p1, p2 *corev1.Pod) int {
		u1, ok1 := usage[p1.UID]
		u2, ok2 := usage[p2.UID]
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		a, b := quantityOrZero(of(u1)), quantityOrZero(of(u2))
		a.Sub(podRequest(p1, request))
		b.Sub(podRequest(p2, request))
		return b.Cmp(a)
	}
}

// byProcesses places the pod running the most processes first.
func byProcesses(usage Usage) cmpFunc {
	return func(p1, p2 *corev1.Pod) int {
		u1, ok1 := usage[p1.UID]
		u2, ok2 := usage[p2.UID]
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		a, b := int64OrZero(u1.Processes), int64OrZero(u2.Processes)
		switch {
		case a == b:
			return 0
		case a > b:
			return -1
		default:
			return 1
		}
	}
}

// Rank orders pods for eviction under the signal's pressure, first to go
// first: for memory, pods over their requests, then lower priority, then
// the most above their requests; for disk the same over ephemeral storage
// or inodes; for PIDs, lower priority then the most processes. The pods
// are sorted in place.
func Rank(signal Signal, pods []*corev1.Pod, usage Usage) {
	switch Resource(signal) {
	case corev1.ResourceMemory:
		orderedBy(pods, exceedsRequests(usage, memoryOf, corev1.ResourceMemory), byPriority, aboveRequests(usage, memoryOf, corev1.ResourceMemory))
	case corev1.ResourceEphemeralStorage:
		orderedBy(pods, exceedsRequests(usage, ephemeralStorageOf, corev1.ResourceEphemeralStorage), byPriority, aboveRequests(usage, ephemeralStorageOf, corev1.ResourceEphemeralStorage))
	case resourceInodes:
		orderedBy(pods, exceedsRequests(usage, inodesOf, resourceInodes), byPriority, aboveRequests(usage, inodesOf, corev1.ResourceEphemeralStorage))
	case resourcePIDs:
		orderedBy(pods, byPriority, byProcesses(usage))
	}
}

// GracePeriodSeconds is the grace period of a pod evicted for threshold:
// 1s for a hard one; for a soft one the pod's own bounded by the maximum.
func GracePeriodSeconds(threshold Threshold, pod *corev1.Pod, maxPodGracePeriodSeconds int64) int64 {
	if threshold.Hard() {
		return immediateEvictionGracePeriodSeconds
	}
	grace := maxPodGracePeriodSeconds
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = min(grace, *pod.Spec.TerminationGracePeriodSeconds)
	}
	return grace
}

// Message is the evicted pod's status message and event, the kubelet's:
// the resource the node was low on, the first threshold of that resource
// with what was available, and each container using more than it
// requests.
func Message(resourceToReclaim corev1.ResourceName, pod *corev1.Pod, usage Usage, thresholds []Threshold, observations Observations) string {
	message := fmt.Sprintf(nodeLowMessageFmt, resourceToReclaim)
	for _, t := range thresholds {
		if Resource(t.Signal) != resourceToReclaim {
			continue
		}
		if observed, ok := observations[t.Signal]; ok {
			quantity := t.Value.QuantityOf(observed.Capacity)
			message += fmt.Sprintf(thresholdMetMessageFmt, &quantity, &observed.Available)
			break
		}
	}
	podUsage, ok := usage[pod.UID]
	if !ok {
		return message
	}
	containers := append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	for _, cu := range podUsage.Containers {
		for _, c := range containers {
			if c.Name != cu.Name {
				continue
			}
			requests := c.Resources.Requests[resourceToReclaim]
			var used *resource.Quantity
			switch resourceToReclaim {
			case corev1.ResourceMemory:
				used = cu.Memory
			case corev1.ResourceEphemeralStorage:
				used = cu.EphemeralStorage
			}
			if used != nil && used.Cmp(requests) > 0 {
				message += fmt.Sprintf(containerMessageFmt, c.Name, used.String(), requests.String(), resourceToReclaim)
			}
			break
		}
	}
	return message
}

func quantityOrZero(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return q.DeepCopy()
}

func int64OrZero(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// Evictable says whether the manager may evict the pod: the kubelet never
// evicts a critical one.
func Evictable(pod *corev1.Pod) bool {
	return !podutil.IsCritical(pod)
}
