package podutil

import corev1 "k8s.io/api/core/v1"

// ContainerShouldRestart reports whether a container that exited with
// exitCode is to run again, by the kubelet's rule: the container's
// restartPolicyRules first (the first rule whose exit codes match decides,
// if its action is Restart), then the container's own restartPolicy, then
// the pod's. The plan of what to start and the pod's phase both ask here.
func ContainerShouldRestart(container *corev1.Container, spec *corev1.PodSpec, exitCode int32) bool {
	if container != nil && container.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(container, exitCode); ok && rule.Action == corev1.ContainerRestartRuleActionRestart {
			return true
		}
		switch *container.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// RestartsAfterKill reports whether a container that is killed while it
// runs (a failed liveness or startup probe) is started again. There is no
// exit code to match rules against: the container's restartPolicy decides,
// else the pod's.
func RestartsAfterKill(container *corev1.Container, spec *corev1.PodSpec) bool {
	if container != nil && container.RestartPolicy != nil {
		return *container.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != corev1.RestartPolicyNever
}

// IsContainerRestartable reports whether the container may ever run again
// after it exits: by a rule that restarts, by its restartPolicy, else by
// the pod's.
func IsContainerRestartable(container *corev1.Container, spec *corev1.PodSpec) bool {
	if container.RestartPolicy != nil {
		for _, rule := range container.RestartPolicyRules {
			if rule.Action == corev1.ContainerRestartRuleActionRestart {
				return true
			}
		}
		return *container.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != corev1.RestartPolicyNever
}

// matchingRestartRule is the first of the container's rules whose exit
// codes match exitCode.
func matchingRestartRule(container *corev1.Container, exitCode int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range container.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		listed := false
		for _, code := range rule.ExitCodes.Values {
			if code == exitCode {
				listed = true
				break
			}
		}
		switch rule.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if listed {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !listed {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}
