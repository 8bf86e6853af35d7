package e2e

// Pods the node refuses, as the kubelet refuses them: they end Failed with
// the kubelet's reason and message, get its event, and nothing is made for
// them on the node.

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// waitRejected waits for pod to end Failed with reason and the message
// "Pod was rejected: "+message, checks the kubelet's event, and that the
// node made nothing for it: no sandbox, no pod folder, no cgroup.
func (f *Framework) waitRejected(t *testing.T, pod *corev1.Pod, reason, message string) *corev1.Pod {
	t.Helper()
	failed := f.waitForPod(t, pod, podStartTimeout, "to be rejected with "+reason, func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	if failed.Status.Reason != reason || failed.Status.Message != "Pod was rejected: "+message {
		t.Errorf("rejected pod's status: reason %q, message %q; want %q, %q",
			failed.Status.Reason, failed.Status.Message, reason, "Pod was rejected: "+message)
	}
	event := f.waitForEvent(t, pod, reason, message, probeTimeout)
	if event.Type != corev1.EventTypeWarning || event.Message != message {
		t.Errorf("rejection event: %s %q, want Warning %q", event.Type, event.Message, message)
	}
	if sandboxes := f.runtimeSandboxes(t, pod.UID); len(sandboxes) != 0 {
		t.Errorf("the runtime holds sandboxes of the rejected pod: %s", describeSandboxes(sandboxes))
	}
	if _, err := os.Stat(f.podDir(pod)); !os.IsNotExist(err) {
		t.Errorf("the rejected pod has a folder %s (stat: %v)", f.podDir(pod), err)
	}
	if cgroups := f.podCgroups(pod); len(cgroups) != 0 {
		t.Errorf("the rejected pod has cgroups: %s", strings.Join(cgroups, ", "))
	}
	for _, cs := range failed.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.ContainerID != "" {
			t.Errorf("container %s of the rejected pod ran: %s", cs.Name, describeState(cs.State))
		}
	}
	return failed
}

func TestPodForAnotherOSIsRejected(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)

	byField := f.createPod(t, newPod(ns, "windows-field").with(func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	}).obj())
	byLabel := f.createPod(t, newPod(ns, "windows-label").with(func(p *corev1.Pod) {
		p.Labels = map[string]string{corev1.LabelOSStable: "windows"}
	}).obj())
	linux := f.createPod(t, newPod(ns, "linux-field").with(func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		p.Labels = map[string]string{corev1.LabelOSStable: "linux"}
	}).obj())

	f.waitRejected(t, byField, "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
	f.waitRejected(t, byLabel, "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
	f.waitForPod(t, linux, podStartTimeout, "to be Running and Ready", runningAndReady)
}

func TestUnsafeSysctlIsRejectedAndSafeOneIsSet(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	sysctls := func(names ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
			for _, n := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
			}
		}
	}

	unsafe := f.createPod(t, newPod(ns, "unsafe").with(sysctls("kernel.shm_rmid_forced", "net.core.somaxconn")).obj())
	// A net sysctl with hostNetwork is refused by the API server's
	// validation already; admission's own refusal is in its unit table.
	// A safe one, written with slashes, reaches the container.
	safe := f.createPod(t, newPod(ns, "safe").with(sysctls("kernel/shm_rmid_forced")).
		withShell("cat /proc/sys/kernel/shm_rmid_forced; exec sleep 3600").obj())

	f.waitRejected(t, unsafe, "SysctlForbidden", `forbidden sysctl: "net.core.somaxconn" not allowlisted`)
	safe = f.waitForPod(t, safe, podStartTimeout, "to be Running and Ready", runningAndReady)
	// The CRI log line of the value the container read.
	f.waitForLog(t, safe, "app", 0, "stdout F 1\n", probeTimeout)
}
