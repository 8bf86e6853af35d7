package podstatus

// The pod's phase and its containers' waiting reasons under
// container-level restartPolicy and restartPolicyRules: the same rule as
// the plan (kubecontainer.ShouldRestart), read from the status side.

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestPhaseUnderContainerRestartPolicies(t *testing.T) {
	never, onFailure := ptr.To(corev1.ContainerRestartPolicyNever), ptr.To(corev1.ContainerRestartPolicyOnFailure)
	rule42 := []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	tests := []struct {
		name          string
		podPolicy     corev1.RestartPolicy
		web, metrics  *corev1.ContainerRestartPolicy
		webRules      []corev1.ContainerRestartRule
		webExit       *int32 // nil: running
		metricsExit   *int32
		want          corev1.PodPhase
		webRestarting bool
	}{
		{name: "a Never container done beside a running one: Running", podPolicy: corev1.RestartPolicyAlways, web: never, webExit: ptr.To[int32](1), want: corev1.PodRunning},
		{name: "Never containers all done, one failed: Failed", podPolicy: corev1.RestartPolicyAlways, web: never, metrics: never, webExit: ptr.To[int32](1), metricsExit: ptr.To[int32](0), want: corev1.PodFailed},
		{name: "Never containers all succeeded: Succeeded", podPolicy: corev1.RestartPolicyAlways, web: never, metrics: never, webExit: ptr.To[int32](0), metricsExit: ptr.To[int32](0), want: corev1.PodSucceeded},
		{name: "an OnFailure container failed in a Never pod: Running, to be restarted", podPolicy: corev1.RestartPolicyNever, web: onFailure, webExit: ptr.To[int32](1), metricsExit: ptr.To[int32](0), want: corev1.PodRunning, webRestarting: true},
		{name: "a rule's exit code in a Never pod: Running, to be restarted", podPolicy: corev1.RestartPolicyNever, web: never, webRules: rule42, webExit: ptr.To[int32](42), metricsExit: ptr.To[int32](0), want: corev1.PodRunning, webRestarting: true},
		{name: "another exit code than the rule's in a Never pod: Failed", podPolicy: corev1.RestartPolicyNever, web: never, webRules: rule42, webExit: ptr.To[int32](1), metricsExit: ptr.To[int32](0), want: corev1.PodFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.RestartPolicy = tt.podPolicy
			pod.Spec.Containers[0].RestartPolicy, pod.Spec.Containers[0].RestartPolicyRules = tt.web, tt.webRules
			pod.Spec.Containers[1].RestartPolicy = tt.metrics
			rt := baseRuntime()
			if tt.webExit != nil {
				rt.Containers[0] = exitedInstance("web", "web-1", 0, *tt.webExit, 6.1)
			}
			if tt.metricsExit != nil {
				rt.Containers[1] = exitedInstance("metrics", "metrics-1", 0, *tt.metricsExit, 6.0)
			}
			// The last sync held web back: its status says so only if it
			// is to restart.
			waiting := map[string]*kubecontainer.ContainerError{"web": {Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}}
			got := Generate(Input{Pod: pod, Runtime: rt, Waiting: waiting, Now: at(testNow)})
			if got.Phase != tt.want {
				t.Errorf("phase %s, want %s", got.Phase, tt.want)
			}
			web := findContainerStatus(got.ContainerStatuses, "web")
			restarting := web.State.Waiting != nil
			if restarting != tt.webRestarting {
				t.Errorf("web's state %+v: waiting to restart %t, want %t", web.State, restarting, tt.webRestarting)
			}
			if want := kubecontainer.ShouldRestart(pod, &pod.Spec.Containers[0], rt.Containers[0]); restarting != want {
				t.Errorf("the status says waiting to restart %t, the plan's rule %t", restarting, want)
			}
		})
	}
}
