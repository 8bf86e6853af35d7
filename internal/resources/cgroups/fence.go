package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// A companion node's pods' cgroups go inside a pod's cgroup that the
// host's kubelet made (Options.Within, --cgroup-root-in-runtime-pod). That
// pod can be replaced while nodelet runs: the host's kubelet then kills
// everything in its cgroup and removes it. Making a pod's cgroup at the
// old path again would make the old pod's cgroup again with it: a cgroup
// no pod of the host owns, which no limit of the host's holds and no
// eviction of the host's sees. So the Manager never makes Within or
// anything above it, and a Manager that was told the pod is gone (Seal)
// makes and uses no pod cgroup at all.

// ErrWithinGone is the error of a cgroup that cannot be made because the
// cgroup it would be inside (Options.Within) is gone.
var ErrWithinGone = errors.New("the cgroup nodelet's cgroups go inside is gone")

// validateWithin checks that within, when set, is a clean absolute path
// strictly above root.
func validateWithin(within, root string) error {
	if within == "" {
		return nil
	}
	if !path.IsAbs(within) || path.Clean(within) != within || within == "/" {
		return fmt.Errorf("cgroup %q, which the cgroup root is inside, is not a clean absolute path below /", within)
	}
	if !strings.HasPrefix(root, within+"/") {
		return fmt.Errorf("cgroup root %q is not inside %q", root, within)
	}
	return nil
}

// fenceHierarchies are the mount points of the hierarchies Within is in
// when the Manager starts, where it is fenced. Within is made by whoever
// made it (the host's kubelet) in the hierarchies it manages; in any
// other (a named one, a controller that kubelet does not use) nodelet
// makes what is missing, as without Within, since no limit is there to
// lose.
func fenceHierarchies(within string, hierarchies []Hierarchy) (map[string]bool, error) {
	if within == "" {
		return nil, nil
	}
	in := map[string]bool{}
	for _, h := range hierarchies {
		if _, err := os.Stat(cgroupDir(h, within)); err == nil {
			in[h.MountPoint] = true
		}
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: cgroup %s is in no hierarchy", ErrWithinGone, within)
	}
	return in, nil
}

// fenced is true when cgroup is Options.Within or one of its ancestors in
// a hierarchy it is fenced in: a cgroup the Manager must find, never make.
func (m *Manager) fenced(h Hierarchy, cgroup string) bool {
	if !m.fencedIn[h.MountPoint] {
		return false
	}
	return cgroup == "/" || cgroup == m.within || strings.HasPrefix(m.within, cgroup+"/")
}

// setUpWithin sets up, from the top, each level down to Within in the
// hierarchies it is fenced in, as the walk of ensure does (cpuset filled
// where empty, cgroup2 controllers delegated): whoever made them need not
// have delegated what the tree's limits need (hugetlb, in the hybrid
// layout's cgroup2 hierarchy).
func (m *Manager) setUpWithin() error {
	for _, h := range m.hierarchies {
		if m.fencedIn[h.MountPoint] {
			if err := m.ensure(h, m.within); err != nil {
				return err
			}
		}
	}
	return nil
}

// mustExist is nil when the fenced cgroup folder dir is there, else
// ErrWithinGone naming it.
func mustExist(dir string) error {
	_, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is not there, and is not nodelet's to make", ErrWithinGone, dir)
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return nil
}

// Seal stops the Manager from making or handing out any pod cgroup from
// now on, for reason: EnsurePod returns it, so that no sandbox is made
// (its cgroup parent must exist first). Removing pods' cgroups still
// works. The first reason stays.
func (m *Manager) Seal(reason error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sealed == nil {
		m.sealed = reason
	}
}

// sealedBy is why the Manager was sealed, nil while it is not.
func (m *Manager) sealedBy() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sealed
}
