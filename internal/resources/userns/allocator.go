package userns

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// Allocator hands out the node's range to pods, IDsPerPod IDs each. It
// decides only: the caller persists what it hands out, and holds a lock.
type Allocator struct {
	// first is the node range's first slot (a slot is IDsPerPod IDs);
	// slots is how many it has.
	first, slots uint32
	// used maps each slot taken to its pod, and byPod each pod to its
	// slot.
	used  map[uint32]types.UID
	byPod map[types.UID]uint32
}

// NewAllocator hands out r, which NodeRange has checked.
func NewAllocator(r Range) *Allocator {
	return &Allocator{
		first: r.First / IDsPerPod,
		slots: r.Length / IDsPerPod,
		used:  map[uint32]types.UID{},
		byPod: map[types.UID]uint32{},
	}
}

// errFull is the kubelet's words for a node range with no slot left.
var errFull = errors.New("could not find an empty slot to allocate a user namespace")

// Lookup is the range pod holds, if any.
func (a *Allocator) Lookup(pod types.UID) (Range, bool) {
	slot, ok := a.byPod[pod]
	if !ok {
		return Range{}, false
	}
	return a.rangeOf(slot), true
}

// Allocate gives pod a free range: the range it holds already, else the
// lowest free one.
func (a *Allocator) Allocate(pod types.UID) (Range, error) {
	if r, ok := a.Lookup(pod); ok {
		return r, nil
	}
	for slot := a.first; slot < a.first+a.slots; slot++ {
		if _, taken := a.used[slot]; !taken {
			a.take(pod, slot)
			return a.rangeOf(slot), nil
		}
	}
	return Range{}, errFull
}

// Record gives pod the range r it was given before (read back from its
// folder), checked as the kubelet checks it: a whole slot of the node's
// range, not another pod's, and the pod's only one.
func (a *Allocator) Record(pod types.UID, r Range) error {
	if r.Length != IDsPerPod {
		return fmt.Errorf("wrong user namespace length %v", r.Length)
	}
	if r.First%IDsPerPod != 0 {
		return fmt.Errorf("wrong user namespace offset specified %v", r.First)
	}
	slot := r.First / IDsPerPod
	if held, ok := a.byPod[pod]; ok {
		if held != slot {
			return fmt.Errorf("different user namespace range already used by pod %q", pod)
		}
		return nil
	}
	if slot < a.first || slot >= a.first+a.slots {
		return fmt.Errorf("id %v is out of range", r.First)
	}
	if _, taken := a.used[slot]; taken {
		return fmt.Errorf("range picked for pod %q already taken", pod)
	}
	a.take(pod, slot)
	return nil
}

// Release frees pod's range, if it holds one.
func (a *Allocator) Release(pod types.UID) {
	slot, ok := a.byPod[pod]
	if !ok {
		return
	}
	delete(a.byPod, pod)
	delete(a.used, slot)
}

// Pods are the pods holding a range.
func (a *Allocator) Pods() []types.UID {
	pods := make([]types.UID, 0, len(a.byPod))
	for pod := range a.byPod {
		pods = append(pods, pod)
	}
	return pods
}

func (a *Allocator) take(pod types.UID, slot uint32) {
	a.used[slot] = pod
	a.byPod[pod] = slot
}

func (a *Allocator) rangeOf(slot uint32) Range {
	return Range{First: slot * IDsPerPod, Length: IDsPerPod}
}
