package container

// SubPath is the sub path of a volume that one volume mount of a container
// asks for: what the runtime hands the volume manager to make safe to
// mount (runtime.Config.PrepareSubPath; package volume's PrepareSubPath).
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
