package runtime

// exitSettlesAt is pure; GetPodStatus's wait for a SIGKILL's report to
// settle runs against the CRI fake of k8s.io/cri-api/pkg/apis/testing
// (FakeRuntimeService) with a fake clock.

import (
	"context"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestExitSettlesAt(t *testing.T) {
	finished := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	exited := func(code int32, reason string) *kubecontainer.ContainerStatus {
		return &kubecontainer.ContainerStatus{State: kubecontainer.ContainerExited, ExitCode: code, Reason: reason, FinishedAt: finished}
	}
	cases := []struct {
		name      string
		container *kubecontainer.ContainerStatus
		stopped   bool
		now       time.Time
		unsettled bool
	}{
		{"a SIGKILL reported as Error just now", exited(137, "Error"), false, finished.Add(100 * time.Millisecond), true},
		{"a SIGKILL reported as Error a period ago", exited(137, "Error"), false, finished.Add(exitSettlePeriod), false},
		{"a SIGKILL nodelet sent", exited(137, "Error"), true, finished, false},
		{"an OOM kill the runtime reported", exited(137, "OOMKilled"), false, finished, false},
		{"another exit code", exited(1, "Error"), false, finished, false},
		{"a running container", &kubecontainer.ContainerStatus{State: kubecontainer.ContainerRunning}, false, finished, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			settles, unsettled := exitSettlesAt(tc.container, tc.stopped, tc.now)
			if unsettled != tc.unsettled {
				t.Fatalf("unsettled = %v, want %v", unsettled, tc.unsettled)
			}
			if unsettled && !settles.Equal(finished.Add(exitSettlePeriod)) {
				t.Errorf("settles at %v, want a period after the exit", settles)
			}
		})
	}
}

// settleTestEnv holds one exited container of pod uid-1, killed by
// SIGKILL and reported as Error at the fake clock's now.
func settleTestEnv(t *testing.T) (*syncTestEnv, string) {
	e := newSyncTestEnv(t)
	const id = "container-1"
	e.runtime.SetFakeContainers([]*critest.FakeContainer{{
		SandboxID: "sandbox-1",
		ContainerStatus: runtimeapi.ContainerStatus{
			Id:         id,
			Metadata:   &runtimeapi.ContainerMetadata{Name: "app"},
			State:      runtimeapi.ContainerState_CONTAINER_EXITED,
			CreatedAt:  e.clock.Now().Add(-time.Minute).UnixNano(),
			FinishedAt: e.clock.Now().UnixNano(),
			ExitCode:   137,
			Reason:     "Error",
			Labels:     map[string]string{kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelContainerName: "app"},
		},
	}})
	return e, id
}

// readStatus runs GetPodStatus, returning its result on the channel.
func readStatus(e *syncTestEnv) <-chan *kubecontainer.PodStatus {
	done := make(chan *kubecontainer.PodStatus, 1)
	go func() {
		status, err := e.m.GetPodStatus(context.Background(), "uid-1")
		if err != nil {
			status = nil
		}
		done <- status
	}()
	return done
}

func TestGetPodStatusWaitsForTheRuntimeToReportAnOOMKill(t *testing.T) {
	e, id := settleTestEnv(t)
	done := readStatusWaiting(t, e)
	// The runtime's OOM event arrives while nodelet waits.
	e.runtime.Lock()
	e.runtime.Containers[id].Reason = "OOMKilled"
	e.runtime.Unlock()
	e.clock.Step(exitSettlePeriod)
	wantReason(t, <-done, "OOMKilled", "as the runtime reports it after the wait")
}

// readStatusWaiting runs GetPodStatus and returns once it waits for the
// exit to settle, its result to come on the channel.
func readStatusWaiting(t *testing.T, e *syncTestEnv) <-chan *kubecontainer.PodStatus {
	t.Helper()
	done := readStatus(e)
	deadline := time.Now().Add(10 * time.Second)
	for !e.clock.HasWaiters() {
		select {
		case status := <-done:
			t.Fatalf("GetPodStatus returned without waiting for the exit to settle: %+v", status)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("GetPodStatus never waited")
		}
		time.Sleep(time.Millisecond)
	}
	return done
}

// wantReason checks that status holds the one container, with reason.
func wantReason(t *testing.T, status *kubecontainer.PodStatus, reason, why string) {
	t.Helper()
	if status == nil || len(status.Containers) != 1 {
		t.Fatalf("GetPodStatus = %+v, want the one container", status)
	}
	if got := status.Containers[0].Reason; got != reason {
		t.Errorf("reason = %q, want %s %s", got, reason, why)
	}
}

func TestGetPodStatusDoesNotWaitForAStopNodeletAskedFor(t *testing.T) {
	e, id := settleTestEnv(t)
	pod := syncTestPod()
	e.runtime.Lock()
	e.runtime.Containers[id].State = runtimeapi.ContainerState_CONTAINER_RUNNING
	e.runtime.Unlock()
	if err := e.m.killContainer(context.Background(), pod, containerKill{ID: kubecontainer.ContainerID{ID: id}, Name: "app"}, "", nil); err != nil {
		t.Fatal(err)
	}
	// The fake stops at once; the container ignored its SIGTERM.
	e.runtime.Lock()
	e.runtime.Containers[id].FinishedAt = e.clock.Now().UnixNano()
	e.runtime.Containers[id].ExitCode = 137
	e.runtime.Unlock()
	done := readStatus(e)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case status := <-done:
			if status == nil || len(status.Containers) != 1 || status.Containers[0].Reason != "Error" {
				t.Fatalf("GetPodStatus = %+v, want the container's exit as reported", status)
			}
			return
		default:
		}
		if e.clock.HasWaiters() {
			t.Fatal("GetPodStatus waited on a SIGKILL nodelet sent")
		}
		if time.Now().After(deadline) {
			t.Fatal("GetPodStatus did not return")
		}
		time.Sleep(time.Millisecond)
	}
}

// kernelLog stands in for package oomwatch's Watcher: the containers the
// kernel's log named as OOM-killed.
type kernelLog struct {
	mu     sync.Mutex
	killed map[string]bool
}

func (k *kernelLog) kill(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed == nil {
		k.killed = map[string]bool{}
	}
	k.killed[id] = true
}

func (k *kernelLog) Killed(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killed[id]
}

func TestGetPodStatusTakesAnOOMKillTheKernelLoggedWithoutWaiting(t *testing.T) {
	e, id := settleTestEnv(t)
	kernel := &kernelLog{}
	kernel.kill(id)
	e.m.config.OOMKills = kernel
	status, err := e.m.GetPodStatus(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, status, "OOMKilled", "as the kernel logged it, without a wait")
	if code := status.Containers[0].ExitCode; code != 137 {
		t.Errorf("exit code = %d, want the runtime's 137", code)
	}
}

func TestGetPodStatusTakesAnOOMKillTheRuntimeNeverReports(t *testing.T) {
	e, id := settleTestEnv(t)
	kernel := &kernelLog{}
	e.m.config.OOMKills = kernel
	done := readStatusWaiting(t, e)
	// The kernel's log is read while nodelet waits; the runtime's OOM
	// event never comes.
	kernel.kill(id)
	e.clock.Step(exitSettlePeriod)
	wantReason(t, <-done, "OOMKilled", "as the kernel logged it")
}

func TestGetPodStatusKeepsAPlainSIGKILLTheKernelDidNotLog(t *testing.T) {
	e, _ := settleTestEnv(t)
	kernel := &kernelLog{}
	kernel.kill("another-container")
	e.m.config.OOMKills = kernel
	// Past the settle period: no wait, the report is final.
	e.clock.Step(exitSettlePeriod)
	status, err := e.m.GetPodStatus(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, status, "Error", "as the runtime reported it")
}
