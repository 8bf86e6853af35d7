package container

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
// plain value, an input of the runtime's ComputePodActions and of status
// generation: a result belongs to the instance it was taken of, so a
// restarted container starts without one.
type ProbeResults map[ContainerID]ContainerProbeResults
