package cgroups

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// PodCgroup is the cgroup of the pod a process runs in, read from its
// /proc/<pid>/cgroup (/proc/self/cgroup for nodelet's own): the parent of
// its container's cgroup. It is the
// v1 memory controller's path when memory is a v1 controller (cgroup v1
// gives each controller a line, "4:memory:/..."; the kubelet puts a pod's
// containers in the same path in all of them), otherwise the unified
// hierarchy's ("0::/..."). Not the unified one first: a kernel with cgroup2
// lists a "0::/" line even where no cgroup2 is mounted (cgroup v1 hosts), or
// where it holds no controller (the hybrid layout), and that line says
// nothing of where the pod's limits are. The path is the host's only outside a cgroup namespace:
// the runtime gives privileged containers none, others see "/" — and "/"
// or a container cgroup right under the root is refused, as no pod's.
func PodCgroup(procCgroup string) (string, error) {
	var unified, memory string
	for _, line := range strings.Split(procCgroup, "\n") {
		hierarchy, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, cgroupPath, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case hierarchy == "0" && controllers == "":
			unified = cgroupPath
		case containsController(controllers, "memory"):
			memory = cgroupPath
		}
	}
	own := memory
	if own == "" {
		own = unified
	}
	if own == "" {
		return "", fmt.Errorf("no unified or memory cgroup in the process's cgroup file")
	}
	if !path.IsAbs(own) || path.Clean(own) != own {
		return "", fmt.Errorf("the process's cgroup %q is not a clean absolute path", own)
	}
	pod := path.Dir(own)
	if pod == "/" {
		return "", fmt.Errorf("the process's cgroup %q has no pod cgroup above it: not in a pod, or in a cgroup namespace (an unprivileged container)", own)
	}
	return pod, nil
}

func containsController(list, controller string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == controller {
			return true
		}
	}
	return false
}

// HostHierarchies are the cgroup hierarchies mounted in nodelet's mount
// namespace, read from /proc/self/mountinfo.
func HostHierarchies() ([]Hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("detecting cgroup hierarchies: %w", err)
	}
	defer f.Close()
	hierarchies, err := parseMountInfo(f)
	if err != nil {
		return nil, fmt.Errorf("detecting cgroup hierarchies: %w", err)
	}
	return hierarchies, nil
}

// PidsDir is the folder of cgroup in the hierarchy of the pids
// controller: cgroup v1's pids hierarchy where there is one, else the
// unified one. ok is false when neither is mounted. Pure.
func PidsDir(hierarchies []Hierarchy, cgroup string) (dir string, ok bool) {
	for _, h := range hierarchies {
		if !h.Unified && h.has("pids") {
			return cgroupDir(h, cgroup), true
		}
	}
	for _, h := range hierarchies {
		if h.Unified {
			return cgroupDir(h, cgroup), true
		}
	}
	return "", false
}

// ReadPidsMax is a cgroup folder's pids.max: the most tasks the cgroup
// and its descendants may have, 0 for none ("max").
func ReadPidsMax(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "pids.max"))
	if err != nil {
		return 0, err
	}
	return parsePidsMax(string(data))
}

// parsePidsMax reads a pids.max file's content: a number, or "max" for
// no limit (0). Pure.
func parsePidsMax(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(s, 10, 64)
	if err != nil || limit < 0 {
		return 0, fmt.Errorf("pids.max %q is not a count of tasks or max", s)
	}
	return limit, nil
}
