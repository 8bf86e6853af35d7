package options

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/node"
)

// The values of --node-identity.
const (
	// NodeIdentityKubeconfig: --kubeconfig (or the in-cluster
	// configuration) holds the node's own credentials.
	NodeIdentityKubeconfig = "kubeconfig"
	// NodeIdentityCSR: --kubeconfig (or the in-cluster configuration, the
	// DaemonSet pod's bound service account token) only requests the
	// node's client certificate, with which nodelet then speaks.
	NodeIdentityCSR = "csr"
)

// Flags are the settings that are flags alone, as the kubelet's
// KubeletFlags: they belong to this one node or to how this nodelet is
// deployed (beside a host's kubelet, in a DaemonSet pod), not to the
// configuration that nodes share, so the configuration file does not hold
// them. Each field's `flag` tag names its flag and its doc comment is the
// flag's description; NewFlags gives their defaults.
type Flags struct {
	// The node's identity.

	// Config is a NodeletConfiguration file (config.nodelet.dev/v1alpha1)
	// with any of the settings but the node's identity and a companion's
	// deployment, which are flags alone (docs/configuration.md lists
	// which); flags given on the command line win over it.
	Config string `flag:"config"`
	// Kubeconfig is the kubeconfig to reach the API server as the node;
	// empty is the in-cluster configuration, or $KUBECONFIG.
	Kubeconfig string `flag:"kubeconfig"`
	// BootstrapKubeconfig is a kubeconfig with a bootstrap token that
	// requests the node's
	// client certificate (a CSR for system:node:<node-name>) when
	// --kubeconfig is missing or its certificate is unusable or expired;
	// --kubeconfig is then written to point at the certificate in
	// --cert-dir, which nodelet renews with itself before it expires. As
	// the kubelet's.
	BootstrapKubeconfig string `flag:"bootstrap-kubeconfig"`
	// NodeIdentity is where the node's credentials come from: "kubeconfig"
	// (--kubeconfig, or in-cluster, is the node's) or "csr" (--kubeconfig,
	// or in-cluster, is the DaemonSet pod's bound service account token,
	// which only requests the node's client certificate through a CSR;
	// nodelet then speaks with that certificate alone, kept in --cert-dir
	// and renewed before it expires).
	NodeIdentity string `flag:"node-identity"`
	// NodeName is the Node nodelet registers and runs pods for; the
	// default is the host's name, lowercased.
	NodeName string `flag:"node-name"`
	// NodeIP is the Node's InternalIP, and pods' hostIP; empty is the
	// host's first non-loopback address.
	NodeIP string `flag:"node-ip"`
	// HostnameOverride is the Node's kubernetes.io/hostname label and
	// Hostname address instead of its name: a companion's is its host's,
	// the same machine.
	HostnameOverride string `flag:"hostname-override"`
	// NodeLabels are labels added to the Node when it is created (a Node that
	// exists keeps its own), as key=value pairs, comma separated: a
	// companion's release. Keys in the kubernetes.io and k8s.io namespaces
	// are refused, as the kubelet refuses them, but for the
	// kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes (the hostname
	// and topology labels have flags of their own), and so is
	// nodelet.dev/agent, nodelet's own.
	NodeLabels map[string]string `flag:"node-labels"`
	// TopologyZone is the Node's topology.kubernetes.io/zone label, set
	// when it is created; empty sets none. A companion's is its host's.
	TopologyZone string `flag:"topology-zone"`
	// TopologyRegion is the Node's topology.kubernetes.io/region label, as
	// --topology-zone.
	TopologyRegion string `flag:"topology-region"`

	// A companion node, in a DaemonSet pod beside the host's kubelet.

	// Capacity is the Node's cpu, memory and ephemeral-storage capacity
	// instead of the machine's, as resource=quantity pairs (e.g.
	// cpu=2,memory=4Gi,ephemeral-storage=20Gi): a companion node's runtime
	// pod's requests; nodefs eviction thresholds are then of that
	// ephemeral-storage. Needs --cgroup-root-in-own-pod or
	// --cgroup-root-in-runtime-pod.
	Capacity map[string]string `flag:"capacity"`
	// HostRoot is where the host's root is mounted when nodelet runs in a
	// container (a companion node: /host): hostPath volumes and local
	// persistent volumes are checked, made and mounted from there; the
	// runtime gets their paths as --runtime-host-root says.
	HostRoot string `flag:"host-root"`
	// RuntimeHostRoot is where the container runtime has the host's root
	// when it runs in a container (a companion's runtime in its DaemonSet
	// pod: /host): the host paths nodelet hands it (hostPath volumes and
	// persistent volumes, Localhost seccomp profiles) are given under it,
	// except those within --root-dir, which that container must mount at
	// the same path. Empty: the runtime runs on the host and gets every
	// path as it is.
	RuntimeHostRoot string `flag:"runtime-host-root"`
	// HostPortsShared is whether the node's address and ports are its
	// host's, shared with the pods of the host's own agent (a companion
	// node without an address of its own): pods that hold host ports are
	// then refused (HostPortsNotSupported).
	HostPortsShared bool `flag:"host-ports-shared"`
	// CgroupRootInOwnPod is whether --cgroup-root is made inside the
	// cgroup of nodelet's own pod (the parent of the cgroup
	// /proc/self/cgroup names; the pod must be privileged, so that it has
	// no cgroup namespace), and memory.available measured there: a
	// companion node's pods then count against its DaemonSet pod's
	// requests and limits on the host.
	CgroupRootInOwnPod bool `flag:"cgroup-root-in-own-pod"`
	// CgroupRootInRuntimePod is as CgroupRootInOwnPod, in the cgroup
	// of the pod the container runtime runs in (the process listening on
	// --container-runtime-endpoint, found by the socket's peer credentials;
	// both pods must share the host's PIDs and be privileged): a companion
	// node whose runtime runs in a DaemonSet pod of its own, which an
	// upgrade of nodelet's does not replace.
	CgroupRootInRuntimePod bool `flag:"cgroup-root-in-runtime-pod"`
	// RuntimeRevision is the revision of the container runtime its
	// deployment wants, as key=value pairs, comma separated (the chart's:
	// the runtime pod's image, and checksums of its configuration and of
	// its pod's other settings). The runtime's pod records the revision it
	// was started with in the file runtime-revision beside its socket
	// (--container-runtime-endpoint); while the two differ, or there is no
	// record, the Node's RuntimeOutOfDate condition is True. Empty: no
	// such condition.
	RuntimeRevision string `flag:"runtime-revision"`

	// The kubelet's command line, where nodelet stands in for the kubelet.

	// ConfigDir is a folder of drop-in configuration files, as the
	// kubelet's: those named *.conf, in lexical order (subfolders walked
	// into), each a NodeletConfiguration or a KubeletConfiguration merged
	// over the Config file and the drop-ins before it, objects field by
	// field, lists replaced.
	ConfigDir string `flag:"config-dir"`
	// Version is "true" to print the version of Kubernetes nodelet
	// implements, with nodelet's own as build metadata, and exit, as the
	// kubelet's.
	Version string `flag:"version"`
	// Verbosity is the log verbosity, as the kubelet's --v: N logs what
	// --zap-log-level=N would; --zap-log-level, given, wins.
	Verbosity int32 `flag:"v"`
	// LoggingFormat is the kubelet's log format: "text" (zap's console
	// encoder) or "json"; empty leaves --zap-encoder's.
	LoggingFormat string `flag:"logging-format"`
	// FeatureGates are the kubelet's feature gates, as name=bool pairs:
	// a gate set to its default in Kubernetes v1.36, or one nodelet
	// honours, is taken; any other is refused by name.
	FeatureGates map[string]string `flag:"feature-gates"`
	// CloudProvider is "" or "external", as the kubelet's: "external"
	// registers the Node with the node.cloudprovider.kubernetes.io/uninitialized
	// taint, for the cloud's controller manager to remove. The kubelet has
	// no other since v1.31.
	CloudProvider string `flag:"cloud-provider"`
	// ProviderID is the Node's spec.providerID: not set by nodelet yet, so
	// refused when given.
	ProviderID string `flag:"provider-id"`
	// PodInfraContainerImage is refused, as the kubelet's v1.36 refuses it
	// (it was removed in v1.35): the sandbox image is the container
	// runtime's setting.
	PodInfraContainerImage string `flag:"pod-infra-container-image"`
	// RuntimeCgroups is the cgroup the kubelet moves the container runtime
	// into: refused when given, as nodelet moves no process.
	RuntimeCgroups string `flag:"runtime-cgroups"`
	// KubeletCgroups is the cgroup the kubelet moves itself into: refused
	// when given, as RuntimeCgroups.
	KubeletCgroups string `flag:"kubelet-cgroups"`
	// FailSwapOn is the kubelet's check that the node has no swap: taken
	// false only, as nodelet does not check the node's swap.
	FailSwapOn bool `flag:"fail-swap-on"`
	// RotateCertificates is the kubelet's renewal of its client
	// certificate: taken either way, as nodelet renews the one it requested
	// (BootstrapKubeconfig, NodeIdentity csr) before it expires.
	RotateCertificates bool `flag:"rotate-certificates"`
	// ImageCredentialProviderConfig is the kubelet's credential provider
	// plugins' configuration: refused when given, not implemented yet.
	ImageCredentialProviderConfig string `flag:"image-credential-provider-config"`
	// ImageCredentialProviderBinDir is the credential provider plugins'
	// folder: refused when given, as ImageCredentialProviderConfig.
	ImageCredentialProviderBinDir string `flag:"image-credential-provider-bin-dir"`
}

// NewFlags are the flags' defaults, on this host.
func NewFlags() Flags {
	host, _ := os.Hostname()
	return newFlags(host)
}

// newFlags are the flags' defaults on a host of that name: the one place
// they are written. The node's name is the host's, lowercased: node names
// are lowercase, host names need not be.
func newFlags(host string) Flags {
	return Flags{
		NodeIdentity: NodeIdentityKubeconfig,
		NodeName:     strings.ToLower(host),
	}
}

// validate checks the node's identity: its name, and how its credentials
// are had.
func (f *Flags) validate() error {
	if f.NodeName == "" {
		return errors.New("--node-name is required when the host name is unknown")
	}
	if f.NodeIdentity != NodeIdentityKubeconfig && f.NodeIdentity != NodeIdentityCSR {
		return fmt.Errorf("--node-identity %q: want %s or %s", f.NodeIdentity, NodeIdentityKubeconfig, NodeIdentityCSR)
	}
	return f.validateBootstrap()
}

// validateBootstrap checks --bootstrap-kubeconfig against the flags it
// goes with: it needs --kubeconfig, the file it writes, and is the host's
// way to the node's certificate, not the DaemonSet pod's.
func (f *Flags) validateBootstrap() error {
	switch {
	case f.BootstrapKubeconfig == "":
		return nil
	case f.Kubeconfig == "":
		return errors.New("--bootstrap-kubeconfig needs --kubeconfig: the kubeconfig it writes for the node's certificate")
	case f.NodeIdentity == NodeIdentityCSR:
		return errors.New("--bootstrap-kubeconfig and --node-identity=csr are two ways to the node's certificate: give one")
	}
	return nil
}

// validateCompanion checks the companion's flags, with the two settings of
// the configuration they depend on: the cgroup driver and the runtime's
// endpoint. A capacity of the pod's
// own is only true when the pods are inside the pod's cgroup, where the
// host's kubelet holds them to it, and memory.available is measured there:
// --capacity needs --cgroup-root-in-own-pod or --cgroup-root-in-runtime-pod,
// which exclude each other.
func (f *Flags) validateCompanion(config *configv1alpha1.NodeletConfiguration) error {
	if _, err := ParseCapacity(f.Capacity); err != nil {
		return err
	}
	for key, value := range f.TopologyLabels() {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return fmt.Errorf("the %s label %q: %s", key, value, strings.Join(errs, "; "))
		}
	}
	for key, value := range f.NodeLabels {
		if err := checkNodeLabel(key, value); err != nil {
			return err
		}
	}
	for flag, root := range map[string]string{"--host-root": f.HostRoot, "--runtime-host-root": f.RuntimeHostRoot} {
		if root != "" && (!path.IsAbs(root) || path.Clean(root) != root || root == "/") {
			return fmt.Errorf("%s %q: want a clean absolute path other than /", flag, root)
		}
	}
	if f.HostnameOverride != "" {
		if errs := validation.IsValidLabelValue(f.HostnameOverride); len(errs) > 0 {
			return fmt.Errorf("--hostname-override %q: %s", f.HostnameOverride, strings.Join(errs, "; "))
		}
	}
	if f.CgroupRootInOwnPod && f.CgroupRootInRuntimePod {
		return errors.New("--cgroup-root-in-own-pod and --cgroup-root-in-runtime-pod exclude each other: the pods' cgroups go in one pod's")
	}
	if config.CgroupDriver == configv1alpha1.CgroupDriverSystemd && (f.CgroupRootInOwnPod || f.CgroupRootInRuntimePod) {
		// A pod's cgroup is made by another node agent's runtime, and
		// systemd makes slices only inside its own slices.
		return errors.New("--cgroup-driver=systemd cannot put the pods' cgroups inside a pod's cgroup (--cgroup-root-in-own-pod, --cgroup-root-in-runtime-pod): use --cgroup-driver=cgroupfs")
	}
	if len(f.Capacity) > 0 && !f.CgroupRootInOwnPod && !f.CgroupRootInRuntimePod {
		return errors.New("--capacity needs --cgroup-root-in-own-pod or --cgroup-root-in-runtime-pod: the pods must be held to it by the pod's cgroup")
	}
	if f.CgroupRootInRuntimePod {
		if _, err := RuntimeSocketPath(config.ContainerRuntimeEndpoint); err != nil {
			return fmt.Errorf("--cgroup-root-in-runtime-pod: %w", err)
		}
	}
	if f.RuntimeRevision != "" {
		if err := node.ValidateRuntimeRevision(f.RuntimeRevision); err != nil {
			return fmt.Errorf("--runtime-revision: %w", err)
		}
		if _, err := RuntimeSocketPath(config.ContainerRuntimeEndpoint); err != nil {
			return fmt.Errorf("--runtime-revision: the runtime's record is beside its socket: %w", err)
		}
	}
	return nil
}

// RuntimeRevisionFile is where the runtime records the revision it was
// started with: beside its socket. Empty without --runtime-revision.
func (s *NodeletServer) RuntimeRevisionFile() string {
	if s.RuntimeRevision == "" {
		return ""
	}
	socket, err := RuntimeSocketPath(s.ContainerRuntimeEndpoint)
	if err != nil {
		return ""
	}
	return path.Join(path.Dir(socket), node.RuntimeRevisionFile)
}

// checkNodeLabel refuses, as the kubelet's --node-labels does, a label in
// the kubernetes.io and k8s.io namespaces other than under the prefixes
// a node may set (the ones nodelet sets have their own flags), and
// nodelet's own agent label.
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
