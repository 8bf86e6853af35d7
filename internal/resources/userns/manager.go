package userns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/util/atomicfile"
)

// Options configure a Manager.
type Options struct {
	// SubUIDFile and SubGIDFile hold the node's range (NodeRange); a
	// missing file names no range. Default /etc/subuid and /etc/subgid.
	SubUIDFile, SubGIDFile string
	// MaxPods is how many pods the node runs, each of which may need a
	// range.
	MaxPods int
	// PodDir is a pod's folder, where its range is kept; Pods lists the
	// pod folders present.
	PodDir func(types.UID) string
	Pods   func() ([]types.UID, error)
	Log    logr.Logger
}

// Manager hands out pods' ranges and keeps each in its pod's folder. Safe
// for concurrent use.
type Manager struct {
	podDir func(types.UID) string
	log    logr.Logger

	mu    sync.Mutex
	alloc *Allocator
}

// NewManager reads the node's range, then the ranges of the pods whose
// folders are present. As under the kubelet, a node range that breaks the
// rules, or a pod's file that cannot be read back, is an error: nodelet
// does not start rather than hand one range to two pods.
func NewManager(opts Options) (*Manager, error) {
	if opts.SubUIDFile == "" {
		opts.SubUIDFile = "/etc/subuid"
	}
	if opts.SubGIDFile == "" {
		opts.SubGIDFile = "/etc/subgid"
	}
	subuid, err := readIfPresent(opts.SubUIDFile)
	if err != nil {
		return nil, err
	}
	subgid, err := readIfPresent(opts.SubGIDFile)
	if err != nil {
		return nil, err
	}
	nodeRange, err := NodeRange(subuid, subgid, opts.MaxPods)
	if err != nil {
		return nil, err
	}
	m := &Manager{podDir: opts.PodDir, log: opts.Log, alloc: NewAllocator(nodeRange)}
	pods, err := opts.Pods()
	if err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	for _, pod := range pods {
		r, found, err := m.readPodRange(pod)
		if err == nil && found {
			err = m.alloc.Record(pod, r)
		}
		if err != nil {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", pod, err)
		}
	}
	m.log.V(1).Info("Read user namespace ranges", "nodeRangeFirst", nodeRange.First, "nodeRangeLength", nodeRange.Length, "pods", len(m.alloc.Pods()))
	return m, nil
}

// PodRange is the range of the pod with UID uid: the one it holds (in
// memory or in its folder), else a new one, written to its folder before
// it is returned so that no restart can give it another.
func (m *Manager) PodRange(uid types.UID) (Range, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.alloc.Lookup(uid); ok {
		return r, nil
	}
	r, found, err := m.readPodRange(uid)
	if err != nil {
		return Range{}, fmt.Errorf("user namespace: %w", err)
	}
	if found {
		if err := m.alloc.Record(uid, r); err != nil {
			return Range{}, fmt.Errorf("user namespace: %w", err)
		}
		return r, nil
	}
	if r, err = m.alloc.Allocate(uid); err != nil {
		return Range{}, fmt.Errorf("create user namespace: %w", err)
	}
	if err := m.writePodRange(uid, r); err != nil {
		m.alloc.Release(uid)
		return Range{}, fmt.Errorf("create user namespace: %w", err)
	}
	m.log.V(2).Info("Allocated a user namespace range", "podUID", uid, "first", r.First, "length", r.Length)
	return r, nil
}

// Release frees the range of the pod with UID uid, once the pod is gone,
// and removes its file if its folder is still there.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.alloc.Lookup(uid); !ok {
		return
	}
	m.alloc.Release(uid)
	if err := os.Remove(filepath.Join(m.podDir(uid), mappingsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Error(err, "Failed to remove a released user namespace range's file", "podUID", uid)
	}
	m.log.V(2).Info("Released a user namespace range", "podUID", uid)
}

func (m *Manager) readPodRange(uid types.UID) (Range, bool, error) {
	data, err := readIfPresent(filepath.Join(m.podDir(uid), mappingsFile))
	if err != nil || len(data) == 0 {
		return Range{}, false, err
	}
	r, err := decodeMappings(data)
	return r, err == nil, err
}

// writePodRange writes the pod's file whole, then syncs its folder so that
// the file's name survives a crash too.
func (m *Manager) writePodRange(uid types.UID, r Range) error {
	data, err := encodeMappings(r)
	if err != nil {
		return err
	}
	dir := m.podDir(uid)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, mappingsFile), data, 0o600); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readIfPresent is the file's content, nil when there is no such file.
func readIfPresent(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}
