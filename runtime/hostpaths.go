package runtime

import (
	"path/filepath"
	"strings"
)

// HostPaths says where the runtime finds the host's paths nodelet hands
// it: mount sources (volumes, sub paths, the hosts file, termination
// message files) and Localhost seccomp profiles. The runtime resolves
// them in its own mount namespace, which is the host's unless it runs in
// a container (a companion's runtime, in its DaemonSet pod).
type HostPaths struct {
	// RuntimeRoot is where the runtime's container has the host's root
	// (a companion: /host); "" when the runtime runs on the host, which
	// then gets every path as it is.
	RuntimeRoot string
	// Shared are folders the runtime's container mounts at their own
	// paths (nodelet's root folder, with the pods' folders): paths within
	// them are handed as they are, where nodelet's mounts there (tmpfs
	// volumes, sub paths) reach the runtime through that mount.
	Shared []string
}

// ForRuntime is the path the runtime is handed for the host's path: as it
// is on the host or within a shared folder, else under RuntimeRoot. Pure.
func (h HostPaths) ForRuntime(path string) string {
	if h.RuntimeRoot == "" || !filepath.IsAbs(path) {
		return path
	}
	for _, dir := range h.Shared {
		if dir != "" && pathWithin(filepath.Clean(dir), filepath.Clean(path)) {
			return path
		}
	}
	return filepath.Join(h.RuntimeRoot, path)
}

// pathWithin says whether path is dir or below it; both clean and
// absolute.
func pathWithin(dir, path string) bool {
	if dir == "/" || path == dir {
		return true
	}
	return strings.HasPrefix(path, dir+"/")
}
