package logs

// Tests of log rotation: the plan as a table, and RotateAll on real files
// in t.TempDir() against the CRI fake (k8s.io/cri-api/pkg/apis/testing),
// whose ReopenContainerLog makes a new file as a runtime would.

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPlanRotation(t *testing.T) {
	tests := map[string]struct {
		rotated  []string
		maxFiles int
		want     rotationPlan
	}{
		"nothing rotated yet": {maxFiles: 5},
		"the newest rotated file gets compressed": {
			rotated:  []string{"0.log.20260101-000000.gz", "0.log.20260101-000010"},
			maxFiles: 5,
			want:     rotationPlan{Compress: []string{"0.log.20260101-000010"}},
		},
		"the oldest go beyond max files": {
			rotated:  []string{"0.log.20260101-000030", "0.log.20260101-000000.gz", "0.log.20260101-000020.gz", "0.log.20260101-000010.gz"},
			maxFiles: 4,
			want: rotationPlan{
				Remove:   []string{"0.log.20260101-000000.gz", "0.log.20260101-000010.gz"},
				Compress: []string{"0.log.20260101-000030"},
			},
		},
		"two files: only the live one and the one rotated now": {
			rotated:  []string{"0.log.20260101-000000"},
			maxFiles: 2,
			want:     rotationPlan{Remove: []string{"0.log.20260101-000000"}},
		},
		"leftovers of an interrupted compression go": {
			rotated:  []string{"0.log.20260101-000000", "0.log.20260101-000000.gz", "0.log.20260101-000010", "0.log.20260101-000010.gz.tmp"},
			maxFiles: 5,
			want: rotationPlan{
				Remove:   []string{"0.log.20260101-000000", "0.log.20260101-000010.gz.tmp"},
				Compress: []string{"0.log.20260101-000010"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := planRotation(tc.rotated, tc.maxFiles)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("planRotation (-want +got):\n%s", diff)
			}
		})
	}
}

// reopeningRuntime is the CRI fake whose ReopenContainerLog starts a new
// log file, as containerd does.
type reopeningRuntime struct {
	*critesting.FakeRuntimeService
	reopenErr error
}

func (r *reopeningRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	if r.reopenErr != nil {
		return r.reopenErr
	}
	status, err := r.ContainerStatus(ctx, id, false)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(status.GetStatus().GetLogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

type rotationEnv struct {
	runtime *reopeningRuntime
	clock   *clocktesting.FakeClock
	rotator *Rotator
	dir     string
}

func newRotationEnv(t *testing.T, opts RotationOptions, containers map[string]runtimeapi.ContainerState) *rotationEnv {
	t.Helper()
	dir := t.TempDir()
	fake := critesting.NewFakeRuntimeService()
	var list []*critesting.FakeContainer
	for id, state := range containers {
		list = append(list, &critesting.FakeContainer{ContainerStatus: runtimeapi.ContainerStatus{
			Id:       id,
			Metadata: &runtimeapi.ContainerMetadata{Name: id},
			State:    state,
			LogPath:  filepath.Join(dir, id, "0.log"),
		}})
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake.SetFakeContainers(list)
	env := &rotationEnv{
		runtime: &reopeningRuntime{FakeRuntimeService: fake},
		clock:   clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		dir:     dir,
	}
	env.rotator = NewRotator(env.runtime, opts, env.clock, logr.Discard())
	return env
}

func (e *rotationEnv) write(t *testing.T, id, content string) {
	t.Helper()
	appendTo(t, filepath.Join(e.dir, id, "0.log"), content)
}

// files lists a container's log files with their content, compressed ones
// uncompressed.
func (e *rotationEnv) files(t *testing.T, id string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, id))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, entry := range entries {
		path := filepath.Join(e.dir, id, entry.Name())
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			r = zr
		}
		data, err := io.ReadAll(r)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[entry.Name()] = string(data)
	}
	return files
}

func TestRotateAllBySizeAndCount(t *testing.T) {
	env := newRotationEnv(t, RotationOptions{MaxSize: 10, MaxFiles: 3, Interval: time.Second}, map[string]runtimeapi.ContainerState{
		"running": runtimeapi.ContainerState_CONTAINER_RUNNING,
		"exited":  runtimeapi.ContainerState_CONTAINER_EXITED,
	})
	rotate := func() {
		t.Helper()
		if err := env.rotator.RotateAll(t.Context()); err != nil {
			t.Fatalf("RotateAll: %v", err)
		}
		env.clock.Step(10 * time.Second)
	}

	env.write(t, "running", "short\n")
	env.write(t, "exited", "a log longer than ten bytes\n")
	rotate()
	if diff := cmp.Diff(map[string]string{"0.log": "short\n"}, env.files(t, "running")); diff != "" {
		t.Errorf("a log under the size was rotated (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"0.log": "a log longer than ten bytes\n"}, env.files(t, "exited")); diff != "" {
		t.Errorf("the log of a stopped container was rotated (-want +got):\n%s", diff)
	}

	env.write(t, "running", "first file\n")
	rotate()
	env.write(t, "running", "second file\n")
	rotate()
	want := map[string]string{
		"0.log":                    "",
		"0.log.20260102-030415.gz": "short\nfirst file\n",
		"0.log.20260102-030425":    "second file\n",
	}
	if diff := cmp.Diff(want, env.files(t, "running")); diff != "" {
		t.Errorf("after two rotations (-want +got):\n%s", diff)
	}

	env.write(t, "running", "third file\n")
	rotate()
	want = map[string]string{
		"0.log":                    "",
		"0.log.20260102-030425.gz": "second file\n",
		"0.log.20260102-030435":    "third file\n",
	}
	if diff := cmp.Diff(want, env.files(t, "running")); diff != "" {
		t.Errorf("after three rotations, with at most 3 files (-want +got):\n%s", diff)
	}
}

func TestRotateAllPutsTheFileBackWhenTheRuntimeCannotReopen(t *testing.T) {
	env := newRotationEnv(t, RotationOptions{MaxSize: 1, MaxFiles: 3, Interval: time.Second}, map[string]runtimeapi.ContainerState{
		"c": runtimeapi.ContainerState_CONTAINER_RUNNING,
	})
	env.runtime.reopenErr = io.ErrClosedPipe
	env.write(t, "c", "kept\n")
	if err := env.rotator.RotateAll(t.Context()); err == nil {
		t.Errorf("RotateAll succeeded though the runtime could not reopen the log")
	}
	if diff := cmp.Diff(map[string]string{"0.log": "kept\n"}, env.files(t, "c")); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestRotateAllRecreatesAMissingLog(t *testing.T) {
	env := newRotationEnv(t, RotationOptions{MaxSize: 100, MaxFiles: 3, Interval: time.Second}, map[string]runtimeapi.ContainerState{
		"c": runtimeapi.ContainerState_CONTAINER_RUNNING,
	})
	if err := env.rotator.RotateAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range env.files(t, "c") {
		names = append(names, name)
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"0.log"}, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestRotateAllNeverOverwritesARotatedFile(t *testing.T) {
	env := newRotationEnv(t, RotationOptions{MaxSize: 1, MaxFiles: 5, Interval: time.Second}, map[string]runtimeapi.ContainerState{
		"c": runtimeapi.ContainerState_CONTAINER_RUNNING,
	})
	env.write(t, "c", "one\n")
	if err := env.rotator.RotateAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Within the same second, the rotated name is taken: the next round
	// rotates.
	env.write(t, "c", "two\n")
	if err := env.rotator.RotateAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0.log": "two\n", "0.log.20260102-030405": "one\n"}
	if diff := cmp.Diff(want, env.files(t, "c")); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

// A container's log path is fixed at its creation: each round lists the
// running containers, but the runtime is asked for a container's status
// only the first time it is seen.
func TestRotateAllAsksForEachContainersLogPathOnce(t *testing.T) {
	env := newRotationEnv(t, RotationOptions{MaxSize: 10, MaxFiles: 3, Interval: time.Second}, map[string]runtimeapi.ContainerState{
		"a": runtimeapi.ContainerState_CONTAINER_RUNNING,
		"b": runtimeapi.ContainerState_CONTAINER_RUNNING,
	})
	env.write(t, "a", "short\n")
	env.write(t, "b", "short\n")
	statusCalls := func() int {
		n := 0
		for _, call := range env.runtime.GetCalls() {
			if call == "ContainerStatus" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if err := env.rotator.RotateAll(t.Context()); err != nil {
			t.Fatal(err)
		}
		env.clock.Step(10 * time.Second)
	}
	if got := statusCalls(); got != 2 {
		t.Errorf("three rounds over two containers asked for a container status %d times, want 2", got)
	}

	// The path remembered is still the one rotated.
	env.write(t, "b", "longer than ten bytes\n")
	if err := env.rotator.RotateAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0.log": "", "0.log.20260102-030435": "short\nlonger than ten bytes\n"}
	if diff := cmp.Diff(want, env.files(t, "b")); diff != "" {
		t.Errorf("files of b after a round over a remembered path (-want +got):\n%s", diff)
	}
}
