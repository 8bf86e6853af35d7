package imagegc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// statfsUsage measures the file system mounted at mountpoint, as cAdvisor
// does for the kubelet: blocks available to unprivileged users count as
// available.
func statfsUsage(mountpoint string) (FsUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mountpoint, &st); err != nil {
		return FsUsage{}, fmt.Errorf("statfs %s: %w", mountpoint, err)
	}
	return FsUsage{
		CapacityBytes:  int64(st.Blocks) * st.Bsize,
		AvailableBytes: int64(st.Bavail) * st.Bsize,
	}, nil
}
