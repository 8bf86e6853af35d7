package controllers

// The status of a pod whose start is slow, against envtest and the CRI
// fake, with the runtime's SyncPod held back by the test.

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// heldRuntime holds every SyncPod until the test lets it go.
type heldRuntime struct {
	podRuntime
	release chan struct{}
}

func (h *heldRuntime) SyncPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, actions noderuntime.PodActions, env *noderuntime.PodEnv) noderuntime.SyncResult {
	select {
	case <-h.release:
	case <-ctx.Done():
		return noderuntime.SyncResult{Err: ctx.Err()}
	}
	return h.podRuntime.SyncPod(ctx, pod, status, actions, env)
}

func TestASlowStartShowsContainerCreatingThenRunning(t *testing.T) {
	held := &heldRuntime{release: make(chan struct{})}
	env := startReconcilerWith(t, func(r *PodReconciler) {
		held.podRuntime = r.Runtime
		r.Runtime = held
	})
	ctx := context.Background()
	env.createNamespace(t, "slow")
	pod := testPod("slow", "web")
	if err := env.client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	env.waitForPod(t, client.ObjectKeyFromObject(pod), "Pending with its container in ContainerCreating", func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		if len(p.Status.ContainerStatuses) != 1 {
			return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
		}
		if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
			return fmt.Errorf("container state %+v", p.Status.ContainerStatuses[0].State)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionFalse {
				return nil
			}
		}
		return fmt.Errorf("no PodReadyToStartContainers False in %+v", p.Status.Conditions)
	})

	close(held.release)
	got := env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
	// The final write replaced the waiting state; it did not merge into it.
	if state := got.Status.ContainerStatuses[0].State; state.Waiting != nil || state.Running == nil {
		t.Errorf("container state %+v, want running only", state)
	}
	if !conditionTrue(got.Status.Conditions, corev1.PodReadyToStartContainers) {
		t.Errorf("PodReadyToStartContainers not True once running: %+v", got.Status.Conditions)
	}
}
