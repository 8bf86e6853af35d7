package e2e

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Container-level restartPolicy and restartPolicyRules decide over the
// pod's restartPolicy, in the plan and in the phase alike.
func TestContainerRestartPolicyAndRulesOverrideThePods(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)

	// terminated waits for the pod's phase, and its app container's
	// restart count and last exit code.
	terminated := func(phase corev1.PodPhase, restarts, exitCode int32) func(*corev1.Pod) (bool, error) {
		return func(p *corev1.Pod) (bool, error) {
			if p.Status.Phase != phase || len(p.Status.ContainerStatuses) == 0 {
				return false, nil
			}
			app := p.Status.ContainerStatuses[0]
			if app.State.Terminated == nil {
				return false, fmt.Errorf("pod %s but app's state is %+v", phase, app.State)
			}
			if app.RestartCount != restarts || app.State.Terminated.ExitCode != exitCode {
				return false, fmt.Errorf("pod %s with app restarted %d times, exit code %d; want %d restarts, exit code %d",
					phase, app.RestartCount, app.State.Terminated.ExitCode, restarts, exitCode)
			}
			return true, nil
		}
	}

	t.Run("a container's Never ends a pod whose policy is Always", func(t *testing.T) {
		t.Parallel()
		pod := newPod(ns, "never-in-always").withShell("exit 1").obj()
		pod.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
		pod = f.createPod(t, pod)
		f.waitForPod(t, pod, podStartTimeout, "to fail without restarts", terminated(corev1.PodFailed, 0, 1))
	})

	t.Run("a rule restarts on its exit code a container whose policy is Never", func(t *testing.T) {
		t.Parallel()
		// The first run exits 42, which the rule restarts; the second,
		// finding the first's mark in the emptyDir, exits 3, which it
		// does not.
		pod := newPod(ns, "rule").withRestartPolicy(corev1.RestartPolicyNever).withEmptyDir("state", "/state").
			withShell("if [ -e /state/ran ]; then exit 3; fi; touch /state/ran; exit 42").obj()
		pod.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
		pod.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{
			Action:    corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
		}}
		pod = f.createPod(t, pod)
		f.waitForPod(t, pod, podStartTimeout, "to fail after one restart", terminated(corev1.PodFailed, 1, 3))
	})

	t.Run("a container's OnFailure retries it in a pod whose policy is Never", func(t *testing.T) {
		t.Parallel()
		pod := newPod(ns, "onfailure-in-never").withRestartPolicy(corev1.RestartPolicyNever).withEmptyDir("state", "/state").
			withShell("if [ -e /state/ran ]; then exit 0; fi; touch /state/ran; exit 1").obj()
		pod.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
		pod = f.createPod(t, pod)
		f.waitForPod(t, pod, podStartTimeout, "to succeed after one restart", terminated(corev1.PodSucceeded, 1, 0))
	})
}
