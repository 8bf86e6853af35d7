package e2e

// Termination (activeDeadlineSeconds, grace periods, termination
// messages) and spec changes (a new image, ephemeral containers) on the
// real stack.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestActiveDeadlineFailsThePod(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	deadlineExceeded := func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	}
	check := func(p *corev1.Pod) {
		t.Helper()
		if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
			t.Errorf("pod %s failed with reason %q and message %q, want the kubelet's DeadlineExceeded", p.Name, p.Status.Reason, p.Status.Message)
		}
		if s := containerStatus(p, "app"); s == nil || s.State.Terminated == nil {
			t.Errorf("pod %s failed with its container not stopped: %s", p.Name, describePod(p))
		}
	}

	// A deadline from the start.
	pod := newPod(ns, "deadline").with(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](4) }).obj()
	pod = f.createPod(t, pod)
	failed := f.waitForPod(t, pod, podStartTimeout, "to fail at its deadline", deadlineExceeded)
	check(failed)
	f.waitForEvent(t, pod, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline", probeTimeout)

	// A deadline set on a running pod.
	late := f.createPod(t, newPod(ns, "deadline-later").obj())
	late = f.waitForPod(t, late, podStartTimeout, "to be Running and Ready", runningAndReady)
	patch := []byte(`{"spec":{"activeDeadlineSeconds":3}}`)
	if _, err := f.Client.CoreV1().Pods(ns).Patch(t.Context(), late.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting activeDeadlineSeconds on the running pod: %v", err)
	}
	check(f.waitForPod(t, late, time.Minute, "to fail at its new deadline", deadlineExceeded))
}

func TestTerminationMessages(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	never := func(b *podBuilder) *corev1.Pod { return b.withRestartPolicy(corev1.RestartPolicyNever).obj() }
	// Written to the file, at a path of the pod's choosing.
	file := never(newPod(ns, "file").withShell(`echo "all done" > /tmp/last-words; exit 0`).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].TerminationMessagePath = "/tmp/last-words"
	}))
	// Succeeded after writing the file, with the log as a fallback: the
	// file, which the kubelet reads first whatever the policy.
	fileFirst := never(newPod(ns, "file-first").withShell(`echo "from the file" > /dev/termination-log; echo "from the log"; exit 0`).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}))
	// Failed without writing the file: the end of the log stands in.
	logs := never(newPod(ns, "logs").withShell(`echo first line; echo "last line"; exit 3`).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}))
	// Succeeded: the log does not stand in.
	quiet := never(newPod(ns, "quiet").withShell(`echo not a message`).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}))
	want := map[string]string{"file": "all done\n", "file-first": "from the file\n", "logs": "first line\nlast line\n", "quiet": ""}
	for _, pod := range []*corev1.Pod{file, fileFirst, logs, quiet} {
		pod = f.createPod(t, pod)
		done := f.waitForPod(t, pod, podStartTimeout, "to finish", func(p *corev1.Pod) (bool, error) {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
		})
		s := containerStatus(done, "app")
		if s.State.Terminated == nil {
			t.Errorf("pod %s finished without its container terminated: %s", pod.Name, describePod(done))
			continue
		}
		if got := s.State.Terminated.Message; got != want[pod.Name] {
			t.Errorf("pod %s: terminated.message = %q, want %q", pod.Name, got, want[pod.Name])
		}
	}
}

func TestImageChangeRestartsThatContainerOnly(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "new-image").withContainer("other", "exec sleep 3600").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	otherID := containerStatus(pod, "other").ContainerID

	// The same image under another name: its digest.
	image := strings.Split(busyboxImage, ":")
	digest := f.registryDigest(t, "busybox", image[len(image)-1])
	newImage := f.Env.Registry + "/busybox@" + digest
	patch := fmt.Appendf(nil, `{"spec":{"containers":[{"name":"app","image":%q}]}}`, newImage)
	if _, err := f.Client.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("changing the app container's image: %v", err)
	}
	restarted := f.waitForPod(t, pod, 2*time.Minute, "to run app with the new image", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return s != nil && s.RestartCount == 1 && s.State.Running != nil && podReady(p), nil
	})
	if other := containerStatus(restarted, "other"); other.RestartCount != 0 || other.ContainerID != otherID {
		t.Errorf("container other restarted (restarts %d, id %s, was %s)", other.RestartCount, other.ContainerID, otherID)
	}
	f.waitForEvent(t, pod, "Killing", "Container app definition changed, will be restarted", probeTimeout)
}

// registryDigest asks the stack's registry for an image's manifest digest.
func (f *Framework) registryDigest(t *testing.T, name, tag string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, fmt.Sprintf("http://%s/v2/%s/manifests/%s", f.Env.Registry, name, tag), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Accept", "application/vnd.oci.image.manifest.v1+json")
	req.Header.Add("Accept", "application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("asking the registry for %s:%s: %v", name, tag, err)
	}
	resp.Body.Close()
	digest := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || digest == "" {
		t.Fatalf("the registry answered %s for %s:%s, digest %q", resp.Status, name, tag, digest)
	}
	return digest
}

func TestKubectlDebugAddsAnEphemeralContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "debugged").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// A debugger sharing the app's processes, and one that fails at once.
	f.mustKubectl(t, "debug", "-n", ns, pod.Name, "--image="+busyboxImage, "--container=debugger", "--target=app",
		"--", "sh", "-c", "ps; exec sleep 3600")
	f.mustKubectl(t, "debug", "-n", ns, pod.Name, "--image="+busyboxImage, "--container=oneshot", "--", "sh", "-c", "exit 7")

	debugged := f.waitForPod(t, pod, probeTimeout, "to report both ephemeral containers", func(p *corev1.Pod) (bool, error) {
		debugger, oneshot := ephemeralStatus(p, "debugger"), ephemeralStatus(p, "oneshot")
		return debugger != nil && debugger.State.Running != nil && oneshot != nil && oneshot.State.Terminated != nil, nil
	})
	if oneshot := ephemeralStatus(debugged, "oneshot"); oneshot.State.Terminated.ExitCode != 7 || oneshot.RestartCount != 0 {
		t.Errorf("ephemeral container oneshot = %s restarts=%d, want terminated with exit 7, never restarted",
			describeState(oneshot.State), oneshot.RestartCount)
	}
	// It sees the app's sleep: it joined the app's process namespace.
	f.waitForLog(t, debugged, "debugger", 0, "sleep 3600", 30*time.Second)
	// The pod itself goes on as it was.
	if app := containerStatus(debugged, "app"); app.RestartCount != 0 || !podReady(debugged) {
		t.Errorf("the debugged pod changed: %s", describePod(debugged))
	}
	// The failed one is not started again: the runtime holds one instance.
	await.Eventually(t, 10*time.Second, "the runtime to hold the one instance of oneshot", await.Condition(func(ctx context.Context) (bool, error) {
		containers, err := f.listContainers(ctx, pod.UID, "oneshot")
		return len(containers) == 1, err
	}))
}

func ephemeralStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.EphemeralContainerStatuses {
		if pod.Status.EphemeralContainerStatuses[i].Name == name {
			return &pod.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

func TestShorterGracePeriodOfASecondDeleteWins(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// Kept to its first delete's 120s, the pod would stay two minutes.
	pod := newPod(ns, "stubborn").
		withShell(`trap "echo TERM ignored" TERM; echo trap set; while true; do sleep 0.2; done`).
		withGracePeriod(300).
		obj()
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// Running is not yet trapping: a SIGTERM before the trap is set is
	// lost on the container's PID 1, which ignores what it does not handle.
	f.waitForLog(t, pod, "app", 0, "trap set", 30*time.Second)

	f.deletePod(t, pod, ptr.To[int64](120))
	logPath := filepath.Join(f.podLogDir(pod), "app", "0.log")
	await.Eventually(t, 30*time.Second, "the container to get SIGTERM", await.Condition(func(ctx context.Context) (bool, error) {
		data, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(data), "TERM ignored"), nil
	}))

	start := time.Now()
	f.deletePod(t, pod, ptr.To[int64](2))
	gone := f.waitForPodGone(t, pod, 2*time.Minute)
	took := gone.Sub(start)
	t.Logf("the pod left the API %s after the second delete", took.Round(time.Millisecond))
	// Half the first grace period: a wide margin for a loaded machine,
	// and still far from what the first delete would have taken.
	if limit := 60 * time.Second; took > limit {
		t.Errorf("the pod left the API %s after a delete with grace 2s following one with 120s, want within %s", took, limit)
	}
}
