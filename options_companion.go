package main

// The flags of a companion node: one that runs as a DaemonSet pod beside
// the host's kubelet (see "As a DaemonSet" in the README).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

func (o *Options) bindCompanionFlags(fs *pflag.FlagSet) {
	fs.Var(&taintsFlag{taints: &o.RegisterWithTaints}, "register-with-taints", "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"); a Node that exists keeps its own.")
	fs.Var(newMapFlag(&o.Capacity, "="), "capacity", "The Node's cpu, memory and ephemeral-storage capacity instead of the machine's, as resource=quantity pairs (e.g. cpu=2,memory=4Gi,ephemeral-storage=20Gi): a companion node's runtime pod's requests; nodefs eviction thresholds are then of that ephemeral-storage. Needs --cgroup-root-in-own-pod or --cgroup-root-in-runtime-pod.")
	fs.Var(newMapFlag(&o.NodeLabels, "="), "node-labels", "Labels added to the Node when it is created (a Node that exists keeps its own), as key=value pairs, comma separated: a companion's release. Keys in the kubernetes.io and k8s.io namespaces are refused, as the kubelet refuses them, but for the kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes (the hostname and topology labels have flags of their own), and so is "+node.LabelAgent+", nodelet's own.")
	fs.StringVar(&o.HostnameOverride, "hostname-override", o.HostnameOverride, "The Node's kubernetes.io/hostname label and Hostname address instead of its name: a companion's is its host's, the same machine.")
	fs.StringVar(&o.TopologyZone, "topology-zone", o.TopologyZone, "The Node's topology.kubernetes.io/zone label, set when it is created; empty sets none. A companion's is its host's.")
	fs.StringVar(&o.TopologyRegion, "topology-region", o.TopologyRegion, "The Node's topology.kubernetes.io/region label, as --topology-zone.")
	fs.StringVar(&o.HostRoot, "host-root", o.HostRoot, "Where the host's root is mounted when nodelet runs in a container (a companion node: /host): hostPath volumes and local persistent volumes are checked, made and mounted from there; the runtime gets their paths as --runtime-host-root says.")
	fs.StringVar(&o.RuntimeHostRoot, "runtime-host-root", o.RuntimeHostRoot, "Where the container runtime has the host's root when it runs in a container (a companion's runtime in its DaemonSet pod: /host): the host paths nodelet hands it (hostPath volumes and persistent volumes, Localhost seccomp profiles) are given under it, except those within --root-dir, which that container must mount at the same path. Empty: the runtime runs on the host and gets every path as it is.")
	fs.BoolVar(&o.HostPortsShared, "host-ports-shared", o.HostPortsShared, "The node's address and ports are its host's, shared with the pods of the host's own agent (a companion node without an address of its own): pods that hold host ports are refused (HostPortsNotSupported).")
	fs.BoolVar(&o.CgroupRootInOwnPod, "cgroup-root-in-own-pod", o.CgroupRootInOwnPod, "Make --cgroup-root inside the cgroup of nodelet's own pod (the parent of the cgroup /proc/self/cgroup names; the pod must be privileged, so that it has no cgroup namespace), and measure memory.available there: a companion node's pods then count against its DaemonSet pod's requests and limits on the host.")
	fs.BoolVar(&o.CgroupRootInRuntimePod, "cgroup-root-in-runtime-pod", o.CgroupRootInRuntimePod, "As --cgroup-root-in-own-pod, in the cgroup of the pod the container runtime runs in (the process listening on --container-runtime-endpoint, found by the socket's peer credentials; both pods must share the host's PIDs and be privileged): a companion node whose runtime runs in a DaemonSet pod of its own, which an upgrade of nodelet's does not replace.")
}

// nodeLabels are the labels the Node is created with beyond nodelet's
// own: --node-labels and the topology labels.
func (o *Options) nodeLabels() map[string]string {
	labels := o.topologyLabels()
	for key, value := range o.NodeLabels {
		labels[key] = value
	}
	return labels
}

// checkNodeLabel refuses, as the kubelet's --node-labels does, a label in
// the kubernetes.io and k8s.io namespaces other than under the prefixes
// a node may set (the ones nodelet sets have their own flags), and
// nodelet's own agent label. Pure.
func checkNodeLabel(key, value string) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("--node-labels: key %q: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return fmt.Errorf("--node-labels: the %s label %q: %s", key, value, strings.Join(errs, "; "))
	}
	if key == node.LabelAgent {
		return fmt.Errorf("--node-labels: %s is nodelet's own", key)
	}
	namespace, _, found := strings.Cut(key, "/")
	if !found {
		return nil
	}
	in := func(ns string) bool { return namespace == ns || strings.HasSuffix(namespace, "."+ns) }
	if (in("kubernetes.io") || in("k8s.io")) && !in("kubelet.kubernetes.io") && !in("node.kubernetes.io") {
		return fmt.Errorf("--node-labels: %s is in a namespace a node may not set labels in (kubernetes.io, k8s.io), but for the kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes", key)
	}
	return nil
}

// topologyLabels are --topology-zone and --topology-region as the Node's
// labels: an empty one is no label, as a zone named "" would be a
// topology domain of its own.
func (o *Options) topologyLabels() map[string]string {
	labels := map[string]string{}
	for key, value := range map[string]string{corev1.LabelTopologyZone: o.TopologyZone, corev1.LabelTopologyRegion: o.TopologyRegion} {
		if value != "" {
			labels[key] = value
		}
	}
	return labels
}

// parseCapacity is --capacity: cpu, memory and ephemeral-storage, each a
// positive quantity.
func parseCapacity(pairs map[string]string) (corev1.ResourceList, error) {
	capacity := corev1.ResourceList{}
	for name, value := range pairs {
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		default:
			return nil, fmt.Errorf("--capacity: %q is not cpu, memory or ephemeral-storage", name)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("--capacity: %s=%q: %w", name, value, err)
		}
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("--capacity: %s=%s is not positive", name, value)
		}
		capacity[corev1.ResourceName(name)] = q
	}
	return capacity, nil
}

// validateCompanion checks the companion's flags. A capacity of the pod's
// own is only true when the pods are inside the pod's cgroup, where the
// host's kubelet holds them to it, and memory.available is measured there:
// --capacity needs --cgroup-root-in-own-pod or --cgroup-root-in-runtime-pod,
// which exclude each other.
func (o *Options) validateCompanion() error {
	if _, err := parseCapacity(o.Capacity); err != nil {
		return err
	}
	for key, value := range o.topologyLabels() {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return fmt.Errorf("the %s label %q: %s", key, value, strings.Join(errs, "; "))
		}
	}
	for key, value := range o.NodeLabels {
		if err := checkNodeLabel(key, value); err != nil {
			return err
		}
	}
	for flag, root := range map[string]string{"--host-root": o.HostRoot, "--runtime-host-root": o.RuntimeHostRoot} {
		if root != "" && (!path.IsAbs(root) || path.Clean(root) != root || root == "/") {
			return fmt.Errorf("%s %q: want a clean absolute path other than /", flag, root)
		}
	}
	if o.HostnameOverride != "" {
		if errs := validation.IsValidLabelValue(o.HostnameOverride); len(errs) > 0 {
			return fmt.Errorf("--hostname-override %q: %s", o.HostnameOverride, strings.Join(errs, "; "))
		}
	}
	if o.CgroupRootInOwnPod && o.CgroupRootInRuntimePod {
		return errors.New("--cgroup-root-in-own-pod and --cgroup-root-in-runtime-pod exclude each other: the pods' cgroups go in one pod's")
	}
	if o.CgroupDriver == configv1alpha1.CgroupDriverSystemd && (o.CgroupRootInOwnPod || o.CgroupRootInRuntimePod) {
		// A pod's cgroup is made by another node agent's runtime, and
		// systemd makes slices only inside its own slices.
		return errors.New("--cgroup-driver=systemd cannot put the pods' cgroups inside a pod's cgroup (--cgroup-root-in-own-pod, --cgroup-root-in-runtime-pod): use --cgroup-driver=cgroupfs")
	}
	if len(o.Capacity) > 0 && !o.CgroupRootInOwnPod && !o.CgroupRootInRuntimePod {
		return errors.New("--capacity needs --cgroup-root-in-own-pod or --cgroup-root-in-runtime-pod: the pods must be held to it by the pod's cgroup")
	}
	if o.CgroupRootInRuntimePod {
		if _, err := runtimeSocketPath(o.ContainerRuntimeEndpoint); err != nil {
			return fmt.Errorf("--cgroup-root-in-runtime-pod: %w", err)
		}
	}
	return nil
}

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
}

// readMachineShare reads the machine's facts and, with
// --cgroup-root-in-own-pod, nodelet's own cgroup, with
// --cgroup-root-in-runtime-pod the runtime's (waiting for it to listen).
func (o *Options) readMachineShare(ctx context.Context) (machineShare, error) {
	machine, err := node.ReadMachineInfo(o.RootDir)
	if err != nil {
		return machineShare{}, err
	}
	capacity, err := parseCapacity(o.Capacity)
	if err != nil {
		return machineShare{}, err
	}
	_, nodeFsShare := capacity[corev1.ResourceEphemeralStorage]
	share := machineShare{machine: machine.Within(capacity, 0), nodeFsShare: nodeFsShare, cgroupRoot: o.CgroupRoot}
	var flag, procCgroup string
	switch {
	case o.CgroupRootInOwnPod:
		flag, procCgroup = "--cgroup-root-in-own-pod", "/proc/self/cgroup"
	case o.CgroupRootInRuntimePod:
		pid, err := o.runtimePID(ctx)
		if err != nil {
			return machineShare{}, fmt.Errorf("--cgroup-root-in-runtime-pod: %w", err)
		}
		flag, procCgroup = "--cgroup-root-in-runtime-pod", fmt.Sprintf("/proc/%d/cgroup", pid)
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
	share.cgroupRoot, share.memoryCgroup = path.Join(pod, o.CgroupRoot), pod
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

// podCIDRs is --pod-cidr as a list; none takes the Node's.
func (o *Options) podCIDRs() []string {
	if o.PodCIDR == "" {
		return nil
	}
	return strings.Split(o.PodCIDR, ",")
}

// nodeIPs is --node-ip as the node status reporter takes it: none lets it
// find the host's.
func (o *Options) nodeIPs() []string {
	if o.NodeIP == "" {
		return nil
	}
	return []string{o.NodeIP}
}

// taintsFlag is --register-with-taints: each time it is given it replaces
// the list, as the kubelet's.
type taintsFlag struct{ taints *[]corev1.Taint }

func (f *taintsFlag) String() string {
	if f.taints == nil {
		return ""
	}
	return node.FormatTaints(*f.taints)
}

func (f *taintsFlag) Set(value string) error {
	taints, err := node.ParseTaints(value)
	if err != nil {
		return err
	}
	*f.taints = taints
	return nil
}

func (f *taintsFlag) Type() string { return "[]v1.Taint" }
