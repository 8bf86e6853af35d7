package runtime

// GetPodStatus against the CRI fake of k8s.io/cri-api/pkg/apis/testing
// (FakeRuntimeService), wrapped so that each call of a round waits for
// the other calls of its round to have been made: a read that made them
// one after the other would never finish.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// rendezvousRuntime holds each call of a round until all of the round's
// calls have arrived, or fails it after a while.
type rendezvousRuntime struct {
	*recordingRuntime
	lists, statuses *rendezvous
}

type rendezvous struct {
	arrived chan struct{}
	want    int
}

// wait notes one call's arrival and waits until want have arrived.
func (r *rendezvous) wait(call string) error {
	r.arrived <- struct{}{}
	deadline := time.After(5 * time.Second)
	for len(r.arrived) < r.want {
		select {
		case <-deadline:
			return fmt.Errorf("%s waited for the other calls of its round, which never came: the calls are made one after the other", call)
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func newRendezvous(want int) *rendezvous {
	return &rendezvous{arrived: make(chan struct{}, want), want: want}
}

func (r *rendezvousRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := r.lists.wait("ListPodSandbox"); err != nil {
		return nil, err
	}
	return r.recordingRuntime.ListPodSandbox(ctx, filter)
}

func (r *rendezvousRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := r.lists.wait("ListContainers"); err != nil {
		return nil, err
	}
	return r.recordingRuntime.ListContainers(ctx, filter)
}

func (r *rendezvousRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.statuses.wait("PodSandboxStatus"); err != nil {
		return nil, err
	}
	return r.recordingRuntime.PodSandboxStatus(ctx, id, verbose)
}

func (r *rendezvousRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.statuses.wait("ContainerStatus " + id); err != nil {
		return nil, err
	}
	return r.recordingRuntime.ContainerStatus(ctx, id, verbose)
}

func TestGetPodStatusMakesTheCallsOfEachRoundAtOnce(t *testing.T) {
	e := newSyncTestEnv(t)
	labels := map[string]string{kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "default"}
	now := e.clock.Now()
	e.runtime.SetFakeSandboxes([]*critest.FakePodSandbox{{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id:        "sandbox-1",
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: now.Add(-time.Minute).UnixNano(),
		Labels:    labels,
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.244.0.5"},
	}}})
	var containers []*critest.FakeContainer
	for _, name := range []string{"app", "helper"} {
		containers = append(containers, &critest.FakeContainer{SandboxID: "sandbox-1", ContainerStatus: runtimeapi.ContainerStatus{
			Id:        "container-" + name,
			Metadata:  &runtimeapi.ContainerMetadata{Name: name},
			State:     runtimeapi.ContainerState_CONTAINER_RUNNING,
			CreatedAt: now.Add(-time.Minute).UnixNano(),
			StartedAt: now.Add(-time.Minute).UnixNano(),
			Labels:    map[string]string{kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelContainerName: name},
		}})
	}
	e.runtime.SetFakeContainers(containers)
	// Two lists, then the sandbox's status and the two containers'.
	e.m.runtime = &rendezvousRuntime{recordingRuntime: e.runtime, lists: newRendezvous(2), statuses: newRendezvous(3)}

	status, err := e.m.GetPodStatus(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if status.Name != "web" || status.Namespace != "default" {
		t.Errorf("pod = %s/%s, want default/web", status.Namespace, status.Name)
	}
	if len(status.Sandboxes) != 1 || len(status.Sandboxes[0].IPs) != 1 || status.Sandboxes[0].IPs[0] != "10.244.0.5" {
		t.Errorf("sandboxes = %+v, want sandbox-1 with its IP", status.Sandboxes)
	}
	names := map[string]bool{}
	for _, c := range status.Containers {
		names[c.Name] = c.State == kubecontainer.ContainerRunning
	}
	if len(status.Containers) != 2 || !names["app"] || !names["helper"] {
		t.Errorf("containers = %+v, want app and helper running", status.Containers)
	}
}

// A ready sandbox's status is asked of the runtime once: nothing in it
// changes while the sandbox stays ready. Once the runtime lists it as not
// ready, its state and the rest come from the list again.
func TestAReadySandboxsStatusIsReadOnce(t *testing.T) {
	e := newSyncTestEnv(t)
	now := e.clock.Now()
	sandbox := func(id string, state runtimeapi.PodSandboxState) *critest.FakePodSandbox {
		return &critest.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
			Id:        id,
			Metadata:  &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
			State:     state,
			CreatedAt: now.Add(-time.Minute).UnixNano(),
			Labels:    map[string]string{kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "default"},
			Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.244.0.5"},
		}}
	}
	statusCalls := func() int {
		n := 0
		for _, call := range e.runtime.GetCalls() {
			if call == "PodSandboxStatus" {
				n++
			}
		}
		return n
	}
	read := func(want kubecontainer.SandboxState) {
		t.Helper()
		status, err := e.m.GetPodStatus(context.Background(), "uid-1")
		if err != nil {
			t.Fatal(err)
		}
		// A sandbox not ready has no network worth reading.
		if len(status.Sandboxes) != 1 || status.Sandboxes[0].State != want ||
			(want == kubecontainer.SandboxReady) != slices.Equal(status.Sandboxes[0].IPs, []string{"10.244.0.5"}) {
			t.Fatalf("sandboxes = %+v, want one %s, with its IP when ready", status.Sandboxes, want)
		}
	}

	e.runtime.SetFakeSandboxes([]*critest.FakePodSandbox{sandbox("sandbox-1", runtimeapi.PodSandboxState_SANDBOX_READY)})
	read(kubecontainer.SandboxReady)
	read(kubecontainer.SandboxReady)
	if got := statusCalls(); got != 1 {
		t.Errorf("PodSandboxStatus called %d times for two reads of a ready sandbox, want 1", got)
	}
	// Stopped: the list says so, and the status known of it goes.
	e.runtime.SetFakeSandboxes([]*critest.FakePodSandbox{sandbox("sandbox-1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY)})
	read(kubecontainer.SandboxNotReady)
	if _, ok := e.m.readySandboxes.get("sandbox-1"); ok {
		t.Error("the status of a sandbox listed not ready is still kept")
	}
	// A new sandbox is a new ID: its status is read.
	e.runtime.SetFakeSandboxes([]*critest.FakePodSandbox{sandbox("sandbox-2", runtimeapi.PodSandboxState_SANDBOX_READY)})
	read(kubecontainer.SandboxReady)
	if got := statusCalls(); got != 2 {
		t.Errorf("PodSandboxStatus called %d times in all, want 2: once per ready sandbox", got)
	}
	// Gone from the runtime's list of the pod: forgotten.
	e.runtime.SetFakeSandboxes(nil)
	if _, err := e.m.GetPodStatus(context.Background(), "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.m.readySandboxes.get("sandbox-2"); ok {
		t.Error("the status of a sandbox the runtime no longer lists is still kept")
	}
}
