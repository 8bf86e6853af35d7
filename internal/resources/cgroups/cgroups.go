// Package cgroups keeps the kubelet's cgroup tree under nodelet's root, with
// the cgroupfs driver: kubepods, limited to what the node gives pods, holds
// one cgroup per Guaranteed pod and the burstable and besteffort tiers,
// which hold the other pods'. The runtime creates a pod's sandbox and
// containers inside its cgroup (<root>/kubepods/burstable/pod<uid>/<container
// ID>), so the pod's limits bound them all. cgroup v1 (one hierarchy per
// controller, plus named and hybrid ones) and the unified v2 hierarchy are
// supported.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// podPrefix starts the name of every pod cgroup, as with the kubelet.
const podPrefix = "pod"

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	// MountPoint is where the hierarchy is mounted.
	MountPoint string
	// Controllers are the v1 controllers it carries ("cpu", "cpuacct"),
	// or its name ("name=systemd"); for cgroup2, the controllers its top
	// cgroup offers (none in the hybrid layout, whose controllers are all
	// v1's).
	Controllers []string
	// Unified is true for cgroup2.
	Unified bool
}

func (h Hierarchy) has(controller string) bool {
	return slices.Contains(h.Controllers, controller)
}

func cgroupDir(h Hierarchy, cgroup string) string {
	return filepath.Join(h.MountPoint, filepath.FromSlash(cgroup))
}

// ensure creates cgroup in h, with each missing ancestor. A new cpuset
// cgroup starts with no CPUs and no memory nodes, and a cgroup without them
// refuses tasks: it gets its parent's. In cgroup2 the parent delegates its
// controllers to the new child.
//
// Most calls make a pod's cgroup in a tier that New made whole: the new
// cgroup alone is made and set up, one mkdir where a walk from the top
// would try one per level and read every ancestor's cpuset again. A
// cgroup already there, or a missing parent, takes the walk, which also
// completes a set-up left half done. Options.Within and its ancestors are
// never made: missing, they fail the call (fence.go).
func (m *Manager) ensure(h Hierarchy, cgroup string) error {
	dir := cgroupDir(h, cgroup)
	if dir != h.MountPoint && !m.fenced(h, cgroup) && os.Mkdir(dir, 0o755) == nil {
		return setUpChild(h, filepath.Dir(dir), dir)
	}
	dir, current := h.MountPoint, "/"
	for _, name := range strings.Split(strings.Trim(cgroup, "/"), "/") {
		if name == "" {
			continue
		}
		parent := dir
		dir, current = filepath.Join(dir, name), path.Join(current, name)
		if m.fenced(h, current) {
			// Not nodelet's to make (fence.go); set up as any level,
			// which only fills what is empty and delegates controllers.
			if err := mustExist(dir); err != nil {
				return err
			}
		} else if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if err := setUpChild(h, parent, dir); err != nil {
			return err
		}
	}
	return nil
}

// setUpChild gives the cgroup dir what it needs from its parent before it
// can hold tasks.
func setUpChild(h Hierarchy, parent, dir string) error {
	switch {
	case h.Unified && len(h.Controllers) > 0:
		delegateControllers(parent)
	case h.Unified:
	case h.has("cpuset"):
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			if err := inherit(parent, dir, file); err != nil {
				return err
			}
		}
	}
	return nil
}

// inherit copies a cgroup file from parent to child unless the child's
// already holds something.
func inherit(parent, child, file string) error {
	current, err := os.ReadFile(filepath.Join(child, file))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", filepath.Join(child, file), err)
	}
	if strings.TrimSpace(string(current)) != "" {
		return nil
	}
	value, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Join(parent, file), err)
	}
	if err := os.WriteFile(filepath.Join(child, file), value, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(child, file), err)
	}
	return nil
}

// delegateControllers enables, in a cgroup2 cgroup's subtree, every
// controller it has. It is best effort, as runc's own: a controller that
// cannot be delegated (a threaded subtree, a cgroup holding processes) only
// means no limit of that kind below.
func delegateControllers(dir string) {
	available, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return
	}
	var enable []string
	for _, c := range strings.Fields(string(available)) {
		enable = append(enable, "+"+c)
	}
	if len(enable) == 0 {
		return
	}
	control := filepath.Join(dir, "cgroup.subtree_control")
	if os.WriteFile(control, []byte(strings.Join(enable, " ")), 0o644) == nil {
		return
	}
	for _, c := range enable {
		_ = os.WriteFile(control, []byte(c), 0o644)
	}
}

// killProcesses SIGKILLs the processes left in the cgroup at dir, as the
// kubelet does before it destroys a pod's cgroup: a container's processes
// that outlived their container (its runtime restarted while it stopped
// it, say) would otherwise hold the pod's cgroup, and the pod, for ever.
// They are gone by a later try, if not by the rmdir that follows.
func (m *Manager) killProcesses(dir string) {
	if m.kill == nil {
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, field := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
			_ = m.kill(pid)
		}
	}
}

// removeTree removes a cgroup and every cgroup below it, deepest first,
// killing what is left in each.
func (m *Manager) removeTree(dir string) error {
	// A pod's cgroup is most often empty by now (runc removed the
	// containers' own) or absent: one rmdir is then all it takes, without
	// listing the cgroup's control files and processes first.
	if err := m.rmdir(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			if err := m.removeTree(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	m.killProcesses(dir)
	err = m.rmdir(dir)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("cgroup %s still has processes: %w", dir, err)
	default:
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
}

// v1Controllers are the cgroup v1 controllers a hierarchy's mount options
// may name; the other options (rw, relatime, clone_children, ...) are not
// controllers.
var v1Controllers = map[string]bool{
	"blkio": true, "cpu": true, "cpuacct": true, "cpuset": true, "devices": true,
	"freezer": true, "hugetlb": true, "memory": true, "misc": true, "net_cls": true,
	"net_prio": true, "perf_event": true, "pids": true, "rdma": true,
}

// parseMountInfo reads the cgroup hierarchies out of a mountinfo file
// (proc(5)). Every v1 hierarchy is kept once, however often it is mounted;
// a cgroup2 mount is kept once too. With v1 hierarchies present, a cgroup2
// mount is the hybrid layout's unified hierarchy, holding no controllers;
// without them it is the pure v2 layout.
func parseMountInfo(r io.Reader) ([]Hierarchy, error) {
	var hierarchies []Hierarchy
	seen := map[string]bool{}
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		line := scanner.Text()
		// ID parent major:minor root mountpoint options [optional...] - fstype source superoptions
		before, after, ok := strings.Cut(line, " - ")
		fields, tail := strings.Fields(before), strings.Fields(after)
		if !ok || len(fields) < 6 || len(tail) < 3 {
			return nil, fmt.Errorf("malformed mountinfo line %q", line)
		}
		mountPoint, err := unescapeMountPath(fields[4])
		if err != nil {
			return nil, fmt.Errorf("malformed mountinfo line %q: %w", line, err)
		}
		var h Hierarchy
		switch tail[0] {
		case "cgroup2":
			h = Hierarchy{MountPoint: mountPoint, Unified: true}
		case "cgroup":
			h = Hierarchy{MountPoint: mountPoint}
			for _, option := range strings.Split(tail[2], ",") {
				if v1Controllers[option] || strings.HasPrefix(option, "name=") {
					h.Controllers = append(h.Controllers, option)
				}
			}
			if len(h.Controllers) == 0 {
				continue
			}
			sort.Strings(h.Controllers)
		default:
			continue
		}
		key := "cgroup2"
		if !h.Unified {
			key = strings.Join(h.Controllers, ",")
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		hierarchies = append(hierarchies, h)
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return hierarchies, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+4 > len(s) {
				return "", fmt.Errorf("bad escape in %q", s)
			}
			n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
			if err != nil {
				return "", fmt.Errorf("bad escape in %q", s)
			}
			b.WriteByte(byte(n))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}
