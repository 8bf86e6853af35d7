package container

import (
	"fmt"
	"time"
)

// Waiting reasons, as the kubelet reports them on a container's status.
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

// ContainerError is why a container could not be started. Its Reason is
// the kubelet's waiting reason for that failure; Message is what the user
// reads next to it.
type ContainerError struct {
	Reason  string
	Message string
	// BackOffUntil is when the image pull back-off this failure started,
	// or is waiting out, ends: the next pull is due then. Zero for other
	// failures.
	BackOffUntil time.Time
}

func (e *ContainerError) Error() string {
	if e.Message == "" {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Reason, e.Message)
}
