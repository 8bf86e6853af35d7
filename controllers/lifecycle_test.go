package controllers

// Probes and activeDeadlineSeconds through the reconciler: pure tests of
// the deadline and of status generation with a failure, then the
// reconciler end to end against envtest and the CRI fake, whose ExecSync
// answers the exec probes (errors injected to make them fail).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

var lifecycleNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestDeadlineFailure(t *testing.T) {
	start := metav1.NewTime(lifecycleNow.Add(-time.Minute))
	cases := map[string]struct {
		deadline  *int64
		startTime *metav1.Time
		want      *podFailure
		wantAt    time.Time
	}{
		"no deadline":         {startTime: &start},
		"not started yet":     {deadline: ptr.To[int64](10)},
		"before the deadline": {deadline: ptr.To[int64](61), startTime: &start, wantAt: lifecycleNow.Add(time.Second)},
		"at the deadline": {deadline: ptr.To[int64](60), startTime: &start, wantAt: lifecycleNow,
			want: &podFailure{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.deadline}, Status: corev1.PodStatus{StartTime: tc.startTime}}
			if got := deadlineFailure(pod, lifecycleNow); (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("deadlineFailure() = %+v, want %+v", got, tc.want)
			}
			if got := activeDeadline(pod); !got.Equal(tc.wantAt) {
				t.Errorf("activeDeadline() = %v, want %v", got, tc.wantAt)
			}
		})
	}
}

func TestGeneratePodStatusFailsThePodOnceItsContainersStopped(t *testing.T) {
	failure := &podFailure{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	app := &noderuntime.ContainerStatus{
		ID: noderuntime.ContainerID{Type: "containerd", ID: "c1"}, Name: "app", SandboxID: "sb1",
		State: noderuntime.ContainerRunning, StartedAt: lifecycleNow.Add(-time.Minute),
	}
	rt := &noderuntime.PodStatus{
		Sandboxes:  []*noderuntime.SandboxStatus{{ID: "sb1", State: noderuntime.SandboxNotReady}},
		Containers: []*noderuntime.ContainerStatus{app},
	}

	// Still running: not failed yet.
	s := generatePodStatus(podStatusInput{Pod: pod, Runtime: rt, Terminal: true, Failure: failure, Now: lifecycleNow})
	if s.Phase != corev1.PodRunning || s.Reason != "" {
		t.Errorf("with the container running: phase %s reason %q, want Running and no reason", s.Phase, s.Reason)
	}

	app.State, app.ExitCode, app.FinishedAt = noderuntime.ContainerExited, 137, lifecycleNow
	s = generatePodStatus(podStatusInput{Pod: pod, Runtime: rt, Terminal: true, Failure: failure, Now: lifecycleNow})
	if s.Phase != corev1.PodFailed || s.Reason != failure.Reason || s.Message != failure.Message {
		t.Errorf("with the container stopped: phase %s reason %q message %q, want Failed with the failure's", s.Phase, s.Reason, s.Message)
	}
	if c := findCondition(s.Conditions, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "PodFailed" {
		t.Errorf("Ready condition = %+v, want False with PodFailed", c)
	}
}

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
		eventually(t, 30*time.Second, "the pod to be gone", func() error {
			err := env.client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
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
		// The first three probes fail.
		for range 3 {
			env.runtime.InjectError("ExecSync", exitOne)
		}
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
		eventually(t, 30*time.Second, "the sandbox stopped", func() error {
			for _, sb := range env.runtimeSandboxes(t, pod.UID) {
				if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					return fmt.Errorf("sandbox %s still ready", sb.Id)
				}
			}
			return nil
		})
	})
}
