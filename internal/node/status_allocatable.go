package node

// The node's allocatable resources and the pods' share of the machine, as
// the kubelet's container manager computes them. Pure.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/resources/eviction"
)

// AllocatableConfig is what is kept from pods on the node: the kubelet's
// NodeAllocatableConfig.
type AllocatableConfig struct {
	// SystemReserved and KubeReserved are --system-reserved and
	// --kube-reserved: cpu, memory, ephemeral-storage, pid.
	SystemReserved corev1.ResourceList
	KubeReserved   corev1.ResourceList
	// HardEvictionThresholds are the hard thresholds of --eviction-hard;
	// memory.available and nodefs.available keep their amount from pods.
	HardEvictionThresholds []eviction.Threshold
	// EnforceNodeAllocatable is --enforce-node-allocatable.
	EnforceNodeAllocatable []string
	// SystemReservedCgroup and KubeReservedCgroup are the existing cgroups
	// the system-reserved and kube-reserved levels limit.
	SystemReservedCgroup string
	KubeReservedCgroup   string
}

// ReservedCgroup is an existing cgroup an enforcement level limits to a
// reservation.
type ReservedCgroup struct {
	// Level is the --enforce-node-allocatable value, Name the cgroup.
	Level, Name string
	Limits      corev1.ResourceList
	// What says which daemons it holds, in the kubelet's event words.
	What string
}

// ReservedCgroups are the cgroups to limit to their reservations, in the
// kubelet's order: system-reserved, then kube-reserved.
func (c AllocatableConfig) ReservedCgroups() []ReservedCgroup {
	var out []ReservedCgroup
	if slices.Contains(c.EnforceNodeAllocatable, eviction.EnforceSystemReserved) {
		out = append(out, ReservedCgroup{Level: eviction.EnforceSystemReserved, Name: c.SystemReservedCgroup, Limits: c.SystemReserved, What: "system reserved"})
	}
	if slices.Contains(c.EnforceNodeAllocatable, eviction.EnforceKubeReserved) {
		out = append(out, ReservedCgroup{Level: eviction.EnforceKubeReserved, Name: c.KubeReservedCgroup, Limits: c.KubeReserved, What: "kube reserved"})
	}
	return out
}

// Reservation is how much of each resource of capacity is kept from pods:
// system-reserved, kube-reserved and the hard eviction thresholds, the
// kubelet's GetNodeAllocatableReservation. Resources with nothing kept are
// left out.
func (c AllocatableConfig) Reservation(capacity corev1.ResourceList) corev1.ResourceList {
	evictionReserved := eviction.HardEvictionReservation(c.HardEvictionThresholds, capacity)
	reservation := corev1.ResourceList{}
	for name := range capacity {
		value := resource.NewQuantity(0, resource.DecimalSI)
		for _, list := range []corev1.ResourceList{c.SystemReserved, c.KubeReserved, evictionReserved} {
			if q, ok := list[name]; ok {
				value.Add(q)
			}
		}
		if !value.IsZero() {
			reservation[name] = *value
		}
	}
	return reservation
}

// Validate refuses a reservation larger than the capacity, as the kubelet
// refuses to start with one.
func (c AllocatableConfig) Validate(capacity corev1.ResourceList) error {
	reservation := c.Reservation(capacity)
	names := make([]string, 0, len(reservation))
	for name := range reservation {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var problems []string
	for _, name := range names {
		reserved, available := reservation[corev1.ResourceName(name)], capacity[corev1.ResourceName(name)]
		if available.Cmp(reserved) < 0 {
			problems = append(problems, fmt.Sprintf("Resource %q has a reservation of %v but capacity of %v. Expected capacity >= reservation.", name, &reserved, &available))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid Node Allocatable configuration. %s", strings.Join(problems, " "))
	}
	return nil
}

// Allocatable is what the scheduler may place pods on: capacity less the
// reservation, never below zero, and memory less the huge pages (which
// are memory the pods' ordinary memory cannot use), as the kubelet's
// NodeAllocatable setter.
func (c AllocatableConfig) Allocatable(capacity corev1.ResourceList) corev1.ResourceList {
	reservation := c.Reservation(capacity)
	allocatable := corev1.ResourceList{}
	for name, q := range capacity {
		value := q.DeepCopy()
		if r, ok := reservation[name]; ok {
			value.Sub(r)
		}
		allocatable[name] = nonNegative(value)
	}
	if memory, ok := allocatable[corev1.ResourceMemory]; ok {
		for name, q := range capacity {
			if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				memory.Sub(q)
			}
		}
		allocatable[corev1.ResourceMemory] = nonNegative(memory)
	}
	return allocatable
}

// PodsCgroupLimits is what the cgroup holding every pod is limited to:
// with "pods" in --enforce-node-allocatable, capacity less system-reserved
// and kube-reserved, never below zero; otherwise capacity. The hard
// eviction thresholds are not taken off, as in the kubelet (its
// getNodeAllocatableInternalAbsolute): the eviction manager, not the
// kernel, acts on them. capacity is the kubelet's internal capacity,
// PodsCgroupCapacity: CPUs, memory and the host's PID limit ("pid").
func (c AllocatableConfig) PodsCgroupLimits(capacity corev1.ResourceList) corev1.ResourceList {
	limits := corev1.ResourceList{}
	enforced := slices.Contains(c.EnforceNodeAllocatable, eviction.EnforcePods)
	for name, q := range capacity {
		value := q.DeepCopy()
		if enforced {
			if r, ok := c.SystemReserved[name]; ok {
				value.Sub(r)
			}
			if r, ok := c.KubeReserved[name]; ok {
				value.Sub(r)
			}
		}
		limits[name] = nonNegative(value)
	}
	return limits
}

// PodsCgroupCapacity is the capacity PodsCgroupLimits takes, the
// kubelet's internal capacity: the machine's CPUs and memory, and its
// process IDs as "pid" when known.
func PodsCgroupCapacity(machine MachineInfo) corev1.ResourceList {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(machine.MilliCPUs, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(machine.MemoryBytes, resource.BinarySI),
	}
	if machine.MaxPID > 0 {
		capacity[ResourcePID] = *resource.NewQuantity(machine.MaxPID, resource.DecimalSI)
	}
	return capacity
}

// ResourcePID is the process IDs a reservation keeps and the pods' cgroup
// is limited to, the kubelet's "pid".
const ResourcePID corev1.ResourceName = "pid"

func nonNegative(q resource.Quantity) resource.Quantity {
	if q.Sign() < 0 {
		q.Set(0)
	}
	return q
}
