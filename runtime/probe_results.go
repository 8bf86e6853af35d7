package runtime

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ProbeResult is what a container's probe last concluded. The zero value,
// ProbeUnknown, also stands for "no result yet": the prober has not set one
// for this container instance.
type ProbeResult int8

const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

func (r ProbeResult) String() string {
	switch r {
	case ProbeSuccess:
		return "Success"
	case ProbeFailure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// ContainerProbeResults are one container instance's probe results.
type ContainerProbeResults struct {
	Liveness  ProbeResult
	Readiness ProbeResult
	Startup   ProbeResult
}

// ProbeResults are a pod's probe results by container instance. They are a
// plain value, an input of ComputePodActions and of status generation: a
// result belongs to the instance it was taken of, so a restarted container
// starts without one.
type ProbeResults map[ContainerID]ContainerProbeResults

// ParseContainerID reads a container ID as the API shows it
// ("containerd://<id>"); a string without a type is taken as a bare ID.
func ParseContainerID(s string) ContainerID {
	if typ, id, ok := strings.Cut(s, "://"); ok {
		return ContainerID{Type: typ, ID: id}
	}
	return ContainerID{ID: s}
}

// ExpandStaticEnv expands the $(NAME) references of an exec probe's
// command with the values the container's env gives as plain text, as the
// kubelet does: a probe does not see values from the downward API,
// ConfigMaps or Secrets.
func ExpandStaticEnv(command []string, env []corev1.EnvVar) []string {
	values := make(map[string]string, len(env))
	for _, e := range env {
		values[e.Name] = e.Value
	}
	return expandAll(command, values)
}
