package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// A container the runtime reports exited while it keeps a running task
// for it, as containerd 1.6 does for a start a nodelet SIGKILL cut short
// ("failed to get task pid: context canceled"), does not hold its Pod:
// stopping the pod leaves such a container alone and the runtime refuses
// to remove it ("cannot delete running task"), so nodelet kills what is
// left in the pod's cgroup, as the kubelet does, and the Pod leaves the
// API server; what the runtime kept goes once the runtime lets go of it.
//
// The task is made with containerd's own client, ctr: the container "once"
// runs to completion, and ctr starts a task for it again, which sleeps.
func TestAContainerTheRuntimeKeepsATaskOfDoesNotHoldItsDeletedPod(t *testing.T) {
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "leaked-task").
		withRestartPolicy(corev1.RestartPolicyNever).
		withGracePeriod(1).
		withContainer("once", `test -e /ran && exec sleep 3600; touch /ran`).
		obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "its container once to have completed, app running", func(p *corev1.Pod) (bool, error) {
		once, app := containerStatus(p, "once"), containerStatus(p, "app")
		if once != nil && once.State.Terminated != nil && once.State.Terminated.ExitCode != 0 {
			return false, fmt.Errorf("once failed: %s", describePod(p))
		}
		return once != nil && once.State.Terminated != nil && app != nil && app.State.Running != nil, nil
	})
	id := containerID(t, pod, "once")

	ctr := func(args ...string) (string, error) {
		socket := strings.TrimPrefix(f.Env.CRIEndpoint, "unix://")
		out, err := exec.CommandContext(t.Context(), "ctr", append([]string{"--address", socket, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := ctr("task", "start", "--detach", "--null-io", id); err != nil {
		t.Fatal(err)
	}
	var pid int
	await.Eventually(t, 30*time.Second, "the task ctr started to run", func(context.Context) error {
		out, err := ctr("task", "ls")
		if err != nil {
			return err
		}
		for line := range strings.Lines(out) {
			if fields := strings.Fields(line); len(fields) == 3 && fields[0] == id && fields[2] == "RUNNING" {
				pid, err = strconv.Atoi(fields[1])
				return err
			}
		}
		return fmt.Errorf("no running task %s in:\n%s", id, out)
	})
	// What the runtime reports is what nodelet goes by: exited.
	status, err := f.Runtime.ContainerStatus(t.Context(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	if state := status.GetStatus().GetState(); state != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("the runtime reports container once %s, want exited: the case shows nothing", state)
	}

	f.deletePod(t, pod, ptr.To[int64](1))
	f.waitForPodGone(t, pod, time.Minute)
	if running, err := processRunning(pid); running || err != nil {
		t.Errorf("the task's process %d outlived its Pod (%v)", pid, err)
	}
	left, err := f.podLeftovers(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"cgroups", "pod folder"} {
		if len(left[kind]) > 0 {
			t.Errorf("the Pod went with its %s still on the node: %v", kind, left[kind])
		}
	}

	// containerd 1.6 deletes only the tasks its CRI plugin started: this
	// one stays, stopped, until containerd restarts or its own client
	// deletes it, as here. nodelet, trying again as for an orphan (a
	// second after the Pod went, doubling up to housekeeping's 30 s), then
	// removes the rest.
	if _, err := ctr("task", "delete", id); err != nil {
		t.Fatal(err)
	}
	err = await.Poll(t.Context(), time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		left, err = f.podLeftovers(ctx, pod)
		return err == nil && len(left) == 0, err
	}))
	if err != nil {
		t.Errorf("a minute after the runtime let go of the task, still on the node: %v (%v)", left, err)
	}
}

// processRunning reports whether the process pid exists and has not
// exited (a zombie, not yet reaped, has).
func processRunning(pid int) (bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The state follows the command, which is in parentheses.
	_, rest, ok := strings.Cut(string(data), ") ")
	if !ok {
		return false, fmt.Errorf("reading /proc/%d/stat: %q", pid, data)
	}
	return rest[0] != 'Z' && rest[0] != 'X', nil
}
