package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/eviction"
	"github.com/nodelet/nodelet/internal/resources/runtimepod"
)

// buildCgroups makes the pods' cgroup tree. The Node's allocatable keeps
// the reservations and hard eviction thresholds from pods; the pods'
// cgroup is limited to the capacity less the reservations under
// --enforce-node-allocatable=pods (the thresholds are the eviction
// manager's to defend), to the capacity otherwise.
func (n *nodelet) buildCgroups() error {
	opts := n.opts
	var err error
	if n.allocatable, err = opts.AllocatableConfig(); err != nil {
		return err
	}
	// Checked before the pods' cgroup is limited: a reservation over the
	// capacity would leave the running pods nothing.
	if err := n.allocatable.Validate(node.Capacity(n.share.machine, int(opts.MaxPods))); err != nil {
		return fmt.Errorf("node %s: %w", opts.NodeName, err)
	}
	n.podCgroups, err = cgroups.New(cgroups.Options{
		Root:            n.share.cgroupRoot,
		Driver:          opts.CgroupDriver,
		PodPidsLimit:    *opts.PodPidsLimit,
		NodeAllocatable: n.allocatable.PodsCgroupLimits(node.PodsCgroupCapacity(n.share.machine)),
		// A pod's cgroup, the host kubelet's to make and remove.
		Within: n.share.podCgroup,
	})
	if err != nil {
		return fmt.Errorf("setting up pod cgroups: %w", err)
	}
	if opts.CgroupRootInRuntimePod {
		if err := n.followRuntimePod(); err != nil {
			return err
		}
	}
	if err := enforceNodeAllocatable(n.podCgroups, n.allocatable, n.recorder, opts.NodeName, n.log.WithName("cgroups")); err != nil {
		return fmt.Errorf("node %s: %w", opts.NodeName, err)
	}
	return nil
}

// followRuntimePod watches the runtime's pod the pods' cgroups are in,
// and stops nodelet when it is replaced (runtimepod.Watcher). It needs no
// API server, and runs from the start.
func (n *nodelet) followRuntimePod() error {
	socket, err := options.RuntimeSocketPath(n.opts.ContainerRuntimeEndpoint)
	if err != nil {
		return err
	}
	watcher, err := runtimepod.New(runtimepod.Options{
		Cgroup:      n.share.podCgroup,
		PID:         n.share.runtimePID,
		Socket:      socket,
		Hierarchies: n.podCgroups.Hierarchies(),
		NodeName:    n.opts.NodeName,
		Events:      n.clientset.CoreV1(),
		Seal:        n.podCgroups.Seal,
		Clock:       n.clock,
		Log:         n.log.WithName("runtimepod"),
	})
	if err != nil {
		return fmt.Errorf("--cgroup-root-in-runtime-pod: %w", err)
	}
	n.local = append(n.local, watcher)
	return nil
}

// The kubelet's reasons for the Node events of allocatable enforcement.
const (
	reasonNodeAllocatableEnforced          = "NodeAllocatableEnforced"
	reasonFailedNodeAllocatableEnforcement = "FailedNodeAllocatableEnforcement"
)

// enforceNodeAllocatable tells on the Node what --enforce-node-allocatable
// did, as the kubelet: the pods' cgroup limit (set when the cgroup tree
// was made), then the system-reserved and kube-reserved cgroups limited to
// their reservations. A reserved cgroup that cannot be limited stops
// nodelet, as it stops the kubelet: the reservation would be only on paper.
func enforceNodeAllocatable(podCgroups *cgroups.Manager, config node.AllocatableConfig, recorder record.EventRecorder, nodeName string, log logr.Logger) error {
	ref := node.Ref(nodeName)
	if slices.Contains(config.EnforceNodeAllocatable, eviction.EnforcePods) {
		recorder.Event(ref, corev1.EventTypeNormal, reasonNodeAllocatableEnforced, "Updated Node Allocatable limit across pods")
	}
	for _, reserved := range config.ReservedCgroups() {
		log.Info("Enforcing reservation on cgroup", "level", reserved.Level, "cgroupName", reserved.Name, "limits", reserved.Limits)
		if err := podCgroups.EnforceExisting(reserved.Name, reserved.Limits); err != nil {
			message := fmt.Sprintf("Failed to enforce %s Cgroup Limits on %q: %v", titleWords(reserved.What), reserved.Name, err)
			recorder.Event(ref, corev1.EventTypeWarning, reasonFailedNodeAllocatableEnforcement, message)
			return errors.New(message)
		}
		recorder.Eventf(ref, corev1.EventTypeNormal, reasonNodeAllocatableEnforced, "Updated limits on %s cgroup %v", reserved.What, reserved.Name)
	}
	return nil
}

// titleWords capitalises each word, as the kubelet's failure message says
// "System Reserved" where its success says "system reserved".
func titleWords(s string) string {
	b := []byte(s)
	for i := range b {
		if (i == 0 || b[i-1] == ' ') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}
