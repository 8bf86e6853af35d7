package runtime

// Removing dead containers and sandboxes against the CRI fake of
// k8s.io/cri-api/pkg/apis/testing, with log files in t.TempDir().

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// gcTestPod makes in the fake runtime a pod whose first sandbox is
// stopped and holds one dead app instance, and whose second sandbox is
// ready with two dead app instances, each with a log file, and a
// running one. It returns the container IDs, oldest first, and the
// sandboxes'.
func gcTestPod(t *testing.T, e *syncTestEnv) (containers, sandboxes []string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "default"}
	logDir := filepath.Join(e.logDir, "default_web_uid-1")
	for attempt := range 2 {
		config := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: uint32(attempt)},
			Labels:       labels,
			LogDirectory: logDir,
		}
		id, err := e.runtime.RunPodSandbox(ctx, config, "")
		if err != nil {
			t.Fatal(err)
		}
		sandboxes = append(sandboxes, id)
		instances := []bool{false}
		if attempt == 1 {
			instances = []bool{false, false, true}
			if err := e.runtime.StopPodSandbox(ctx, sandboxes[0]); err != nil {
				t.Fatal(err)
			}
		}
		for _, running := range instances {
			restart := len(containers)
			logPath := filepath.Join(logDir, containerLogPath("app", restart))
			if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath, []byte("log\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cid, err := e.runtime.CreateContainer(ctx, id, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: uint32(restart)},
				Image:    &runtimeapi.ImageSpec{Image: "busybox:1"},
				Labels:   map[string]string{kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "default", kubecontainer.LabelContainerName: "app"},
				LogPath:  containerLogPath("app", restart),
			}, config)
			if err != nil {
				t.Fatal(err)
			}
			// The fake reports no log path; containerd reports the
			// sandbox's log folder joined with the container's.
			e.runtime.Lock()
			e.runtime.Containers[cid].LogPath = logPath
			e.runtime.Unlock()
			if err := e.runtime.StartContainer(ctx, cid); err != nil {
				t.Fatal(err)
			}
			if !running {
				if err := e.runtime.StopContainer(ctx, cid, 0); err != nil {
					t.Fatal(err)
				}
			}
			containers = append(containers, cid)
		}
	}
	return containers, sandboxes
}

func (e *syncTestEnv) containerIDs(t *testing.T) []string {
	t.Helper()
	list, err := e.runtime.ListContainers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.Id)
	}
	slices.Sort(ids)
	return ids
}

func (e *syncTestEnv) sandboxIDs(t *testing.T) []string {
	t.Helper()
	list, err := e.runtime.ListPodSandbox(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sb := range list {
		ids = append(ids, sb.Id)
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

func TestPruneContainersKeepsTheNewestDeadInstanceAndItsLog(t *testing.T) {
	e := newSyncTestEnv(t)
	ctx := context.Background()
	containers, sandboxes := gcTestPod(t, e)
	status, err := e.m.GetPodStatus(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}

	if err := e.m.PruneContainers(ctx, status); err != nil {
		t.Fatalf("PruneContainers() error = %v", err)
	}

	// The running instance (3) and the newest dead one (2) stay, in the
	// ready sandbox; the older dead ones and the stopped sandbox go.
	if got, want := e.containerIDs(t), sorted(containers[2], containers[3]); !slices.Equal(got, want) {
		t.Errorf("containers left %v, want %v", got, want)
	}
	if got, want := e.sandboxIDs(t), sorted(sandboxes[1]); !slices.Equal(got, want) {
		t.Errorf("sandboxes left %v, want %v", got, want)
	}
	for restart, wantLog := range []bool{false, false, true, true} {
		_, err := os.Stat(filepath.Join(e.logDir, "default_web_uid-1", containerLogPath("app", restart)))
		if gotLog := err == nil; gotLog != wantLog {
			t.Errorf("log of instance %d present = %v, want %v", restart, gotLog, wantLog)
		}
	}
}

func TestRemoveDeadOfATerminatedPodLeavesNothingStopped(t *testing.T) {
	e := newSyncTestEnv(t)
	ctx := context.Background()
	containers, sandboxes := gcTestPod(t, e)
	if err := e.runtime.StopContainer(ctx, containers[3], 0); err != nil {
		t.Fatal(err)
	}
	if err := e.runtime.StopPodSandbox(ctx, sandboxes[1]); err != nil {
		t.Fatal(err)
	}
	status, err := e.m.GetPodStatus(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	// One already gone is no error.
	if err := e.runtime.RemoveContainer(ctx, containers[0]); err != nil {
		t.Fatal(err)
	}

	dead := DeadToRemove(status, true)
	removed, err := e.m.RemoveDead(ctx, status, dead)
	if err != nil {
		t.Fatalf("RemoveDead() error = %v", err)
	}
	if want := len(dead.Containers) + len(dead.Sandboxes); removed != want {
		t.Errorf("RemoveDead() removed %d, want %d", removed, want)
	}

	if got := e.containerIDs(t); len(got) != 0 {
		t.Errorf("containers left %v, want none", got)
	}
	if got := e.sandboxIDs(t); len(got) != 0 {
		t.Errorf("sandboxes left %v, want none", got)
	}
}

func TestRemoveDeadCountsOnlyWhatItRemoved(t *testing.T) {
	e := newSyncTestEnv(t)
	ctx := context.Background()
	gcTestPod(t, e)
	status, err := e.m.GetPodStatus(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	dead := DeadToRemove(status, true)
	if len(dead.Containers) < 2 {
		t.Fatalf("the test pod has %d dead containers, want at least 2", len(dead.Containers))
	}
	// The runtime refuses the first removal: that container is not counted.
	e.runtime.InjectError("RemoveContainer", errors.New("container is busy"))

	removed, err := e.m.RemoveDead(ctx, status, dead)
	if err == nil {
		t.Fatal("RemoveDead() error = nil, want the refused removal")
	}
	if want := len(dead.Containers) + len(dead.Sandboxes) - 1; removed != want {
		t.Errorf("RemoveDead() removed %d, want %d (all but the refused one)", removed, want)
	}
}
