package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// apiServerStoppedFor is how long the API server is stopped: long enough
// for a pod to start, short of the controller-manager's node monitor grace
// period (40 s), past which it would mark the node unreachable and the
// rest of the suite would see that.
const apiServerStoppedFor = 25 * time.Second

// TestStaticPodsRunWhileTheAPIServerIsStopped: what static pods are for
// (kubeadm's API server is one): with the API server stopped (SIGSTOP, so
// that it answers nothing), a running static pod keeps running, and a
// manifest written meanwhile starts its pod, seen through the runtime;
// once the API server is back, both mirror pods show them Running, the
// first one never restarted. Not parallel: every other test would see
// the API server stop.
func TestStaticPodsRunWhileTheAPIServerIsStopped(t *testing.T) {
	if f.Env.StaticPodDir == "" {
		t.Fatal("the stack's env names no STATIC_POD_DIR: bring the stack up with this tree's hack/local-up.sh")
	}
	ns := f.NewNamespace(t)
	writeManifest := func(name string) {
		path := filepath.Join(f.Env.StaticPodDir, ns+"-"+name+".yaml")
		tmp := filepath.Join(f.Env.StaticPodDir, "."+ns+"-"+name+".yaml.tmp")
		if err := os.WriteFile(tmp, []byte(staticManifest(ns, name, name)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(path) })
	}
	writeManifest("before")
	before := types.NamespacedName{Namespace: ns, Name: "before-" + f.Env.NodeName}
	mirror := waitForMirror(t, before, "Running", aRunningMirror(""))
	beforeContainer := mirror.Status.ContainerStatuses[0].ContainerID

	pid, err := apiServerPID(f.Env.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the API server: %v", err)
	}
	stopped := true
	resume := func() {
		if stopped {
			stopped = false
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("letting the API server go on: %v", err)
			}
		}
	}
	// However the test ends, the API server goes on.
	t.Cleanup(resume)
	stoppedAt := time.Now()

	writeManifest("during")
	ctx, cancel := context.WithDeadline(t.Context(), stoppedAt.Add(apiServerStoppedFor))
	defer cancel()
	during := types.NamespacedName{Namespace: ns, Name: "during-" + f.Env.NodeName}
	started := await.Poll(ctx, apiServerStoppedFor, func(ctx context.Context) error {
		return f.runningInRuntime(ctx, during)
	})
	stillRunning := f.runningInRuntime(t.Context(), before)
	startedIn := time.Since(stoppedAt)
	resume()
	if started != nil {
		t.Fatalf("with the API server stopped, the static pod %s did not start within %s: %v", during, apiServerStoppedFor, started)
	}
	t.Logf("with the API server stopped, %s started in %s", during, startedIn.Round(time.Millisecond))
	if stillRunning != nil {
		t.Errorf("with the API server stopped, %s stopped running: %v", before, stillRunning)
	}

	waitForMirror(t, during, "Running once the API server is back", aRunningMirror(""))
	again := waitForMirror(t, before, "Running once the API server is back", aRunningMirror(mirror.Annotations["kubernetes.io/config.mirror"]))
	if got := again.Status.ContainerStatuses[0]; got.ContainerID != beforeContainer || got.RestartCount != 0 {
		t.Errorf("%s's container after the API server's stop: %s (restarts %d), want %s unrestarted", before, got.ContainerID, got.RestartCount, beforeContainer)
	}
}

// runningInRuntime is nil when the runtime runs a ready sandbox of the
// pod named key with every container running: what the node does, read
// without the API server.
func (f *Framework) runningInRuntime(ctx context.Context, key types.NamespacedName) error {
	sandboxes, err := f.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{
			"io.kubernetes.pod.name":      key.Name,
			"io.kubernetes.pod.namespace": key.Namespace,
		},
	})
	if err != nil {
		return err
	}
	if len(sandboxes) != 1 {
		return fmt.Errorf("%d ready sandboxes, want 1", len(sandboxes))
	}
	containers, err := f.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sandboxes[0].Id})
	if err != nil {
		return err
	}
	running := 0
	for _, c := range containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	if running != 1 {
		return fmt.Errorf("%d running containers, want 1: %s", running, describeContainers(containers))
	}
	return nil
}

// apiServerPID is the stack's API server's process, from the PID file the
// stack's scripts write; a PID recycled by another process is refused, as
// the stack's daemons name its state folder on their command line.
func apiServerPID(stateDir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, "run", "kube-apiserver.pid"))
	if err != nil {
		return 0, fmt.Errorf("reading the API server's PID: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("the API server's PID file: %w", err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), stateDir) {
		return 0, fmt.Errorf("the API server (pid %d) is not running", pid)
	}
	return pid, nil
}
