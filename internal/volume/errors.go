package volume

import (
	"errors"
	"fmt"
)

// UnsupportedVolumeError is a volume, or a part of one, that nodelet cannot
// set up yet. The pod's author can only change the pod: retrying will not
// help.
type UnsupportedVolumeError struct {
	// Volume is the volume's name in the pod spec.
	Volume string
	// What names what is unsupported, in the plural, as the API spells
	// it: "csi volumes", "projected clusterTrustBundle sources".
	What string
}

// Error reads `volume "data": csi volumes are not supported by nodelet
// yet`.
func (e *UnsupportedVolumeError) Error() string {
	return fmt.Sprintf("volume %q: %s are not supported by nodelet yet", e.Volume, e.What)
}

// MountError is a volume that could not be set up because of what the pod
// refers to: a ConfigMap, Secret or key that does not exist, a TokenRequest
// the API server refused, a hostPath that fails its type check. Its text is
// the kubelet's FailedMount event message:
//
//	MountVolume.SetUp failed for volume "config" : configmap "app" not found
//
// The pod waits in ContainerCreating and setting up is retried, since the
// missing object may be created at any time.
type MountError struct {
	// Operation is what failed, "MountVolume.SetUp" when empty.
	Operation string
	// Volume is the volume's name in the pod spec, or the
	// PersistentVolume's for a claim (the kubelet names it so).
	Volume string
	// Err is why.
	Err error
}

// Error is the kubelet's FailedMount event message.
func (e *MountError) Error() string {
	operation := e.Operation
	if operation == "" {
		operation = "MountVolume.SetUp"
	}
	return fmt.Sprintf("%s failed for volume %q : %v", operation, e.Volume, e.Err)
}

// Unwrap gives the cause, so that apierrors.IsNotFound and the like see
// through a MountError.
func (e *MountError) Unwrap() error { return e.Err }

// ClaimError is a persistentVolumeClaim volume the pod waits for: its
// claim is missing, not bound or being deleted, its volume not bound to
// it, or used in a way its volumeMode does not allow. Its text is the
// kubelet's FailedMount event message, which names the volumes it could
// not process:
//
//	Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC shop/data: PVC is not bound
//
// The pod waits in ContainerCreating and setting up is retried, since the
// claim may be bound at any time.
type ClaimError struct {
	// Volume is the volume's name in the pod spec.
	Volume string
	// Err is why.
	Err error
}

// Error is the kubelet's FailedMount event message.
func (e *ClaimError) Error() string {
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=[%s], unattached volumes=[], failed to process volumes=[%s]: %v", e.Volume, e.Volume, e.Err)
}

// Unwrap gives the cause.
func (e *ClaimError) Unwrap() error { return e.Err }

// IsUserError reports whether err, and every error joined into it, is one
// the pod's author can cause and fix (*MountError, *ClaimError,
// *UnsupportedVolumeError):
// the reconciler shows those as FailedMount events and keeps the pod
// waiting, instead of treating them as nodelet's own failure.
func IsUserError(err error) bool {
	errs := leafErrors(err)
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if !isUserError(e) {
			return false
		}
	}
	return true
}

// UserErrors picks the user errors out of an error SetUpPod returned, one
// per failed volume, for one event each.
func UserErrors(err error) []error {
	var out []error
	for _, e := range leafErrors(err) {
		if isUserError(e) {
			out = append(out, e)
		}
	}
	return out
}

func isUserError(err error) bool {
	var mountErr *MountError
	var claimErr *ClaimError
	var unsupportedErr *UnsupportedVolumeError
	return errors.As(err, &mountErr) || errors.As(err, &claimErr) || errors.As(err, &unsupportedErr)
}

// leafErrors flattens errors.Join trees.
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, leafErrors(e)...)
	}
	return out
}
