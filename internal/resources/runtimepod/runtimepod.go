// Package runtimepod follows the pod a companion node's container runtime
// runs in (--cgroup-root-in-runtime-pod): nodelet puts its pods' cgroups
// inside that pod's cgroup, which it finds once, at start, through the
// process listening on the runtime's socket. When the host's kubelet
// replaces that pod (deleted by hand, by an upgrade, evicted), it kills
// everything in the old pod's cgroup and removes it, and a new pod brings
// the runtime back with a cgroup of its own. nodelet then must not make
// the old path again (a cgroup no pod of the host owns, outside every
// limit), nor put new sandboxes in a cgroup on its way out: the Watcher
// sees the replacement, stops pod cgroups being handed out, says why on
// the Node, and ends nodelet, whose container the host's kubelet starts
// again to find the new pod's cgroup.
//
// Decide is the pure decision; the Watcher gathers what it needs
// (a stat of the cgroup's folders, the socket's listener) and acts on it.
package runtimepod

import (
	"errors"
	"fmt"
)

// ReasonRuntimePodReplaced is the reason of the Node's Warning event
// that says nodelet stops because the runtime's pod was replaced.
const ReasonRuntimePodReplaced = "RuntimePodReplaced"

// ErrReplaced is the error nodelet stops with when the runtime's pod was
// replaced.
var ErrReplaced = errors.New("the container runtime's pod was replaced")

// Observation is what was seen of the runtime's pod at one moment.
type Observation struct {
	// CgroupGone is true when the pod cgroup nodelet started in has gone
	// from a hierarchy it was in.
	CgroupGone bool
	// ListenerCgroup is the pod cgroup of the process listening on the
	// runtime's socket; empty when none is known (nothing listens, as
	// while the runtime restarts in its pod, or its process ended before
	// its cgroup was read).
	ListenerCgroup string
}

// Verdict is what Decide makes of an Observation.
type Verdict struct {
	// Replaced is true when the runtime's pod is no longer the one whose
	// cgroup nodelet's pods go in.
	Replaced bool
	// Message says why, for the Node's event and the log.
	Message string
}

// Decide judges whether the runtime's pod whose cgroup is cgroup was
// replaced, from what was seen. A runtime that does not answer is not a
// replacement: containerd restarting in its pod leaves the pod and its
// cgroup (and the companion's pods) as they were. Pure.
func Decide(cgroup string, o Observation) Verdict {
	switch {
	case o.CgroupGone:
		return Verdict{Replaced: true, Message: fmt.Sprintf(
			"The container runtime's pod cgroup %s is gone: its pod was replaced, and the host's kubelet stopped the pods inside it; nodelet starts no pod and restarts to follow the new runtime pod", cgroup)}
	case o.ListenerCgroup != "" && o.ListenerCgroup != cgroup:
		return Verdict{Replaced: true, Message: fmt.Sprintf(
			"The container runtime now listens in pod cgroup %s, not %s: its pod was replaced; nodelet starts no pod and restarts to follow the new runtime pod", o.ListenerCgroup, cgroup)}
	}
	return Verdict{}
}
