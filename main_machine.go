package main

// What of the machine a node has: all of it, or, for a companion node in a
// DaemonSet pod beside the host's kubelet (docs/installation.md, "What the
// companion shares with its host"), that pod's share.

import (
	"context"
	"fmt"
	"os"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/runtimepod"
)

// machineShare is what of the machine the node has: all of it, or a
// companion node's DaemonSet pod's CPU, memory, ephemeral storage, PIDs
// and cgroup.
type machineShare struct {
	machine node.MachineInfo
	// nodeFsShare is true when the machine's ephemeral storage is the
	// pod's (--capacity's ephemeral-storage), not its file system's size:
	// nodefs.available is then measured against it.
	nodeFsShare bool
	// pidsCgroupDir is the pod's cgroup's folder in the pids hierarchy
	// when the host's kubelet limits its tasks (pids.max), where
	// pid.available is measured; "" for the machine's.
	pidsCgroupDir string
	// cgroupRoot is --cgroup-root, inside the own pod's cgroup with
	// --cgroup-root-in-own-pod, the runtime's pod's with
	// --cgroup-root-in-runtime-pod.
	cgroupRoot string
	// memoryCgroup is where memory.available is measured: "" for the
	// root, that pod's cgroup otherwise.
	memoryCgroup string
	// podCgroup is the pod's cgroup the pods' cgroups go inside, "" for
	// none; with --cgroup-root-in-runtime-pod, runtimePID is the process
	// it was found by, listening on the runtime's socket.
	podCgroup  string
	runtimePID int
}

// readMachineShare reads the machine's facts and, with
// --cgroup-root-in-own-pod, nodelet's own cgroup, with
// --cgroup-root-in-runtime-pod the runtime's (waiting for it to listen).
func readMachineShare(ctx context.Context, opts *options.NodeletServer) (machineShare, error) {
	machine, err := node.ReadMachineInfo(opts.RootDir)
	if err != nil {
		return machineShare{}, err
	}
	capacity, err := options.ParseCapacity(opts.Capacity)
	if err != nil {
		return machineShare{}, err
	}
	_, nodeFsShare := capacity[corev1.ResourceEphemeralStorage]
	share := machineShare{machine: machine.Within(capacity, 0), nodeFsShare: nodeFsShare, cgroupRoot: opts.CgroupRoot}
	var flag, procCgroup string
	switch {
	case opts.CgroupRootInOwnPod:
		flag, procCgroup = "--cgroup-root-in-own-pod", "/proc/self/cgroup"
	case opts.CgroupRootInRuntimePod:
		// A companion node whose container runtime runs in a DaemonSet
		// pod of its own, whose cgroup holds the companion's pods
		// (docs/installation.md, "As a DaemonSet"): nodelet's own pod can
		// then be replaced, by an upgrade, without the host's kubelet
		// killing them. Found through the process listening on the
		// runtime's socket; followed by runtimepod.Watcher.
		socket, err := options.RuntimeSocketPath(opts.ContainerRuntimeEndpoint)
		if err != nil {
			return machineShare{}, fmt.Errorf("--cgroup-root-in-runtime-pod: %w", err)
		}
		if share.runtimePID, err = runtimepod.WaitForListener(ctx, socket, runtimeWaitTimeout); err != nil {
			return machineShare{}, fmt.Errorf("--cgroup-root-in-runtime-pod: %w", err)
		}
		flag, procCgroup = "--cgroup-root-in-runtime-pod", fmt.Sprintf("/proc/%d/cgroup", share.runtimePID)
	default:
		return share, nil
	}
	data, err := os.ReadFile(procCgroup)
	if err != nil {
		return machineShare{}, fmt.Errorf("%s: %w", flag, err)
	}
	pod, err := cgroups.PodCgroup(string(data))
	if err != nil {
		return machineShare{}, fmt.Errorf("%s: %s: %w", flag, procCgroup, err)
	}
	share.cgroupRoot, share.memoryCgroup, share.podCgroup = path.Join(pod, opts.CgroupRoot), pod, pod
	if share.pidsCgroupDir, share.machine.MaxPID, err = podPidsLimit(pod, share.machine.MaxPID); err != nil {
		return machineShare{}, fmt.Errorf("%s: %w", flag, err)
	}
	return share, nil
}

// podPidsLimit is the pod's cgroup's folder in the pids hierarchy and the
// node's PID limit, when the host's kubelet limits the pod's tasks (its
// podPidsLimit, the pod cgroup's pids.max) below the machine's: the pod's
// processes, the companion's pods' among them, can have no more. Without
// a limit the machine's stays, and pid.available is the machine's.
func podPidsLimit(pod string, machineMaxPID int64) (string, int64, error) {
	hierarchies, err := cgroups.HostHierarchies()
	if err != nil {
		return "", 0, err
	}
	dir, ok := cgroups.PidsDir(hierarchies, pod)
	if !ok {
		return "", machineMaxPID, nil
	}
	limit, err := cgroups.ReadPidsMax(dir)
	if err != nil {
		return "", 0, fmt.Errorf("the PID limit of pod cgroup %s: %w", pod, err)
	}
	if limit == 0 || (machineMaxPID > 0 && limit >= machineMaxPID) {
		return "", machineMaxPID, nil
	}
	return dir, limit, nil
}

// nodeFsShareBytes is the node's ephemeral storage when it is a share of
// nodefs, 0 when it is the file system's size.
func (s machineShare) nodeFsShareBytes() int64 {
	if !s.nodeFsShare {
		return 0
	}
	return s.machine.EphemeralStorageBytes
}

// readMachine is the node status reporter's Machine: the share, read once.
func (s machineShare) readMachine() (node.MachineInfo, error) { return s.machine, nil }

// runtimeWaitTimeout bounds the wait for the runtime to listen when
// nodelet starts with --cgroup-root-in-runtime-pod: both DaemonSets' pods
// start together, and the runtime's may still be pulling its image.
const runtimeWaitTimeout = 5 * time.Minute
