package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// checkPodCgroupInRuntimePod: the companion's pod's cgroup is inside the
// runtime DaemonSet's pod's, which the host kubelet made for a Guaranteed
// pod (its limits are its requests):
// <host root>/kubepods/pod<runtime pod uid>/<cgroup root>/kubepods/.../pod<uid>,
// in the memory hierarchy, where the host kubelet limits the runtime's pod.
func checkPodCgroupInRuntimePod(t *testing.T, host hostEnv, runtimePod, pod *corev1.Pod) {
	t.Helper()
	agentCgroup := filepath.Join("/sys/fs/cgroup/memory", host.CgroupRoot, "kubepods", "pod"+string(runtimePod.UID))
	if _, err := os.Stat(agentCgroup); err != nil {
		t.Fatalf("the runtime pod's cgroup, a Guaranteed pod's: %v", err)
	}
	var found []string
	err := filepath.WalkDir(agentCgroup, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "pod"+string(pod.UID) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Errorf("cgroups of pod %s under the runtime pod's %s: %v, want one", pod.Name, agentCgroup, found)
	}
}

// checkPodsPidsLimit: the companion's pods' cgroup (<cgroup root>/kubepods,
// the chart's /nodelet, inside the runtime pod's) is limited to the tasks
// the host's kubelet limits that pod to (its podPidsLimit), the
// companion's PID capacity (the chart reserves no PIDs), not the
// machine's pid_max.
func checkPodsPidsLimit(t *testing.T, host hostEnv, runtimePod *corev1.Pod) {
	podCgroup := filepath.Join("/sys/fs/cgroup/pids", host.CgroupRoot, "kubepods", "pod"+string(runtimePod.UID))
	for _, dir := range []string{podCgroup, filepath.Join(podCgroup, "nodelet", "kubepods")} {
		data, err := os.ReadFile(filepath.Join(dir, "pids.max"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(data)); got != host.PodPidsLimit {
			t.Errorf("%s/pids.max = %s, want the host kubelet's podPidsLimit %s", dir, got, host.PodPidsLimit)
		}
	}
}
