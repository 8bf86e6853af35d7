package e2e

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// systemdDriver is true on the stack whose nodelet and runtime make
// cgroups through systemd.
func (f *Framework) systemdDriver() bool {
	return f.Env.CgroupDriver == cgroups.DriverSystemd
}

// cgroupPath is where a cgroup of nodelet's tree is, as nodelet and the
// pods' containers see it, for a cgroup named as the cgroupfs driver
// names it below the root ("kubepods/burstable/pod<uid>", and a
// container's ID after it): the same with the cgroupfs driver; with the
// systemd driver, the slices' path
// (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice)
// and the scope containerd's runc makes for the container
// (cri-containerd-<id>.scope).
func (f *Framework) cgroupPath(cgroup string) string {
	name := append(cgroups.ParseCgroupfsName(f.Env.CgroupRoot), cgroups.ParseCgroupfsName(cgroup)...)
	if !f.systemdDriver() {
		return name.Cgroupfs()
	}
	root := len(cgroups.ParseCgroupfsName(f.Env.CgroupRoot))
	for i := root; i < len(name); i++ {
		if strings.HasPrefix(name[i], "pod") && i+1 < len(name) {
			return path.Join(name[:i+1].Systemd(), "cri-containerd-"+name[i+1]+".scope")
		}
	}
	return name.Systemd()
}

// hostCgroupDir is the folder of the cgroup (named as cgroupPath takes
// it) in the hierarchy of controller, as this test process sees it: below
// the node's cgroup namespace, if nodelet runs in one. An empty
// controller is the unified hierarchy's; "*" is a glob of every
// hierarchy.
func (f *Framework) hostCgroupDir(controller, cgroup string) string {
	return filepath.Join("/sys/fs/cgroup", controller, f.Env.CgroupNamespace, f.cgroupPath(cgroup))
}
