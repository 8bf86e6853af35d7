//go:build full

package vm

import "testing"

func init() { fullTier = true }

// TestNodeOnSystemdDriver is a node as most systemd hosts run one:
// containerd 2 and runc 1.5, and the systemd cgroup driver, whose pod
// cgroups are slices systemd makes over D-Bus and whose containers are
// scopes of runc's.
func TestNodeOnSystemdDriver(t *testing.T) {
	runNode(t, nodeConfig{runtime: "containerd2", driver: "systemd", containerWeight: "17"})
}
