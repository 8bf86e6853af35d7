package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/util/atomicfile"
)

// StateFile is the file under the root folder that holds the
// allocations, the kubelet's name for its own.
const StateFile = "allocated_pods_state"

// Store holds every admitted pod's allocation, in memory and in one file,
// written whole (to a temporary file, synced, then renamed) whenever an
// allocation changes: when a pod is admitted, a resize is accepted or
// applied, a pod is gone. A change returns once the file holds it. A read
// never touches the disk, nor waits for it.
type Store struct {
	path string
	mu   sync.RWMutex
	pods map[types.UID]PodAllocation
	// changes counts the changes made to pods, under mu.
	changes uint64

	// writing is held by the one writing the file. Changes made while it
	// writes wait, then go to the file in one write, as a burst of pods
	// admitted together would otherwise write it once each, in turn.
	writing sync.Mutex
	// written is how many changes the file holds, under writing.
	written uint64
	// writeFile writes the file whole; tests hold it.
	writeFile func(path string, data []byte, perm os.FileMode) error
}

type stateFile struct {
	Pods map[types.UID]PodAllocation `json:"pods"`
}

// Open reads the allocations kept in dir, if any. A file it cannot read
// is an error, but the Store returned is usable, empty, and overwrites
// the file at its first change (as the kubelet starts over from a
// damaged checkpoint).
func Open(dir string) (*Store, error) {
	s := &Store{path: filepath.Join(dir, StateFile), pods: map[types.UID]PodAllocation{}, writeFile: atomicfile.Write}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading the pods' allocations: %w", err)
	}
	var state stateFile
	if err := json.Unmarshal(data, &state); err != nil {
		return s, fmt.Errorf("reading the pods' allocations from %s: %w", s.path, err)
	}
	if state.Pods != nil {
		s.pods = state.Pods
	}
	return s, nil
}

// Get returns a pod's allocation.
func (s *Store) Get(uid types.UID) (PodAllocation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.pods[uid]
	return a, ok
}

// Set records a pod's allocation, keeping what resizes applied to its
// running containers; nothing is written when it is unchanged.
func (s *Store) Set(uid types.UID, a PodAllocation) error {
	s.mu.Lock()
	old, ok := s.pods[uid]
	if ok && old.SameAs(a) {
		// Made already, maybe by a change whose write is still under way.
		return s.persist(s.unchangedLocked())
	}
	a.Resized = old.Resized
	s.pods[uid] = a
	return s.persist(s.changedLocked())
}

// Resized returns what an in-place resize applied to a running container
// instance, if one did.
func (s *Store) Resized(uid types.UID, containerID string) (corev1.ResourceRequirements, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.pods[uid].Resized[containerID]
	return r, ok
}

// SetResized records what a resize applied to the pod's running container
// instances, by container ID, once for the whole resize; entries of
// instances not in running are dropped (they are gone).
func (s *Store) SetResized(uid types.UID, applied map[string]corev1.ResourceRequirements, running []string) error {
	s.mu.Lock()
	a, ok := s.pods[uid]
	if !ok {
		s.mu.Unlock()
		return nil
	}
	resized := map[string]corev1.ResourceRequirements{}
	for _, id := range running {
		if r, ok := a.Resized[id]; ok {
			resized[id] = r
		}
	}
	for id, r := range applied {
		resized[id] = r
	}
	a.Resized = resized
	s.pods[uid] = a
	return s.persist(s.changedLocked())
}

// UIDs are the pods that have an allocation.
func (s *Store) UIDs() []types.UID {
	s.mu.RLock()
	defer s.mu.RUnlock()
	uids := make([]types.UID, 0, len(s.pods))
	for uid := range s.pods {
		uids = append(uids, uid)
	}
	return uids
}

// Remove forgets the pods keep does not keep, in one write.
func (s *Store) Remove(keep func(types.UID) bool) error {
	s.mu.Lock()
	removed := false
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
			removed = true
		}
	}
	if !removed {
		return s.persist(s.unchangedLocked())
	}
	return s.persist(s.changedLocked())
}

// changedLocked counts a change made under mu, releases mu and returns
// the change's number, for persist.
func (s *Store) changedLocked() uint64 {
	s.changes++
	return s.unchangedLocked()
}

// unchangedLocked releases mu and returns the number of the last change,
// for persist: nothing to write unless that change is not in the file.
func (s *Store) unchangedLocked() uint64 {
	change := s.changes
	s.mu.Unlock()
	return change
}

// persist returns once the file holds change, writing it, with every
// change made before the write began, unless a write since did.
func (s *Store) persist(change uint64) error {
	s.writing.Lock()
	defer s.writing.Unlock()
	if s.written >= change {
		return nil
	}
	s.mu.RLock()
	data, err := json.Marshal(stateFile{Pods: s.pods})
	upTo := s.changes
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("encoding the pods' allocations: %w", err)
	}
	// Synced before it replaces the old file: after a power loss, an empty
	// file would start nodelet with no allocations, and accept every
	// pending resize unjudged.
	if err := s.writeFile(s.path, data, 0o600); err != nil {
		return fmt.Errorf("writing the pods' allocations: %w", err)
	}
	s.written = upTo
	return nil
}
