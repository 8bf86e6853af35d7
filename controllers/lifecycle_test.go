package controllers

// Probes and activeDeadlineSeconds through the reconciler, end to end
// against envtest and the CRI fake, whose ExecSync answers the exec probes
// (errors injected to make them fail). The pure tests of the deadline are
// in package podstatus.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestPodReconcilerLifecycle(t *testing.T) {
	env := startReconciler(t)
	ctx := context.Background()
	exitOne := utilexec.CodeExitError{Err: errors.New("command 'check' exited with 1"), Code: 1}
	probe := func() *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1,
		}
	}
	// deleteAndWait removes a probed pod, so that its workers no longer
	// take the errors the next case injects.
	deleteAndWait := func(t *testing.T, pod *corev1.Pod) {
		t.Helper()
		if err := env.client.Delete(ctx, pod); err != nil {
			t.Fatal(err)
		}
		await.Eventually(t, 30*time.Second, "the pod to be gone", func(context.Context) error {
			err := env.client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading it: %w", err)
			}
			return errors.New("still there")
		})
	}

	t.Run("a failing liveness probe restarts the container", func(t *testing.T) {
		env.createNamespace(t, "liveness")
		pod := testPod("liveness", "web")
		pod.Spec.Containers[0].LivenessProbe = probe()
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
		env.runtime.InjectError("ExecSync", exitOne)
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "the container restarted", func(p *corev1.Pod) error {
			if err := running(p); err != nil {
				return err
			}
			if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 1 {
				return fmt.Errorf("restartCount %d", cs.RestartCount)
			}
			return nil
		})
		deleteAndWait(t, pod)
	})

	t.Run("a readiness probe holds Ready back until it passes", func(t *testing.T) {
		env.createNamespace(t, "readiness")
		// The probe fails until the test has seen the pod running and not
		// ready: every reconcile triggers a probe of a container that is
		// not ready, so a fixed number of failures may all be spent before
		// the first status is written.
		env.failCalls("ExecSync", exitOne, 100_000) // more than any test makes
		pod := testPod("readiness", "web")
		pod.Spec.Containers[0].ReadinessProbe = probe()
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "running and not ready", func(p *corev1.Pod) error {
			if err := running(p); err != nil {
				return err
			}
			if cs := p.Status.ContainerStatuses[0]; cs.Ready || conditionTrue(p.Status.Conditions, corev1.PodReady) {
				return fmt.Errorf("ready before the probe passed")
			}
			return nil
		})
		env.clearFailures("ExecSync")
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "Ready once the probe passes", func(p *corev1.Pod) error {
			if !p.Status.ContainerStatuses[0].Ready || !conditionTrue(p.Status.Conditions, corev1.PodReady) {
				return fmt.Errorf("not ready: %+v", p.Status.Conditions)
			}
			return nil
		})
		deleteAndWait(t, pod)
	})

	t.Run("a pod past its activeDeadlineSeconds fails and stops", func(t *testing.T) {
		env.createNamespace(t, "deadline")
		pod := testPod("deadline", "web")
		pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "failed with DeadlineExceeded", func(p *corev1.Pod) error {
			if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "DeadlineExceeded" {
				return fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
			}
			return nil
		})
		await.Eventually(t, 30*time.Second, "the sandbox stopped", func(context.Context) error {
			for _, sb := range env.runtimeSandboxes(t, pod.UID) {
				if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					return fmt.Errorf("sandbox %s still ready", sb.Id)
				}
			}
			return nil
		})
	})
}

func conditionTrue(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
