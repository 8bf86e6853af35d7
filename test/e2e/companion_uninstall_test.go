package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// chartFolders are the chart's host folders in the test's values
// (companionValues), under r.dir.
var chartFolders = []string{"containerd", "run", "cni", "nodelet", "pod-logs", "containers"}

// chartMounts are the lines of the host's mount table (the host node's
// mount namespace's) whose mount point is under a chart's host folder.
func chartMounts(t *testing.T, host hostEnv, r companionRelease) []string {
	t.Helper()
	var mountinfo []byte
	var err error
	if host.MountNS != "" {
		mountinfo, err = exec.CommandContext(t.Context(), "nsenter", "--mount="+host.MountNS, "--", "cat", "/proc/self/mountinfo").Output()
	} else {
		mountinfo, err = os.ReadFile("/proc/self/mountinfo")
	}
	if err != nil {
		t.Fatalf("reading the host's mount table: %v", err)
	}
	var under []string
	for _, line := range strings.Split(string(mountinfo), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		point := unescapeMountPath(fields[4])
		for _, dir := range chartFolders {
			if d := filepath.Join(r.dir, dir); point == d || strings.HasPrefix(point, d+"/") {
				under = append(under, line)
			}
		}
	}
	return under
}

// checkHostCleaned: helm uninstall returns once its hook's pod on the
// host has unmounted everything under the chart's host folders (the
// pods' network namespaces, volumes, the containers' root file systems)
// and removed them, as the host's mount table shows, deleted the pods'
// bridge, and its pod is gone.
func checkHostCleaned(t *testing.T, host hostEnv, r companionRelease) {
	for _, dir := range chartFolders {
		if _, err := os.Lstat(filepath.Join(r.dir, dir)); !os.IsNotExist(err) {
			t.Errorf("the chart's host folder %s after helm uninstall: %v, want it gone", filepath.Join(r.dir, dir), err)
		}
	}
	for _, line := range chartMounts(t, host, r) {
		t.Errorf("mounted after helm uninstall, under the chart's host folders: %s", line)
	}
	if iface, err := net.InterfaceByName(r.bridge); err == nil {
		t.Errorf("the pods' bridge %s (index %d) is left after helm uninstall", r.bridge, iface.Index)
	}
	pods, err := f.Client.CoreV1().Pods(r.namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "nodelet.dev/clean-host=true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("the hook's pod %s on %s is left, %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
}
