package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The four pods are created together, so nodelet works on the broken ones
// while the normal one starts.
func TestBadInputEndsInReasonsWhileNodeletKeepsServing(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	missingImage := f.createPod(t, newPod(ns, "missing-image").withImage(f.Env.Registry+"/nonexistent:1").obj())
	// Pod validation only refuses empty or space-padded images, so the
	// API server takes a reference that no parser does.
	invalidImage := f.createPod(t, newPod(ns, "invalid-image").withImage(f.Env.Registry+"/busybox:bad:tag").obj())
	missingCommand := f.createPod(t, newPod(ns, "missing-command").withCommand("/no/such/command").obj())
	normal := f.createPod(t, newPod(ns, "normal").obj())

	t.Run("image missing from the registry: ErrImagePull then ImagePullBackOff", func(t *testing.T) {
		t.Parallel()
		sawErrImagePull := false
		f.waitForPod(t, missingImage, 2*time.Minute, "to wait in ErrImagePull, then in ImagePullBackOff", func(pod *corev1.Pod) (bool, error) {
			switch waitingReason(pod, "app") {
			case "ErrImagePull":
				sawErrImagePull = true
			case "ImagePullBackOff":
				if !sawErrImagePull {
					return false, fmt.Errorf("ImagePullBackOff came before any ErrImagePull")
				}
				return true, nil
			}
			return false, nil
		})
	})

	t.Run("invalid image name: InvalidImageName", func(t *testing.T) {
		t.Parallel()
		f.waitForPod(t, invalidImage, 2*time.Minute, "to wait in InvalidImageName", func(pod *corev1.Pod) (bool, error) {
			return waitingReason(pod, "app") == "InvalidImageName", nil
		})
	})

	t.Run("missing command: RunContainerError and terminated StartError exit code 128", func(t *testing.T) {
		t.Parallel()
		sawRunContainerError, sawStartError := false, false
		f.waitForPod(t, missingCommand, 2*time.Minute, "to show waiting RunContainerError and terminated StartError with exit code 128", func(pod *corev1.Pod) (bool, error) {
			app := containerStatus(pod, "app")
			if app == nil {
				return false, nil
			}
			if app.State.Waiting != nil && app.State.Waiting.Reason == "RunContainerError" {
				sawRunContainerError = true
			}
			for _, terminated := range []*corev1.ContainerStateTerminated{app.State.Terminated, app.LastTerminationState.Terminated} {
				if terminated != nil && terminated.Reason == "StartError" && terminated.ExitCode == 128 {
					sawStartError = true
				}
			}
			return sawRunContainerError && sawStartError, nil
		})
	})

	t.Run("normal pod created alongside: Ready", func(t *testing.T) {
		t.Parallel()
		f.waitForPod(t, normal, podStartTimeout, "to be Running and Ready", runningAndReady)
	})
}
