package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

const podStartTimeout = 2 * time.Minute

func TestSleepingPodRunsReadyWithAddressesAndBoundToken(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "sleeper").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	node, err := f.Client.CoreV1().Nodes().Get(t.Context(), f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting node %s: %v", f.Env.NodeName, err)
	}
	_, podCIDR, err := net.ParseCIDR(node.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s has no usable spec.podCIDR %q: %v", node.Name, node.Spec.PodCIDR, err)
	}
	if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !podCIDR.Contains(ip) {
		t.Errorf("podIP = %q, want an address in the node's podCIDR %s", pod.Status.PodIP, podCIDR)
	}
	if pod.Status.HostIP != "127.0.0.1" {
		t.Errorf("hostIP = %q, want 127.0.0.1", pod.Status.HostIP)
	}
	app := containerStatus(pod, "app")
	if app == nil {
		t.Fatalf("no status for container app: %s", describePod(pod))
	}
	if !strings.HasPrefix(app.ContainerID, "containerd://") {
		t.Errorf("containerID = %q, want containerd://...", app.ContainerID)
	}
	if app.ImageID == "" {
		t.Errorf("imageID is empty, want the image's ID")
	}

	// The token is read where the container reads it: in the projected
	// volume's folder on the host.
	pattern := filepath.Join(f.podDir(pod), "volumes", "kubernetes.io~projected", "kube-api-access-*", "token")
	paths, _ := filepath.Glob(pattern)
	if len(paths) != 1 {
		t.Fatalf("token files matching %s = %v, want exactly one", pattern, paths)
	}
	token, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatalf("reading the pod's token: %v", err)
	}
	review := f.reviewToken(t, string(token))
	if !review.Authenticated {
		t.Fatalf("TokenReview of the live pod's token: not authenticated (error %q)", review.Error)
	}
	if want := "system:serviceaccount:" + ns + ":default"; review.User.Username != want {
		t.Errorf("TokenReview user = %q, want %q", review.User.Username, want)
	}

	f.deletePod(t, pod, nil)
	f.waitForPodGone(t, pod, time.Minute)
	// The API server checks the pod a bound token names through its own
	// informers, which may lag the deletion a little.
	await.Eventually(t, 30*time.Second, "the deleted pod's token to fail a TokenReview", await.Condition(func(ctx context.Context) (bool, error) {
		return !f.reviewToken(t, string(token)).Authenticated, nil
	}))
}

func (f *Framework) reviewToken(t *testing.T, token string) authenticationv1.TokenReviewStatus {
	t.Helper()
	review, err := f.Client.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a TokenReview: %v", err)
	}
	return review.Status
}

func TestRestartNeverPodEndsInPhaseOfItsExit(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)

	t.Run("exit 0 ends Succeeded", func(t *testing.T) {
		t.Parallel()
		pod := f.createPod(t, newPod(ns, "exit-0").withRestartPolicy(corev1.RestartPolicyNever).withShell("exit 0").obj())
		f.waitForPod(t, pod, podStartTimeout, "to be Succeeded", func(pod *corev1.Pod) (bool, error) {
			return pod.Status.Phase == corev1.PodSucceeded, failedIfPhase(pod, corev1.PodFailed)
		})
	})

	t.Run("exit 1 ends Failed with reason Error and exit code 1", func(t *testing.T) {
		t.Parallel()
		pod := f.createPod(t, newPod(ns, "exit-1").withRestartPolicy(corev1.RestartPolicyNever).withShell("exit 1").obj())
		pod = f.waitForPod(t, pod, podStartTimeout, "to be Failed", func(pod *corev1.Pod) (bool, error) {
			return pod.Status.Phase == corev1.PodFailed, failedIfPhase(pod, corev1.PodSucceeded)
		})
		app := containerStatus(pod, "app")
		if app == nil || app.State.Terminated == nil {
			t.Fatalf("container app is not terminated in the Failed pod: %s", describePod(pod))
		}
		if got := app.State.Terminated; got.Reason != "Error" || got.ExitCode != 1 {
			t.Errorf("container app terminated with reason %q exit code %d, want reason Error exit code 1", got.Reason, got.ExitCode)
		}
	})
}

// failedIfPhase makes a wait fail at once when the pod reaches a terminal
// phase it must not reach.
func failedIfPhase(pod *corev1.Pod, wrong corev1.PodPhase) error {
	if pod.Status.Phase == wrong {
		return fmt.Errorf("the pod ended in phase %s", wrong)
	}
	return nil
}

func TestCrashLoopBackOffWithGrowingDelaysAndOneDeadContainerKept(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "crasher").withShell("exit 1").obj())

	// Each restart is timestamped when the watch first shows its count.
	restartSeen := map[int32]time.Time{}
	pod = f.waitForPod(t, pod, 4*time.Minute, "to be back in CrashLoopBackOff after its third restart", func(pod *corev1.Pod) (bool, error) {
		now := time.Now()
		app := containerStatus(pod, "app")
		if app == nil {
			return false, nil
		}
		if _, seen := restartSeen[app.RestartCount]; !seen {
			restartSeen[app.RestartCount] = now
		}
		return app.RestartCount >= 3 && waitingReason(pod, "app") == "CrashLoopBackOff", nil
	})
	app := containerStatus(pod, "app")
	if last := app.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 {
		t.Errorf("lastState = %s, want terminated with exit code 1", describeState(app.LastTerminationState))
	}
	for count := int32(1); count <= 3; count++ {
		if _, seen := restartSeen[count]; !seen {
			t.Fatalf("restartCount went %v without showing %d, so the gaps cannot be measured", restartSeen, count)
		}
	}
	gap12 := restartSeen[2].Sub(restartSeen[1])
	gap23 := restartSeen[3].Sub(restartSeen[2])
	t.Logf("restart 1→2 after %s, 2→3 after %s", gap12.Round(time.Millisecond), gap23.Round(time.Millisecond))
	if gap23 <= gap12 {
		t.Errorf("gap between restarts 2 and 3 (%s) is not longer than between 1 and 2 (%s): the back-off does not grow", gap23, gap12)
	}

	// While the container backs off, the runtime keeps exactly one dead
	// instance (the one lastState describes) besides at most one live one.
	// Pruning follows the exit asynchronously, hence a short wait.
	var containers []*runtimeapi.Container
	err := await.Poll(t.Context(), 10*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		var err error
		containers, err = f.listContainers(ctx, pod.UID, "app")
		if err != nil {
			return false, err
		}
		exited, live := 0, 0
		for _, c := range containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				exited++
			} else {
				live++
			}
		}
		return exited == 1 && live <= 1, nil
	}))
	if err != nil {
		t.Errorf("runtime containers of app = %s, want exactly one exited and at most one other: %v", describeContainers(containers), err)
	}
}

func TestInitContainersRunInOrderBeforeTheAppContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "init-order").
		withShell("cat /shared/order; exec sleep 3600").
		withInitContainer("init-1", "echo 1 >> /shared/order").
		withInitContainer("init-2", "echo 2 >> /shared/order").
		withEmptyDir("shared", "/shared").
		obj()
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	logPath := filepath.Join(f.podLogDir(pod), "app", "0.log")
	var lines []string
	await.Eventually(t, 30*time.Second, "two lines in "+logPath, await.Condition(func(ctx context.Context) (bool, error) {
		lines = readCRILog(t, logPath)
		return len(lines) >= 2, nil
	}))
	if diff := cmp.Diff([]string{"1", "2"}, lines); diff != "" {
		t.Errorf("app's log (-want +got):\n%s", diff)
	}

	for _, name := range []string{"init-1", "init-2"} {
		status := containerStatus(pod, name)
		if status == nil || status.State.Terminated == nil {
			t.Errorf("init container %s is not terminated: %s", name, describePod(pod))
			continue
		}
		if got := status.State.Terminated; got.Reason != "Completed" || got.ExitCode != 0 {
			t.Errorf("init container %s terminated with reason %q exit code %d, want Completed exit code 0", name, got.Reason, got.ExitCode)
		}
	}
}

// readCRILog reads a container log file in the CRI format
// (`<time> <stream> <tag> <message>`) and returns stdout's full lines.
func readCRILog(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading container log: %v", err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		fields := strings.SplitN(line, " ", 4)
		if len(fields) == 4 && fields[1] == "stdout" && fields[2] == "F" {
			lines = append(lines, fields[3])
		}
	}
	return lines
}

func TestFailingInitContainerFailsPodUnderNeverWithoutStartingApp(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "init-fails").
		withRestartPolicy(corev1.RestartPolicyNever).
		withInitContainer("init", "exit 1").
		obj()
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Failed", func(pod *corev1.Pod) (bool, error) {
		return pod.Status.Phase == corev1.PodFailed, failedIfPhase(pod, corev1.PodSucceeded)
	})

	if reason := waitingReason(pod, "app"); reason != "PodInitializing" {
		t.Errorf("container app: %s, want waiting PodInitializing", describePod(pod))
	}
	if containers := f.runtimeContainers(t, pod.UID, "app"); len(containers) != 0 {
		t.Errorf("runtime containers of app = %s, want none", describeContainers(containers))
	}
}
