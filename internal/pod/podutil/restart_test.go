package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestContainerShouldRestart(t *testing.T) {
	restartOn := func(op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) corev1.ContainerRestartRule {
		return corev1.ContainerRestartRule{
			Action:    corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes},
		}
	}
	never, onFailure, always := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name        string
		podPolicy   corev1.RestartPolicy
		policy      *corev1.ContainerRestartPolicy
		rules       []corev1.ContainerRestartRule
		exitCode    int32
		want        bool
		restartable bool
	}{
		{name: "pod Always, exit 0", podPolicy: corev1.RestartPolicyAlways, exitCode: 0, want: true, restartable: true},
		{name: "pod OnFailure, exit 0", podPolicy: corev1.RestartPolicyOnFailure, exitCode: 0, want: false, restartable: true},
		{name: "pod OnFailure, exit 1", podPolicy: corev1.RestartPolicyOnFailure, exitCode: 1, want: true, restartable: true},
		{name: "pod Never, exit 1", podPolicy: corev1.RestartPolicyNever, exitCode: 1, want: false},
		{name: "no pod policy: Always", exitCode: 0, want: true, restartable: true},
		{name: "container Never over pod Always", podPolicy: corev1.RestartPolicyAlways, policy: &never, exitCode: 1, want: false},
		{name: "container Always over pod Never", podPolicy: corev1.RestartPolicyNever, policy: &always, exitCode: 0, want: true, restartable: true},
		{name: "container OnFailure over pod Never, exit 2", podPolicy: corev1.RestartPolicyNever, policy: &onFailure, exitCode: 2, want: true, restartable: true},
		{name: "container OnFailure, exit 0", podPolicy: corev1.RestartPolicyAlways, policy: &onFailure, exitCode: 0, want: false, restartable: true},
		{name: "rule In matches", podPolicy: corev1.RestartPolicyNever, policy: &never, rules: []corev1.ContainerRestartRule{restartOn(corev1.ContainerRestartRuleOnExitCodesOpIn, 42, 43)}, exitCode: 42, want: true, restartable: true},
		{name: "rule In does not match: the container's policy", podPolicy: corev1.RestartPolicyAlways, policy: &never, rules: []corev1.ContainerRestartRule{restartOn(corev1.ContainerRestartRuleOnExitCodesOpIn, 42)}, exitCode: 1, want: false, restartable: true},
		{name: "rule NotIn matches", policy: &never, rules: []corev1.ContainerRestartRule{restartOn(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, exitCode: 3, want: true, restartable: true},
		{name: "rule NotIn does not match", policy: &never, rules: []corev1.ContainerRestartRule{restartOn(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, exitCode: 0, want: false, restartable: true},
		// Rules count only beside a container-level policy.
		{name: "rules without a container policy: the pod's", podPolicy: corev1.RestartPolicyNever, rules: []corev1.ContainerRestartRule{restartOn(corev1.ContainerRestartRuleOnExitCodesOpIn, 1)}, exitCode: 1, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "app", RestartPolicy: tt.policy, RestartPolicyRules: tt.rules}
			spec := &corev1.PodSpec{RestartPolicy: tt.podPolicy}
			if got := ContainerShouldRestart(c, spec, tt.exitCode); got != tt.want {
				t.Errorf("ContainerShouldRestart = %t, want %t", got, tt.want)
			}
			if got := IsContainerRestartable(c, spec); got != tt.restartable {
				t.Errorf("IsContainerRestartable = %t, want %t", got, tt.restartable)
			}
		})
	}
}

func TestRestartsAfterKill(t *testing.T) {
	never, onFailure := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure
	spec := func(p corev1.RestartPolicy) *corev1.PodSpec { return &corev1.PodSpec{RestartPolicy: p} }
	if !RestartsAfterKill(&corev1.Container{}, spec(corev1.RestartPolicyAlways)) {
		t.Error("pod Always: not restarted")
	}
	if RestartsAfterKill(&corev1.Container{}, spec(corev1.RestartPolicyNever)) {
		t.Error("pod Never: restarted")
	}
	if RestartsAfterKill(&corev1.Container{RestartPolicy: ptr.To(never)}, spec(corev1.RestartPolicyAlways)) {
		t.Error("container Never over pod Always: restarted")
	}
	if !RestartsAfterKill(&corev1.Container{RestartPolicy: ptr.To(onFailure)}, spec(corev1.RestartPolicyNever)) {
		t.Error("container OnFailure over pod Never: not restarted")
	}
}
