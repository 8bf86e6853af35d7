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
	// it: "persistentVolumeClaim volumes", "projected clusterTrustBundle
	// sources".
	What string
}

// Error reads `volume "data": persistentVolumeClaim volumes are not
// supported by nodelet yet`.
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
	// Volume is the volume's name in the pod spec.
	Volume string
	// Err is why.
	Err error
}

// Error is the kubelet's FailedMount event message.
func (e *MountError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

// Unwrap gives the cause, so that apierrors.IsNotFound and the like see
// through a MountError.
func (e *MountError) Unwrap() error { return e.Err }

// IsUserError reports whether err, and every error joined into it, is one
// the pod's author can cause and fix (*MountError, *UnsupportedVolumeError):
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
	var unsupportedErr *UnsupportedVolumeError
	return errors.As(err, &mountErr) || errors.As(err, &unsupportedErr)
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
