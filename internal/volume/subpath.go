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

// OnHost is the sub path as nodelet resolves it when the host's root is
// mounted at hostRoot (see OnHost): a volume outside rootDir is one of the
// host's folders (a hostPath volume or claim), walked under hostRoot; the
// others are nodelet's own, the same path inside and out. The bind mount
// it gets is under the pod's folder, which the runtime sees as it is.
func (sp SubPath) OnHost(hostRoot, rootDir string) SubPath {
	if !within(rootDir, sp.VolumePath) {
		sp.VolumePath = OnHost(hostRoot, sp.VolumePath)
	}
	return sp
}

// PrepareSubPathOnHost is PrepareSubPath for a nodelet that sees the
// host's root at hostRoot; PrepareSubPath itself when hostRoot is "".
func PrepareSubPathOnHost(hostRoot, rootDir string) func(SubPath) (string, error) {
	if hostRoot == "" {
		return PrepareSubPath
	}
	return func(sp SubPath) (string, error) { return PrepareSubPath(sp.OnHost(hostRoot, rootDir)) }
}
