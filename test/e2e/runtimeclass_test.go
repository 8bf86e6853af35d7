package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// runtimeHandlerAlt is the second name the stack's containerd gives runc
// (hack/lib.sh), for RuntimeClasses to name.
const runtimeHandlerAlt = "runc-alt"

// createRuntimeClass creates a RuntimeClass named after the namespace,
// removed when the test ends.
func (f *Framework) createRuntimeClass(t *testing.T, name, handler string) {
	t.Helper()
	_, err := f.Client.NodeV1().RuntimeClasses().Create(t.Context(), &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Handler:    handler,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating RuntimeClass %s: %v", name, err)
	}
	t.Cleanup(func() { f.deleteRuntimeClass(t, name) })
}

func (f *Framework) deleteRuntimeClass(t *testing.T, name string) {
	err := f.Client.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting RuntimeClass %s: %v", name, err)
	}
}

func TestRuntimeClassHandlerReachesTheRuntime(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	f.createRuntimeClass(t, ns, runtimeHandlerAlt)

	pod := f.createPod(t, newPod(ns, "alt").with(func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To(ns) }).obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	sandboxes := f.runtimeSandboxes(t, pod.UID)
	if len(sandboxes) != 1 {
		t.Fatalf("the runtime holds %d sandboxes of the pod, want 1: %s", len(sandboxes), describeSandboxes(sandboxes))
	}
	status, err := f.Runtime.PodSandboxStatus(t.Context(), sandboxes[0].Id, true)
	if err != nil {
		t.Fatalf("reading the sandbox's status: %v", err)
	}
	got := status.GetStatus().GetRuntimeHandler()
	if got == "" {
		got = sandboxes[0].RuntimeHandler
	}
	if got != runtimeHandlerAlt {
		t.Errorf("the sandbox's runtime handler = %q, want %q (verbose info: %s)", got, runtimeHandlerAlt, status.GetInfo()["info"])
	}
}

func TestMissingRuntimeClassFailsTheSandboxUntilItExists(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The API server refuses a pod naming a RuntimeClass that does not
	// exist; one that is deleted after the pod was made is what the node
	// meets. No scheduler serves the pod's; it is bound by hand once its
	// RuntimeClass is gone.
	f.createRuntimeClass(t, ns, runtimeHandlerAlt)
	pod := f.createPod(t, newPod(ns, "missing").with(func(p *corev1.Pod) {
		p.Spec.RuntimeClassName = ptr.To(ns)
		p.Spec.SchedulerName = "no-scheduler"
	}).obj())
	f.deleteRuntimeClass(t, ns)
	err := f.Client.CoreV1().Pods(ns).Bind(t.Context(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: f.Env.NodeName},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("binding pod %s/%s: %v", ns, pod.Name, err)
	}

	f.waitForEvent(t, pod, "FailedCreatePodSandBox", `Failed to create pod sandbox: runtimeclass.node.k8s.io "`+ns+`" not found`, podStartTimeout)
	waiting := f.getPod(t, pod)
	if app := containerStatus(waiting, "app"); waiting.Status.Phase != corev1.PodPending || app == nil ||
		app.State.Waiting == nil || app.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("a pod whose RuntimeClass is missing: %s; want Pending, its container waiting in ContainerCreating", describePod(waiting))
	}
	if sandboxes := f.runtimeSandboxes(t, pod.UID); len(sandboxes) != 0 {
		t.Errorf("the runtime holds sandboxes of the pod: %s", describeSandboxes(sandboxes))
	}

	// Once the RuntimeClass exists, a later try runs the pod.
	f.createRuntimeClass(t, ns, runtimeHandlerAlt)
	f.waitForPod(t, waiting, podStartTimeout, "to be Running and Ready", runningAndReady)
}

func TestUserNamespaceIsRefusedWhereTheRuntimeCannotGiveOne(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "userns").with(func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false) }).obj())

	// containerd 1.6 lists no runtime handlers in its status: under the
	// kubelet too it cannot give a pod a user namespace.
	f.waitForEvent(t, pod, "FailedCreatePodSandBox",
		"Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces", podStartTimeout)
	waiting := f.getPod(t, pod)
	if waiting.Status.Phase != corev1.PodPending {
		t.Errorf("the pod: %s; want Pending", describePod(waiting))
	}
	if sandboxes := f.runtimeSandboxes(t, pod.UID); len(sandboxes) != 0 {
		t.Errorf("the runtime holds sandboxes of the pod: %s", describeSandboxes(sandboxes))
	}
}

func TestPrivilegedEphemeralContainerRunsInAnUnprivilegedPod(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "debugged").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// Only a privileged container may mount; the runtime refuses to create
	// one against a sandbox config that is not privileged.
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name:            "privileged",
			Image:           busyboxImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"sh", "-c", "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m && echo mounted"},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		},
	})
	updated, err := f.Client.CoreV1().Pods(ns).UpdateEphemeralContainers(t.Context(), pod.Name, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("adding the ephemeral container: %v", err)
	}
	done := f.waitForPod(t, updated, probeTimeout, "to run the privileged ephemeral container to its end", func(p *corev1.Pod) (bool, error) {
		s := ephemeralStatus(p, "privileged")
		return s != nil && s.State.Terminated != nil, nil
	})
	if s := ephemeralStatus(done, "privileged"); s.State.Terminated.ExitCode != 0 {
		t.Errorf("the privileged ephemeral container: %s, want exit 0", describeState(s.State))
	}
	log := f.waitForLog(t, done, "privileged", 0, "mounted", 30*time.Second)
	if !strings.Contains(log, "stdout F mounted") {
		t.Errorf("the privileged ephemeral container's log:\n%s", log)
	}
}
