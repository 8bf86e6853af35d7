package runtime

// Tests of the image puller against the stateful CRI image fake
// (k8s.io/cri-api/pkg/apis/testing), a fake clock and a fake event
// recorder. Concurrency tests hold pulls open with channels, not sleeps.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

func imageTestPod(uid types.UID, image string, policy corev1.PullPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: image, ImagePullPolicy: policy},
		}},
	}
}

type imageTestEnv struct {
	images   *critest.FakeImageService
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	puller   *imagePuller
}

func newImageTestEnv(present ...string) *imageTestEnv {
	images := critest.NewFakeImageService()
	images.SetFakeImageSize(1234)
	images.SetFakeImages(present)
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	recorder := record.NewFakeRecorder(100)
	return &imageTestEnv{images: images, clock: clk, recorder: recorder, puller: newImagePuller(images, recorder, clk)}
}

func (e *imageTestEnv) ensure(pod *corev1.Pod) (string, *kubecontainer.ContainerError) {
	container := &pod.Spec.Containers[0]
	return e.puller.ensureImage(context.Background(), containerRef(pod, container), pod, container, &runtimeapi.PodSandboxConfig{}, nil)
}

func (e *imageTestEnv) pulls() int {
	e.images.Lock()
	defer e.images.Unlock()
	n := 0
	for _, call := range e.images.Called {
		if call == "PullImage" {
			n++
		}
	}
	return n
}

func TestEnsureImagePolicies(t *testing.T) {
	tests := map[string]struct {
		image      string
		policy     corev1.PullPolicy
		present    []string
		wantRef    string
		wantErr    *kubecontainer.ContainerError
		wantPulls  int
		wantEvents []string
	}{
		"IfNotPresent uses a present image": {
			image: "busybox:1", policy: corev1.PullIfNotPresent, present: []string{"busybox:1"},
			wantRef:    "busybox:1",
			wantEvents: []string{`Normal Pulled Container image "busybox:1" already present on machine`},
		},
		"IfNotPresent pulls a missing image": {
			image: "busybox:1", policy: corev1.PullIfNotPresent,
			wantRef: "busybox:1", wantPulls: 1,
			wantEvents: []string{
				`Normal Pulling Pulling image "busybox:1"`,
				`Normal Pulled Successfully pulled image "busybox:1" in 0s (0s including waiting). Image size: 1234 bytes.`,
			},
		},
		"Always pulls a present image": {
			image: "busybox:1", policy: corev1.PullAlways, present: []string{"busybox:1"},
			wantRef: "busybox:1", wantPulls: 1,
			wantEvents: []string{
				`Normal Pulling Pulling image "busybox:1"`,
				`Normal Pulled Successfully pulled image "busybox:1" in 0s (0s including waiting). Image size: 1234 bytes.`,
			},
		},
		"Never uses a present image": {
			image: "busybox:1", policy: corev1.PullNever, present: []string{"busybox:1"},
			wantRef:    "busybox:1",
			wantEvents: []string{`Normal Pulled Container image "busybox:1" already present on machine`},
		},
		"Never refuses a missing image": {
			image: "busybox:1", policy: corev1.PullNever,
			wantErr:    &kubecontainer.ContainerError{Reason: kubecontainer.ReasonErrImageNeverPull, Message: `Container image "busybox:1" is not present with pull policy of Never`},
			wantEvents: []string{`Warning ErrImageNeverPull Container image "busybox:1" is not present with pull policy of Never`},
		},
		"no policy and no tag pulls :latest, even when present": {
			image: "busybox", present: []string{"busybox:latest"},
			wantRef: "busybox:latest", wantPulls: 1,
			wantEvents: []string{
				`Normal Pulling Pulling image "busybox"`,
				`Normal Pulled Successfully pulled image "busybox" in 0s (0s including waiting). Image size: 1234 bytes.`,
			},
		},
		"no policy and a version tag uses a present image": {
			image: "localhost:5000/busybox:1.36", present: []string{"localhost:5000/busybox:1.36"},
			wantRef:    "localhost:5000/busybox:1.36",
			wantEvents: []string{`Normal Pulled Container image "localhost:5000/busybox:1.36" already present on machine`},
		},
		"an invalid image name is InvalidImageName": {
			image: "Busybox:1",
			wantErr: &kubecontainer.ContainerError{
				Reason:  kubecontainer.ReasonInvalidImageName,
				Message: `Failed to apply default image tag "Busybox:1": couldn't parse image name "Busybox:1": invalid reference format: repository name (library/Busybox) must be lowercase`,
			},
			wantEvents: []string{`Warning InspectFailed Failed to apply default image tag "Busybox:1": couldn't parse image name "Busybox:1": invalid reference format: repository name (library/Busybox) must be lowercase`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := newImageTestEnv(tc.present...)
			ref, cerr := env.ensure(imageTestPod("uid-1", tc.image, tc.policy))
			if diff := cmp.Diff(tc.wantErr, cerr); diff != "" {
				t.Errorf("ensureImage() error mismatch (-want +got):\n%s", diff)
			}
			if ref != tc.wantRef {
				t.Errorf("ensureImage() = %q, want %q", ref, tc.wantRef)
			}
			if got := env.pulls(); got != tc.wantPulls {
				t.Errorf("PullImage called %d times, want %d", got, tc.wantPulls)
			}
			if diff := cmp.Diff(tc.wantEvents, drainEvents(env.recorder)); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnsureImageInspectFailure(t *testing.T) {
	env := newImageTestEnv()
	env.images.InjectError("ImageStatus", errors.New("runtime is down"))
	_, cerr := env.ensure(imageTestPod("uid-1", "busybox:1", corev1.PullIfNotPresent))
	want := &kubecontainer.ContainerError{Reason: ReasonImageInspectError, Message: `Failed to inspect image "busybox:1": runtime is down`}
	if diff := cmp.Diff(want, cerr); diff != "" {
		t.Errorf("ensureImage() error mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`Warning InspectFailed Failed to inspect image "busybox:1": runtime is down`}, drainEvents(env.recorder)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestEnsureImageBackOff(t *testing.T) {
	env := newImageTestEnv()
	pod := imageTestPod("uid-1", "busybox:1", corev1.PullIfNotPresent)
	pullErr := status.Error(codes.NotFound, "failed to resolve reference \"busybox:1\": not found")
	// Each failure tells when its back-off ends, for the caller to come
	// back then.
	failedPull := func(backOff time.Duration) *kubecontainer.ContainerError {
		return &kubecontainer.ContainerError{Reason: kubecontainer.ReasonErrImagePull, Message: pullErr.Error(), BackOffUntil: env.clock.Now().Add(backOff)}
	}
	backOff := func(until time.Time) *kubecontainer.ContainerError {
		return &kubecontainer.ContainerError{
			Reason:       kubecontainer.ReasonImagePullBackOff,
			Message:      `Back-off pulling image "busybox:1": ErrImagePull: ` + pullErr.Error(),
			BackOffUntil: until,
		}
	}

	// The first failure is ErrImagePull, with the kubelet's events.
	env.images.InjectError("PullImage", pullErr)
	if _, cerr := env.ensure(pod); !cmp.Equal(failedPull(10*time.Second), cerr) {
		t.Fatalf("first pull: ensureImage() error = %v, want %v", cerr, failedPull(10*time.Second))
	}
	wantEvents := []string{
		`Normal Pulling Pulling image "busybox:1"`,
		`Warning Failed Failed to pull image "busybox:1": ` + pullErr.Error(),
	}
	if diff := cmp.Diff(wantEvents, drainEvents(env.recorder)); diff != "" {
		t.Errorf("first pull: events mismatch (-want +got):\n%s", diff)
	}

	// Then each wait doubles, from 10s up to 5 minutes. Within a wait the
	// runtime is not asked and the reason is ImagePullBackOff.
	for _, delay := range []time.Duration{10, 20, 40, 80, 160, 300, 300} {
		delay *= time.Second
		pulls := env.pulls()
		until := env.clock.Now().Add(delay)
		env.clock.Step(delay - time.Second)
		if _, cerr := env.ensure(pod); !cmp.Equal(backOff(until), cerr) {
			t.Fatalf("1s before the %v back-off ends: ensureImage() error = %v, want %v", delay, cerr, backOff(until))
		}
		if diff := cmp.Diff([]string{`Normal BackOff Back-off pulling image "busybox:1"`}, drainEvents(env.recorder)); diff != "" {
			t.Errorf("within the %v back-off: events mismatch (-want +got):\n%s", delay, diff)
		}
		if env.pulls() != pulls {
			t.Fatalf("within the %v back-off: the runtime was asked to pull", delay)
		}

		env.clock.Step(time.Second)
		env.images.InjectError("PullImage", pullErr)
		next := min(2*delay, maxImagePullBackoff)
		if _, cerr := env.ensure(pod); !cmp.Equal(failedPull(next), cerr) {
			t.Fatalf("after the %v back-off: ensureImage() error = %v, want %v", delay, cerr, failedPull(next))
		}
		if env.pulls() != pulls+1 {
			t.Fatalf("after the %v back-off: PullImage called %d times, want %d", delay, env.pulls(), pulls+1)
		}
		drainEvents(env.recorder)
	}

	// Another pod pulling the same image has its own back-off.
	other := imageTestPod("uid-2", "busybox:1", corev1.PullIfNotPresent)
	if ref, cerr := env.ensure(other); cerr != nil || ref != "busybox:1" {
		t.Fatalf("other pod: ensureImage() = %q, %v, want the image", ref, cerr)
	}

	// A success clears the back-off: the next failure waits 10s again.
	env.clock.Step(300 * time.Second)
	if err := env.images.RemoveImage(context.Background(), &runtimeapi.ImageSpec{Image: "busybox:1"}); err != nil {
		t.Fatal(err)
	}
	if _, cerr := env.ensure(pod); cerr != nil {
		t.Fatalf("after the last back-off: ensureImage() error = %v", cerr)
	}
	if last, ok := env.puller.lastError["uid-1_busybox:1"]; ok {
		t.Errorf("after a success the last pull error is still kept: %q", last)
	}
	if err := env.images.RemoveImage(context.Background(), &runtimeapi.ImageSpec{Image: "busybox:1"}); err != nil {
		t.Fatal(err)
	}
	env.images.InjectError("PullImage", pullErr)
	if _, cerr := env.ensure(pod); !cmp.Equal(failedPull(10*time.Second), cerr) {
		t.Fatalf("after a success: ensureImage() error = %v, want %v", cerr, failedPull(10*time.Second))
	}
	env.clock.Step(10 * time.Second)
	if ref, cerr := env.ensure(pod); cerr != nil || ref != "busybox:1" {
		t.Fatalf("10s after a failure that followed a success: ensureImage() = %q, %v, want the image", ref, cerr)
	}
}

func TestEnsureImageBackOffIsForgottenAfterTwiceTheMaximum(t *testing.T) {
	env := newImageTestEnv()
	pod := imageTestPod("uid-1", "busybox:1", corev1.PullIfNotPresent)
	pullErr := errors.New("pull failed")
	// Climb to the 40s step.
	for _, delay := range []time.Duration{0, 10, 20} {
		env.clock.Step(delay * time.Second)
		env.images.InjectError("PullImage", pullErr)
		if _, cerr := env.ensure(pod); cerr == nil || cerr.Reason != kubecontainer.ReasonErrImagePull {
			t.Fatalf("ensureImage() error = %v, want ErrImagePull", cerr)
		}
	}
	// Ten quiet minutes later the sequence starts over at 10s.
	env.clock.Step(2*maxImagePullBackoff + time.Second)
	env.images.InjectError("PullImage", pullErr)
	if _, cerr := env.ensure(pod); cerr == nil || cerr.Reason != kubecontainer.ReasonErrImagePull {
		t.Fatalf("ensureImage() error = %v, want ErrImagePull", cerr)
	}
	env.clock.Step(10 * time.Second)
	if _, cerr := env.ensure(pod); cerr != nil {
		t.Fatalf("10s later: ensureImage() error = %v, want a pull", cerr)
	}
}

func TestEnsureImageNamedRuntimeFailures(t *testing.T) {
	tests := map[string]struct {
		err  error
		want *kubecontainer.ContainerError
	}{
		"the registry is unavailable": {
			err: status.Error(codes.Unknown, "RegistryUnavailable: dial tcp 127.0.0.1:5000: connection refused"),
			want: &kubecontainer.ContainerError{
				Reason:       "RegistryUnavailable",
				Message:      "image pull failed for busybox:1 because the registry is unavailable: dial tcp 127.0.0.1:5000: connection refused",
				BackOffUntil: time.Date(2026, 11, 22, 12, 0, 10, 0, time.UTC),
			},
		},
		"the signature is not valid": {
			err: status.Error(codes.Unknown, "SignatureValidationFailed: unsigned"),
			want: &kubecontainer.ContainerError{
				Reason:       "SignatureValidationFailed",
				Message:      "image pull failed for busybox:1 because the signature validation failed: unsigned",
				BackOffUntil: time.Date(2026, 11, 22, 12, 0, 10, 0, time.UTC),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := newImageTestEnv()
			env.images.InjectError("PullImage", tc.err)
			_, cerr := env.ensure(imageTestPod("uid-1", "busybox:1", corev1.PullAlways))
			if diff := cmp.Diff(tc.want, cerr); diff != "" {
				t.Errorf("ensureImage() error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnsureImageRemembersTheImageUser(t *testing.T) {
	env := newImageTestEnv("busybox:1", "nginx:1", "distroless:1")
	env.images.Images["busybox:1"].Uid = nil
	env.images.Images["nginx:1"].Username = "nginx"
	env.images.Images["distroless:1"].Uid = &runtimeapi.Int64Value{Value: 65532}
	tests := map[string]struct {
		image string
		want  *imageUser
	}{
		"an image without a user runs as root":           {image: "busybox:1", want: &imageUser{UID: ptr.To[int64](0)}},
		"an image with a user name":                      {image: "nginx:1", want: &imageUser{Username: "nginx"}},
		"an image with a numeric user":                   {image: "distroless:1", want: &imageUser{UID: ptr.To[int64](65532)}},
		"an image ensureImage never returned is unknown": {image: "", want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ref := ""
			if tc.image != "" {
				var cerr *kubecontainer.ContainerError
				if ref, cerr = env.ensure(imageTestPod("uid-1", tc.image, corev1.PullIfNotPresent)); cerr != nil {
					t.Fatalf("ensureImage() error = %v", cerr)
				}
			}
			if diff := cmp.Diff(tc.want, env.puller.user(ref)); diff != "" {
				t.Errorf("user(%q) mismatch (-want +got):\n%s", ref, diff)
			}
		})
	}
}

// blockingImageService holds every PullImage open until released, and
// tells when one starts.
type blockingImageService struct {
	*critest.FakeImageService
	started chan string
	release chan struct{}
}

func (s *blockingImageService) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, config *runtimeapi.PodSandboxConfig) (string, error) {
	s.started <- image.Image
	select {
	case <-s.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return s.FakeImageService.PullImage(ctx, image, auth, config)
}

func newBlockingPuller() (*blockingImageService, *imagePuller) {
	images := &blockingImageService{
		FakeImageService: critest.NewFakeImageService(),
		started:          make(chan string, 10),
		release:          make(chan struct{}),
	}
	return images, newImagePuller(images, record.NewFakeRecorder(100), testingclock.NewFakeClock(time.Now()))
}

type ensureResult struct {
	ref string
	err *kubecontainer.ContainerError
}

// ensureInBackground runs ensureImage for one container of the pod in its
// own goroutine.
func ensureInBackground(ctx context.Context, puller *imagePuller, pod *corev1.Pod, container *corev1.Container) <-chan ensureResult {
	done := make(chan ensureResult, 1)
	go func() {
		ref, err := puller.ensureImage(ctx, containerRef(pod, container), pod, container, &runtimeapi.PodSandboxConfig{}, nil)
		done <- ensureResult{ref, err}
	}()
	return done
}

func TestEnsureImagePullsDifferentImagesAtOnce(t *testing.T) {
	images, puller := newBlockingPuller()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	podA := imageTestPod("uid-a", "busybox:1", corev1.PullAlways)
	podB := imageTestPod("uid-b", "nginx:1", corev1.PullAlways)
	doneA := ensureInBackground(ctx, puller, podA, &podA.Spec.Containers[0])
	doneB := ensureInBackground(ctx, puller, podB, &podB.Spec.Containers[0])

	// Both pulls run before either is let go: neither waits for the other.
	started := map[string]bool{}
	for len(started) < 2 {
		select {
		case image := <-images.started:
			started[image] = true
		case <-ctx.Done():
			t.Fatalf("pulls started: %v, want busybox:1 and nginx:1 at once", started)
		}
	}
	close(images.release)
	got := map[string]ensureResult{"a": <-doneA, "b": <-doneB}
	want := map[string]ensureResult{"a": {ref: "busybox:1"}, "b": {ref: "nginx:1"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(ensureResult{})); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
}

func TestEnsureImageSharesOnePullWithinAPod(t *testing.T) {
	images, puller := newBlockingPuller()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := imageTestPod("uid-a", "busybox:1", corev1.PullAlways)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox:1", ImagePullPolicy: corev1.PullAlways})

	doneApp := ensureInBackground(ctx, puller, pod, &pod.Spec.Containers[0])
	select {
	case <-images.started:
	case <-ctx.Done():
		t.Fatal("the first pull never started")
	}
	doneSidecar := ensureInBackground(ctx, puller, pod, &pod.Spec.Containers[1])
	// Wait until the second caller has joined the running pull.
	await.Eventually(t, 10*time.Second, "the second caller to join the running pull", func(context.Context) error {
		select {
		case image := <-images.started:
			t.Fatalf("a second pull of %s started, want the first one shared", image)
		default:
		}
		puller.mu.Lock()
		defer puller.mu.Unlock()
		if waiters := puller.pulls["uid-a_busybox:1"].waiters; waiters != 1 {
			return fmt.Errorf("the pull has %d waiters", waiters)
		}
		return nil
	})
	close(images.release)

	got := []ensureResult{<-doneApp, <-doneSidecar}
	want := []ensureResult{{ref: "busybox:1"}, {ref: "busybox:1"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(ensureResult{})); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
	if n := len(images.started); n != 0 {
		t.Errorf("%d more pulls started, want the one pull shared", n)
	}
}
