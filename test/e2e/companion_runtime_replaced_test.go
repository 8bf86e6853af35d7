package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// checkRuntimePodReplaced deletes the runtime DaemonSet's pod while the
// companion's pod runs in its cgroup, as an operator replacing it (or the
// host's eviction) does, and checks what follows: the host's kubelet
// kills every process in that pod's cgroup, the companion's pod's with
// them, and removes it; the DaemonSet starts a new runtime pod; nodelet
// sees the old cgroup go, says so with a Warning event RuntimePodReplaced
// on the companion Node, and exits, and the host's kubelet starts its
// container again; nodelet then finds the new runtime pod's cgroup and
// starts the companion's pod again in it, as the kubelet reports a pod
// whose sandbox died (SandboxChanged, a restart, the old container's
// end in its last state); a pod created afterwards runs there too, and
// the old pod's cgroup is never made again. Returns nodelet's pod, the new
// runtime pod and the companion's pod as they are at the end.
func checkRuntimePodReplaced(t *testing.T, host hostEnv, r companionRelease, agent, runtimePod, pod *corev1.Pod) (*corev1.Pod, *corev1.Pod, *corev1.Pod) {
	ctx := t.Context()
	oldCgroup, ok := hostPodCgroup(host, "memory", runtimePod.UID)
	if !ok {
		t.Fatalf("no cgroup of the runtime pod %s on the host", runtimePod.Name)
	}
	hierarchies := hostHierarchiesHolding(t, oldCgroup)
	processes := processesUnder(t, filepath.Join("/sys/fs/cgroup/memory", oldCgroup), "pod"+string(pod.UID))
	if len(processes) == 0 {
		t.Fatalf("no process of pod %s in the runtime pod's cgroup %s: their end would not be checked", pod.Name, oldCgroup)
	}
	agent, err := f.Client.CoreV1().Pods(agent.Namespace).Get(ctx, agent.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodelet := containerStatus(agent, "nodelet")
	before, err := f.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := before.Status.ContainerStatuses[0]
	start := time.Now()

	if err := f.Client.CoreV1().Pods(runtimePod.Namespace).Delete(ctx, runtimePod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("the host's kubelet kills the companion's pod's processes with the runtime pod", func(t *testing.T) {
		checkNoProcessLeft(t, processes)
	})
	var replacement *corev1.Pod
	await.Eventually(t, 2*time.Minute, "a new runtime pod to run", func(ctx context.Context) error {
		pods, err := f.Client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/instance=" + r.name + ",app.kubernetes.io/component=runtime",
		})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.UID != runtimePod.UID && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				replacement = p
				return nil
			}
		}
		return fmt.Errorf("%d runtime pods, none new and Running", len(pods.Items))
	})
	t.Run("nodelet says why it stops: an event RuntimePodReplaced on the Node", func(t *testing.T) {
		checkNodeEvent(t, r.node, "RuntimePodReplaced", oldCgroup)
	})
	agent = f.waitForPod(t, agent, 3*time.Minute, "to run its nodelet container again, Ready", func(p *corev1.Pod) (bool, error) {
		c := containerStatus(p, "nodelet")
		return c != nil && c.RestartCount > nodelet.RestartCount && c.State.Running != nil && c.Ready, nil
	})
	after := f.waitForPod(t, before, 3*time.Minute, "to run again, restarted on the new runtime", func(p *corev1.Pod) (bool, error) {
		c := p.Status.ContainerStatuses
		return len(c) == 1 && c[0].RestartCount > old.RestartCount && c[0].State.Running != nil && c[0].Ready, nil
	})
	t.Logf("the runtime pod replaced: nodelet and the companion's pod running again %s after the deletion", time.Since(start).Round(time.Second))
	t.Run("the companion's pod restarted as the kubelet reports a sandbox that died", func(t *testing.T) {
		checkRestartedAfterSandboxDied(t, after, old)
	})
	t.Run("the restarted pod's cgroup is in the new runtime pod's", func(t *testing.T) {
		checkPodCgroupInRuntimePod(t, host, replacement, after)
	})
	t.Run("a new pod's cgroup is in the new runtime pod's, the old pod's never made again", func(t *testing.T) {
		fresh := runSleeperOnCompanion(t, pod.Namespace, r.node)
		checkPodCgroupInRuntimePod(t, host, replacement, fresh)
		for _, h := range hierarchies {
			if _, err := os.Stat(filepath.Join(h, oldCgroup)); !os.IsNotExist(err) {
				t.Errorf("the replaced runtime pod's cgroup %s is in %s again (stat: %v)", oldCgroup, h, err)
			}
		}
	})
	checkContainerKept(t, after, "the checks after the runtime pod's replacement")
	return agent, replacement, after
}

// hostPodCgroup is the cgroup path (below the hierarchy's mount point) of
// the host kubelet's pod uid in the hierarchy, in whichever QoS tier
// holds it.
func hostPodCgroup(host hostEnv, hierarchy string, uid types.UID) (string, bool) {
	for _, tier := range []string{"", "burstable", "besteffort"} {
		cgroup := filepath.Join("/", host.CgroupRoot, "kubepods", tier, "pod"+string(uid))
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", hierarchy, cgroup)); err == nil {
			return cgroup, true
		}
	}
	return "", false
}

// hostHierarchiesHolding are the mount points of the host's v1 cgroup
// hierarchies the cgroup is in.
func hostHierarchiesHolding(t *testing.T, cgroup string) []string {
	t.Helper()
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		dir := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(dir, cgroup)); err == nil {
			found = append(found, dir)
		}
	}
	if len(found) == 0 {
		t.Fatalf("cgroup %s is in no hierarchy under /sys/fs/cgroup", cgroup)
	}
	return found
}

// processesUnder are the processes in the cgroups named name below dir,
// and in theirs.
func processesUnder(t *testing.T, dir, name string) []companionProcess {
	t.Helper()
	var found []companionProcess
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" || !strings.Contains(path, "/"+name+"/") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, pid := range strings.Fields(string(data)) {
			if p, ok := readProcess(pid); ok {
				found = append(found, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the processes of %s under %s: %v", name, dir, err)
	}
	return found
}

// checkNodeEvent waits for an event of the Node from component kubelet
// (nodelet) with the reason and a message holding message.
func checkNodeEvent(t *testing.T, node, reason, message string) {
	t.Helper()
	await.Eventually(t, time.Minute, "a "+reason+" event on Node "+node, func(ctx context.Context) error {
		events, err := f.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", node), fields.OneTermEqualSelector("reason", reason)).String(),
		})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Node" && e.Source.Component == "kubelet" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, message) {
				return nil
			}
			seen = append(seen, e.Type+" "+e.Source.Component+": "+e.Message)
		}
		return fmt.Errorf("none holding %q among %v", message, seen)
	})
}

// checkRestartedAfterSandboxDied: the pod's container was started again
// once (a new container ID), its last state the old container's end, and
// nodelet told why with the kubelet's SandboxChanged event.
func checkRestartedAfterSandboxDied(t *testing.T, pod *corev1.Pod, old corev1.ContainerStatus) {
	c := pod.Status.ContainerStatuses[0]
	last := c.LastTerminationState.Terminated
	t.Logf("pod %s after the runtime pod's replacement: restarts %d, last state %+v", pod.Name, c.RestartCount, c.LastTerminationState)
	if c.RestartCount != old.RestartCount+1 || c.ContainerID == old.ContainerID {
		t.Errorf("pod %s's container: %s, restarts %d; want a new container, restarted once (was %s, %d)", pod.Name, c.ContainerID, c.RestartCount, old.ContainerID, old.RestartCount)
	}
	// containerd, started again, finds the task gone with its shim:
	// exit code 255, reason Unknown, what the kubelet then reports too.
	if last == nil || last.ContainerID != old.ContainerID || last.ExitCode != 255 || last.Reason != "Unknown" {
		t.Errorf("pod %s's container's last state %+v, want the end of %s, exit code 255, reason Unknown", pod.Name, c.LastTerminationState, old.ContainerID)
	}
	f.waitForEvent(t, pod, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.", time.Minute)
}

// runSleeperOnCompanion starts a small pod on the companion, waits for it
// to run, and deletes it when the test ends.
func runSleeperOnCompanion(t *testing.T, ns, node string) *corev1.Pod {
	t.Helper()
	pod := newPod(ns, "after-the-runtime-pod").withShell("exec sleep 3600").obj()
	created := createOnCompanion(t, pod, node)
	return f.waitForPod(t, created, 2*time.Minute, "to be Running and Ready on the companion", runningAndReady)
}
