package volume

import (
	"path/filepath"
	"strconv"
	"strings"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// subPathsDir holds, under a pod's folder, the bind mounts of its sub
// paths (the kubelet's layout): <pod>/volume-subpaths/<volume>/<container>/<index>.
const subPathsDir = "volume-subpaths"

// subPathTarget is where the sub path is bound for the runtime to mount.
func subPathTarget(sp kubecontainer.SubPath) string {
	return filepath.Join(sp.PodDir, subPathsDir, sp.VolumeName, sp.ContainerName, strconv.Itoa(sp.MountIndex))
}

// within says whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// subPathOnHost is the sub path as nodelet resolves it when the host's
// root is mounted at hostRoot (see OnHost): a volume outside rootDir is
// one of the host's folders (a hostPath volume or claim), walked under
// hostRoot; the others are nodelet's own, the same path inside and out.
// The bind mount it gets is under the pod's folder, which the runtime
// sees as it is.
func subPathOnHost(sp kubecontainer.SubPath, hostRoot, rootDir string) kubecontainer.SubPath {
	if !within(rootDir, sp.VolumePath) {
		sp.VolumePath = OnHost(hostRoot, sp.VolumePath)
	}
	return sp
}

// PrepareSubPathOnHost is PrepareSubPath for a nodelet that sees the
// host's root at hostRoot; PrepareSubPath itself when hostRoot is "".
func PrepareSubPathOnHost(hostRoot, rootDir string) func(kubecontainer.SubPath) (string, error) {
	if hostRoot == "" {
		return PrepareSubPath
	}
	return func(sp kubecontainer.SubPath) (string, error) {
		return PrepareSubPath(subPathOnHost(sp, hostRoot, rootDir))
	}
}
