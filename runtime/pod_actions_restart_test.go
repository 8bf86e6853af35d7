package runtime

// Pure tests of ComputePodActions with container-level restartPolicy and
// restartPolicyRules, and of the one rule the plan and the pod's status
// share (ShouldRestart).

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func restartOnExitCodes(codes ...int32) []corev1.ContainerRestartRule {
	return []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: codes},
	}}
}

func TestComputePodActionsWithContainerRestartPolicies(t *testing.T) {
	cases := map[string]podActionsCase{
		"a container's Never wins over the pod's Always": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 1, time.Second) },
			want:         PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a container's OnFailure restarts it under the pod's Never": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 1, time.Second) },
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a rule matching the exit code restarts a container whose policy is Never": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
				p.Spec.Containers[0].RestartPolicyRules = restartOnExitCodes(42)
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 42, time.Second) },
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a rule not matching the exit code leaves the container's Never": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
				p.Spec.Containers[0].RestartPolicyRules = restartOnExitCodes(42)
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) { exited(s.Containers[0], 1, time.Second) },
			want:         PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a failed liveness probe does not restart a container whose policy is Never": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			},
			probes: kubecontainer.ProbeResults{{Type: "containerd", ID: "app-0"}: {Liveness: kubecontainer.ProbeFailure}},
			want: PodActions{SandboxID: "sb1", ContainersToKill: map[kubecontainer.ContainerID]ContainerToKill{
				{Type: "containerd", ID: "app-0"}: {Name: "app", Message: "Container app failed liveness probe", Reason: KillReasonLivenessProbe},
			}},
		},
		"an init container's OnFailure retries it under the pod's Never": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyOnFailure)}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{exited(running("init1", "sb1", 0, p), 1, time.Second)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills(),
				InitContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"an init container's Never fails the pod under the pod's Always": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever)}}
			},
			mutateStatus: func(p *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{exited(running("init1", "sb1", 0, p), 1, time.Second)}
			},
			want: PodActions{SandboxID: "sb1", ContainersToKill: noKills()},
		},
		"a dead sandbox of a Never pod is made again for a container that may restart": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
			},
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				exited(s.Containers[0], 1, time.Second)
				exited(s.Containers[1], 0, time.Second)
			},
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, ContainersToKill: noKills(),
				ContainersToStart: []ContainerToStart{{Index: 0, RestartCount: 1, Backoff: InitialRestartBackoff}}},
		},
		"a dead sandbox of a Never pod whose containers may not restart stays dead": {
			mutatePod: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			mutateStatus: func(_ *corev1.Pod, s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				exited(s.Containers[0], 1, time.Second)
				exited(s.Containers[1], 0, time.Second)
			},
			want: PodActions{KillPod: true, Attempt: 1, ContainersToKill: noKills()},
		},
	}
	runPodActionsCases(t, cases)
}

// The plan starts an exited regular container again exactly when
// ShouldRestart (which the pod's status asks for its waiting reason) says
// so, across pod and container policies, rules and exit codes.
func TestThePlanRestartsExactlyWhatShouldRestartSays(t *testing.T) {
	podPolicies := []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	containerPolicies := []*corev1.ContainerRestartPolicy{nil, ptr.To(corev1.ContainerRestartPolicyAlways), ptr.To(corev1.ContainerRestartPolicyOnFailure), ptr.To(corev1.ContainerRestartPolicyNever)}
	for _, podPolicy := range podPolicies {
		for _, containerPolicy := range containerPolicies {
			for _, rules := range [][]corev1.ContainerRestartRule{nil, restartOnExitCodes(42)} {
				for _, code := range []int32{0, 1, 42} {
					pod := basePod()
					pod.Spec.RestartPolicy = podPolicy
					pod.Spec.Containers[0].RestartPolicy = containerPolicy
					pod.Spec.Containers[0].RestartPolicyRules = rules
					status := baseStatus(basePod())
					exited(status.Containers[0], code, time.Second)

					actions := ComputePodActions(pod, status, nil, testNow)
					planned := len(actions.ContainersToStart) > 0 || len(actions.ContainersInBackOff) > 0
					if want := kubecontainer.ShouldRestart(pod, &pod.Spec.Containers[0], status.Containers[0]); planned != want {
						t.Errorf("pod %s, container %v, rules %v, exit %d: planned a restart %t, ShouldRestart %t",
							podPolicy, ptr.Deref(containerPolicy, "-"), rules != nil, code, planned, want)
					}
				}
			}
		}
	}
}
