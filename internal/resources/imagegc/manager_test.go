package imagegc

// The manager against the CRI fakes of k8s.io/cri-api/pkg/apis/testing
// (the runtime's Status given the verbose info containerd returns), a fake
// clock, a fixed file system usage and client-go's FakeRecorder.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// runtimeWithSandboxImage is the CRI fake whose verbose status names the
// sandbox image, as containerd's does.
type runtimeWithSandboxImage struct {
	*critest.FakeRuntimeService
	sandboxImage string
}

func (r runtimeWithSandboxImage) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := r.FakeRuntimeService.Status(ctx, verbose)
	if err != nil || !verbose {
		return resp, err
	}
	resp.Info = map[string]string{"config": `{"sandboxImage":"` + r.sandboxImage + `"}`}
	return resp, nil
}

type fixture struct {
	images   *critest.FakeImageService
	runtime  *critest.FakeRuntimeService
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	manager  *Manager
}

func newFixture(t *testing.T, policy Policy) *fixture {
	f := &fixture{
		images:   critest.NewFakeImageService(),
		runtime:  critest.NewFakeRuntimeService(),
		clock:    clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(10),
	}
	f.images.SetFakeImages([]string{"app:1", "pause:3.10", "running:1", "exited:1", "pinned:1"})
	for _, image := range f.images.Images {
		image.Size = 200
	}
	f.images.SetFakeImagePinned("pinned:1", true)
	f.images.Images["pinned:1"].Pinned = true
	f.images.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"}}})
	f.runtime.SetFakeContainers([]*critest.FakeContainer{
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "r"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING, Image: &runtimeapi.ImageSpec{Image: "running:1"}, ImageRef: "running:1"}},
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c2", Metadata: &runtimeapi.ContainerMetadata{Name: "e"}, State: runtimeapi.ContainerState_CONTAINER_EXITED, Image: &runtimeapi.ImageSpec{Image: "exited:1"}, ImageRef: "exited:1"}},
	})
	f.manager = NewManager(f.images, runtimeWithSandboxImage{f.runtime, "pause:3.10"}, Options{
		Policy:   policy,
		NodeName: "node-a",
		Recorder: f.recorder,
		FsUsage: func(mountpoint string) (FsUsage, error) {
			if mountpoint != "/var/lib/containerd" {
				return FsUsage{}, errors.New("unexpected mount point " + mountpoint)
			}
			return FsUsage{CapacityBytes: 1000, AvailableBytes: 100}, nil
		},
		Clock: f.clock,
		Log:   testr.New(t),
	})
	return f
}

func (f *fixture) imageNames() []string {
	f.images.Lock()
	defer f.images.Unlock()
	var names []string
	for name := range f.images.Images {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (f *fixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

func TestGarbageCollectRemovesUnusedImagesOnceOldEnough(t *testing.T) {
	f := newFixture(t, Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute})
	ctx := context.Background()

	// Every image is new: none may go yet, so the disk stays full.
	err := f.manager.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "freed 0 bytes") {
		t.Fatalf("first collection error %v, want the disk space failure", err)
	}
	events := f.events()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem (90% of 1000 B used)") {
		t.Errorf("events %q, want one FreeDiskSpaceFailed", events)
	}

	// Past the minimum age the unused image goes; images of containers
	// (running or exited), the pinned one and the sandbox image stay.
	f.clock.Step(3 * time.Minute)
	if err := f.manager.GarbageCollect(ctx); err != nil {
		t.Fatalf("second collection: %v", err)
	}
	want := []string{"exited:1", "pause:3.10", "pinned:1", "running:1"}
	if got := f.imageNames(); !slices.Equal(got, want) {
		t.Errorf("images left %v, want %v", got, want)
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events %q after freeing enough, want none", events)
	}
}

func TestGarbageCollectRemovesImagesPastTheMaximumAge(t *testing.T) {
	// Usage under the high threshold: only age removes.
	f := newFixture(t, Policy{HighThresholdPercent: 95, LowThresholdPercent: 80, MaxAge: 10 * time.Minute})
	f.manager.began = t0
	ctx := context.Background()
	if err := f.manager.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.imageNames(); len(got) != 5 {
		t.Fatalf("images %v removed before the maximum age", got)
	}
	f.clock.Step(11 * time.Minute)
	if err := f.manager.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	// The exited container's image was used at the last look: it stays.
	want := []string{"exited:1", "pause:3.10", "pinned:1", "running:1"}
	if got := f.imageNames(); !slices.Equal(got, want) {
		t.Errorf("images left %v, want %v", got, want)
	}
}

func TestStartRecordsImageGCFailedOnRepeatedFailures(t *testing.T) {
	f := newFixture(t, Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute})
	f.images.InjectError("ListImages", errors.New("runtime down"))
	f.images.InjectError("ListImages", errors.New("runtime down"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.manager.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	// The first failure is only logged; the second, a period later, is
	// the event.
	await.Eventually(t, 10*time.Second, "the first collection and the ticker", func(context.Context) error {
		if !f.clock.HasWaiters() {
			return errors.New("no ticker yet")
		}
		return nil
	})
	f.clock.Step(Period)
	event := await.Receive(t, 10*time.Second, "an ImageGCFailed event", f.recorder.Events)
	if !strings.HasPrefix(event, "Warning ImageGCFailed listing images: runtime down") {
		t.Errorf("event %q, want ImageGCFailed with the error", event)
	}
}

func TestStartDoesNothingWhenDisabled(t *testing.T) {
	f := newFixture(t, Policy{HighThresholdPercent: 100, LowThresholdPercent: 80})
	if err := f.manager.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.images.Called, "ListImages") {
		t.Error("a disabled collector listed images")
	}
}
