package volume

import (
	"path/filepath"
	"strconv"
	"strings"
)

// SubPath is the sub path of a volume one volume mount of a container
// asks for.
type SubPath struct {
	// VolumeName and VolumePath are the pod's volume and its folder on the
	// node.
	VolumeName string
	VolumePath string
	// Path is the sub path, relative to the volume; already checked to be
	// relative and free of "..".
	Path string
	// PodDir is the pod's own folder, under which the sub path is bound.
	PodDir        string
	ContainerName string
	// MountIndex is the volume mount's index among the container's.
	MountIndex int
}

// subPathsDir holds, under a pod's folder, the bind mounts of its sub
// paths (the kubelet's layout): <pod>/volume-subpaths/<volume>/<container>/<index>.
const subPathsDir = "volume-subpaths"

// target is where the sub path is bound for the runtime to mount.
func (sp SubPath) target() string {
	return filepath.Join(sp.PodDir, subPathsDir, sp.VolumeName, sp.ContainerName, strconv.Itoa(sp.MountIndex))
}

// within says whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
