package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// reservedCgroupDirs are a cgroup's folders in the hierarchies whose
// limits nodelet writes to a reserved cgroup: cpu and memory (and pids),
// or the one cgroup2 folder.
func reservedCgroupDirs(cgroup string) []string {
	if cgroupV2() {
		return []string{filepath.Join("/sys/fs/cgroup", cgroup)}
	}
	var dirs []string
	for _, controller := range []string{"cpu", "memory", "pids"} {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", controller, cgroup))
	}
	return dirs
}

// readReservedCgroupFile reads a control file of a cgroup outside
// nodelet's root.
func readReservedCgroupFile(t *testing.T, cgroup, controller, v1File, v2File string) string {
	t.Helper()
	path := filepath.Join("/sys/fs/cgroup", controller, cgroup, v1File)
	if cgroupV2() {
		path = filepath.Join("/sys/fs/cgroup", cgroup, v2File)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return strings.TrimSpace(string(data))
}

// TestReservedCgroupsAreLimitedToTheirReservations restarts nodelet with
// other flags, so it must run alone: it does not call t.Parallel (see
// main_test.go). As the kubelet under --enforce-node-allocatable with
// system-reserved and kube-reserved, nodelet limits the existing cgroups
// of the system's and Kubernetes' daemons to their reservations and says
// so on the Node.
func TestReservedCgroupsAreLimitedToTheirReservations(t *testing.T) {
	system, kube := f.Env.CgroupRoot+"-system-reserved", f.Env.CgroupRoot+"-kube-reserved"
	for _, cgroup := range []string{system, kube} {
		for _, dir := range reservedCgroupDirs(cgroup) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// Removed after nodelet is back on the stack's flags (cleanups
			// run last first); an empty cgroup folder is removed whole.
			t.Cleanup(func() {
				if err := os.Remove(dir); err != nil {
					t.Errorf("removing the test's cgroup %s: %v", dir, err)
				}
			})
		}
	}
	f.restartNodeletWith(t, "--enforce-node-allocatable=pods,system-reserved,kube-reserved",
		"--system-reserved=cpu=100m,memory=100Mi", "--kube-reserved=cpu=200m,memory=200Mi",
		"--system-reserved-cgroup="+system, "--kube-reserved-cgroup="+kube)

	for _, tc := range []struct {
		cgroup, what   string
		shares, weight string
		memory         string
	}{
		{system, "system reserved", "102", "4", fmt.Sprint(100 << 20)},
		{kube, "kube reserved", "204", "8", fmt.Sprint(200 << 20)},
	} {
		if got := readReservedCgroupFile(t, tc.cgroup, "memory", "memory.limit_in_bytes", "memory.max"); got != tc.memory {
			t.Errorf("%s cgroup %s: memory limit %s, want %s", tc.what, tc.cgroup, got, tc.memory)
		}
		if got := readReservedCgroupFile(t, tc.cgroup, "cpu", "cpu.shares", "cpu.weight"); got != tc.shares && !(cgroupV2() && got == tc.weight) {
			t.Errorf("%s cgroup %s: CPU shares or weight %s, want %s shares or weight %s", tc.what, tc.cgroup, got, tc.shares, tc.weight)
		}
		message := fmt.Sprintf("Updated limits on %s cgroup %s", tc.what, tc.cgroup)
		await.Eventually(t, time.Minute, "the node event "+message, func(ctx context.Context) error {
			events, err := f.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
				FieldSelector: fields.Set{"involvedObject.kind": "Node", "involvedObject.name": f.Env.NodeName, "reason": "NodeAllocatableEnforced"}.String(),
			})
			if err != nil {
				return err
			}
			var seen []string
			for _, e := range events.Items {
				if e.Message == message && e.Source.Component == "kubelet" {
					return nil
				}
				seen = append(seen, e.Message)
			}
			return fmt.Errorf("NodeAllocatableEnforced events: %q", seen)
		})
	}
}
