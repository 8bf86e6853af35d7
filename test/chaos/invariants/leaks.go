package invariants

import (
	"fmt"
	"slices"
	"strings"
)

// NodeState is what a node holds that a pod leaves behind if its removal
// goes wrong, gathered after a run, with the pods the API server still
// has for the node.
type NodeState struct {
	// LivePods are the UIDs of the node's pods in the API.
	LivePods map[string]bool
	// Sandboxes and Containers are the runtime's, in any state.
	Sandboxes  []Sandbox
	Containers []Container
	// Addresses maps each address the IPAM plugin (host-local) holds to
	// the sandbox it was given to.
	Addresses map[string]string
	// NetworkNamespaces are the network namespaces mounted for pods.
	NetworkNamespaces []string
	// PodDirs, PodLogDirs and PodCgroups name the pod by UID: the pod's
	// folder, log folder and cgroup.
	PodDirs    []string
	PodLogDirs []string
	PodCgroups []string
	// PodMounts maps each mount point under a pod's folder to its pod's
	// UID.
	PodMounts map[string]string
	// CNIResults maps each result libcni cached to its sandbox's ID.
	CNIResults map[string]string
	// LogLinks maps each link to a container's log to the container's
	// ID.
	LogLinks map[string]string
}

// Sandbox is one of the runtime's pod sandboxes.
type Sandbox struct {
	ID, PodUID string
	Ready      bool
}

// Container is one of the runtime's containers.
type Container struct {
	ID, PodUID, Name string
}

// Leaks lists what the node holds that no live pod explains: sandboxes,
// containers, pod folders, log folders, cgroups and mounts of pods the
// API no longer has; addresses and cached CNI results of sandboxes that
// are not ready; more network namespaces than ready sandboxes (a pod on
// the host's network has none); log links to containers that are gone.
func Leaks(s NodeState) []string {
	var leaks []string
	gone := func(uid string) bool { return !s.LivePods[uid] }
	ready := map[string]bool{}
	for _, sandbox := range s.Sandboxes {
		if gone(sandbox.PodUID) {
			leaks = append(leaks, fmt.Sprintf("sandbox %s of gone pod %s", short(sandbox.ID), sandbox.PodUID))
		}
		if sandbox.Ready {
			ready[sandbox.ID] = true
		}
	}
	containers := map[string]bool{}
	for _, c := range s.Containers {
		containers[c.ID] = true
		if gone(c.PodUID) {
			leaks = append(leaks, fmt.Sprintf("container %s (%s) of gone pod %s", short(c.ID), c.Name, c.PodUID))
		}
	}
	for address, sandbox := range s.Addresses {
		if !ready[sandbox] {
			leaks = append(leaks, fmt.Sprintf("address %s held for sandbox %s, which is not ready", address, short(sandbox)))
		}
	}
	if len(s.NetworkNamespaces) > len(ready) {
		leaks = append(leaks, fmt.Sprintf("%d network namespaces for %d ready sandboxes: %s", len(s.NetworkNamespaces), len(ready), strings.Join(s.NetworkNamespaces, " ")))
	}
	for _, uid := range s.PodDirs {
		if gone(uid) {
			leaks = append(leaks, "pod folder of gone pod "+uid)
		}
	}
	for _, name := range s.PodLogDirs {
		if uid := name[strings.LastIndex(name, "_")+1:]; gone(uid) {
			leaks = append(leaks, "log folder "+name+" of gone pod "+uid)
		}
	}
	for _, uid := range s.PodCgroups {
		if gone(uid) {
			leaks = append(leaks, "cgroup of gone pod "+uid)
		}
	}
	for mount, uid := range s.PodMounts {
		if gone(uid) {
			leaks = append(leaks, fmt.Sprintf("mount %s of gone pod %s", mount, uid))
		}
	}
	for result, sandbox := range s.CNIResults {
		if !ready[sandbox] {
			leaks = append(leaks, fmt.Sprintf("CNI result %s of sandbox %s, which is not ready", result, short(sandbox)))
		}
	}
	for link, container := range s.LogLinks {
		if !containers[container] {
			leaks = append(leaks, fmt.Sprintf("log link %s to container %s, which is gone", link, short(container)))
		}
	}
	slices.Sort(leaks)
	return leaks
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
