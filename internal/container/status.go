package container

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// PodStatus is the runtime's record of one pod: every sandbox and container
// that carries the pod's UID label. It is rebuilt from CRI alone (labels,
// annotations and the runtime's own statuses), so nothing in it is lost when
// nodelet restarts.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes, newest first.
	Sandboxes []*SandboxStatus
	// Containers of every sandbox, newest first.
	Containers []*ContainerStatus
}

// SandboxState is the CRI sandbox state.
type SandboxState string

const (
	SandboxReady    SandboxState = "Ready"
	SandboxNotReady SandboxState = "NotReady"
)

// SandboxStatus is what nodelet needs to know of one pod sandbox.
type SandboxStatus struct {
	ID        string
	Attempt   uint32
	State     SandboxState
	CreatedAt time.Time
	// IPs of the pod network, primary first; empty for host-network pods.
	IPs []string
	// HostNetwork is true when the sandbox shares the node's network.
	HostNetwork bool
}

// ContainerState is the CRI container state.
type ContainerState string

const (
	ContainerCreated ContainerState = "Created"
	ContainerRunning ContainerState = "Running"
	ContainerExited  ContainerState = "Exited"
	ContainerUnknown ContainerState = "Unknown"
)

// ContainerID names a container together with the runtime that runs it, as
// the API shows it: "containerd://<id>".
type ContainerID struct {
	Type string
	ID   string
}

func (c ContainerID) String() string {
	if c.ID == "" {
		return ""
	}
	return fmt.Sprintf("%s://%s", c.Type, c.ID)
}

// MarshalText writes the ID as the API shows it, so that maps keyed by
// container (a plan's ContainersToKill) can be logged as JSON.
func (c ContainerID) MarshalText() ([]byte, error) {
	return []byte(c.String()), nil
}

// ParseContainerID reads a container ID as the API shows it
// ("containerd://<id>"); a string without a type is taken as a bare ID.
func ParseContainerID(s string) ContainerID {
	if typ, id, ok := strings.Cut(s, "://"); ok {
		return ContainerID{Type: typ, ID: id}
	}
	return ContainerID{ID: s}
}

// ContainerStatus is one container instance as the runtime reports it,
// decoded together with the labels and annotations nodelet wrote on it.
type ContainerStatus struct {
	ID        ContainerID
	Name      string
	SandboxID string
	State     ContainerState

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	Reason     string
	Message    string

	// Image is the image the runtime resolved the spec's image to;
	// ImageRef is its digest or ID.
	Image    string
	ImageRef string

	// Hash, RestartCount and RestartBackoff come from the container's
	// annotations (the runtime's labels.go).
	Hash         string
	RestartCount int
	// RestartBackoff is the crash-loop delay that was waited before this
	// instance was started; the next one doubles it.
	RestartBackoff time.Duration
	// TerminationGracePeriod is the pod's grace period when the container was
	// created, used to stop it when its Pod is gone.
	TerminationGracePeriod time.Duration

	// Resources is what the runtime reports it applied; nil when it
	// reports nothing.
	Resources *AppliedResources
	// Actuated are the resources nodelet gave the instance: what it was
	// created with, or what a resize applied since (the kubelet's actuated
	// resources). nil when unknown: made before nodelet recorded them.
	Actuated *ResizeValues

	LogPath string
}

// SandboxByID returns the sandbox with the given ID, or nil.
func (s *PodStatus) SandboxByID(id string) *SandboxStatus {
	for _, sb := range s.Sandboxes {
		if sb.ID == id {
			return sb
		}
	}
	return nil
}

// LatestContainer returns the newest instance of the named container, or nil.
func (s *PodStatus) LatestContainer(name string) *ContainerStatus {
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// RunningContainers returns every running container instance.
func (s *PodStatus) RunningContainers() []*ContainerStatus {
	var running []*ContainerStatus
	for _, c := range s.Containers {
		if c.State == ContainerRunning {
			running = append(running, c)
		}
	}
	return running
}

// IPs returns the IPs of the newest ready sandbox.
func (s *PodStatus) IPs() []string {
	for _, sb := range s.Sandboxes {
		if sb.State == SandboxReady {
			return sb.IPs
		}
	}
	return nil
}
