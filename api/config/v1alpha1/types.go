// Package v1alpha1 is nodelet's configuration file format,
// config.nodelet.dev/v1alpha1 NodeletConfiguration.
//
// Fields take the names and nesting of the kubelet's KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) wherever they mean the same; the rest
// are nodelet's own. SetDefaults is the one place nodelet's defaults are
// written, Validate the one place they are checked, and Decode reads a
// file strictly: an unknown field, a value of the wrong type or a missing
// apiVersion or kind is an error naming it.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of nodelet's configuration.
const GroupName = "config.nodelet.dev"

// SchemeGroupVersion is the group and version of this package's types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Kind is the kind of NodeletConfiguration.
const Kind = "NodeletConfiguration"

// NodeletConfiguration is nodelet's configuration file. Every field is
// optional; a field left out takes the default its comment gives. Flags
// given on the command line win over the file.
type NodeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// ContainerRuntimeEndpoint is the CRI endpoint of the container runtime.
	// Default: "unix:///run/containerd/containerd.sock".
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint,omitempty"`
	// RuntimeRequestTimeout bounds every CRI call but image pulls and
	// container stops. Default: "2m".
	RuntimeRequestTimeout metav1.Duration `json:"runtimeRequestTimeout,omitempty"`
	// KubeAPIQPS is how many requests per second nodelet makes to the API
	// server, events included; the kubelet's default, since a burst of pod
	// starts writes statuses and events at once. Default: 50.
	KubeAPIQPS *int32 `json:"kubeAPIQPS,omitempty"`
	// KubeAPIBurst is the burst of requests allowed above KubeAPIQPS.
	// Default: 100.
	KubeAPIBurst int32 `json:"kubeAPIBurst,omitempty"`

	// RootDir holds nodelet's state: pod folders, volumes, the lock file.
	// Default: "/var/lib/nodelet".
	RootDir string `json:"rootDir,omitempty"`
	// PodLogsDir holds the pods' container logs, as the kubelet's.
	// Default: "/var/log/pods".
	PodLogsDir string `json:"podLogsDir,omitempty"`
	// ContainerLogsDir holds the <pod>_<namespace>_<container>-<id>.log
	// links log shippers read. Default: "/var/log/containers".
	ContainerLogsDir string `json:"containerLogsDir,omitempty"`
	// CgroupRoot is the cgroup under which pod cgroups are made; with the
	// systemd driver its components name slices ("/nodelet" is
	// nodelet.slice, "/" puts kubepods.slice at the top). Default:
	// "/nodelet".
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// CgroupDriver is how cgroups are made: "cgroupfs", writing cgroup
	// files, or "systemd", as slices systemd makes (over D-Bus) whose
	// files are then written; it must be the runtime's (containerd's
	// SystemdCgroup). Default: "cgroupfs".
	CgroupDriver string `json:"cgroupDriver,omitempty"`
	// PodPidsLimit is the most processes each pod may have (its cgroup's
	// pids.max); -1, or any value below 1, leaves it unlimited. Default: -1.
	PodPidsLimit *int64 `json:"podPidsLimit,omitempty"`
	// ResolvConf is the resolver configuration given to pods. An empty
	// string gives them none of the host's: pods of the Default DNS policy
	// then resolve through the local machine, as under the kubelet.
	// Default: "/etc/resolv.conf".
	ResolvConf *string `json:"resolvConf,omitempty"`
	// ClusterDNS are the IP addresses of the cluster's DNS servers, given
	// to pods with the ClusterFirst DNS policy. Default: none.
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ClusterDomain is the cluster's DNS domain, searched by pods besides
	// the host's domains. Default: "" (none).
	ClusterDomain string `json:"clusterDomain,omitempty"`
	// AllowedUnsafeSysctls are the unsafe sysctls (or patterns ending in
	// "*") pods may set. Default: none.
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`

	// NetworkMode is who runs CNI: "runtime" (the container runtime, with
	// the node's conflist in CNIConfDir) or "agent" (nodelet itself,
	// behind the nodelet-cni plugin it installs for the runtime).
	// Default: "runtime".
	NetworkMode string `json:"networkMode,omitempty"`
	// CNIConfDir is the runtime's CNI configuration folder; nodelet writes
	// the node's conflist there when none is installed.
	// Default: "/etc/cni/net.d".
	CNIConfDir string `json:"cniConfDir,omitempty"`
	// CNIBinDir is the CNI plugins' folder. Default: "/opt/cni/bin".
	CNIBinDir string `json:"cniBinDir,omitempty"`
	// CNINetworkName is the network of the conflist nodelet writes.
	// Default: "nodelet".
	CNINetworkName string `json:"cniNetworkName,omitempty"`
	// CNIBridge is the bridge of the conflist nodelet writes.
	// Default: "nodelet0".
	CNIBridge string `json:"cniBridge,omitempty"`
	// PodCIDR is the pod CIDR (comma-separated for dual stack) of the
	// conflist nodelet writes. Default: "", the Node's spec.podCIDRs.
	PodCIDR string `json:"podCIDR,omitempty"`
	// CNIAgentConfDir holds the node's real CNI configuration in agent
	// mode. Default: "", meaning <rootDir>/cni/net.d.
	CNIAgentConfDir string `json:"cniAgentConfDir,omitempty"`
	// CNIShimPath is the nodelet-cni binary agent mode installs into
	// CNIBinDir. Default: "", meaning nodelet-cni beside nodelet's binary.
	CNIShimPath string `json:"cniShimPath,omitempty"`
	// CNICheckPeriod is how often agent mode checks every pod's network
	// (CNI CHECK); a broken one has its sandbox recreated. Default: "1m".
	CNICheckPeriod metav1.Duration `json:"cniCheckPeriod,omitempty"`

	// RelistPeriod is how often the PLEG relists the container runtime.
	// Default: "1s".
	RelistPeriod metav1.Duration `json:"relistPeriod,omitempty"`
	// ConcurrentReconciles is how many pods are worked on at once. A pod
	// waiting out a grace period, a lifecycle hook or an image pull holds
	// one; the default, the kubelet's default pod capacity, gives every
	// pod its own, as the kubelet's pod workers do, so that no pod waits
	// for another. Default: 110.
	ConcurrentReconciles int32 `json:"concurrentReconciles,omitempty"`
	// ParallelSandboxStarts is how many pod sandboxes are being created
	// in the runtime at once; the others wait their turn, first come
	// first served. Default: 0, meaning two per CPU.
	ParallelSandboxStarts int32 `json:"parallelSandboxStarts,omitempty"`
	// MaxPods is the Node's pod capacity. Default: 110.
	MaxPods int32 `json:"maxPods,omitempty"`
	// NodeStatusUpdateFrequency is how often the Node's status is
	// computed, and patched when it changed. Default: "10s".
	NodeStatusUpdateFrequency metav1.Duration `json:"nodeStatusUpdateFrequency,omitempty"`
	// SlowPodStartThreshold is how long a pod may take from its creation
	// to Ready before a SlowPodStart event names its slowest step; "0s"
	// tells none. Default: "30s".
	SlowPodStartThreshold *metav1.Duration `json:"slowPodStartThreshold,omitempty"`

	// SystemReserved is kept from pods for the system's daemons: a
	// quantity of cpu, memory, ephemeral-storage or pid each. The Node's
	// allocatable is its capacity less SystemReserved, KubeReserved and
	// the hard eviction thresholds. Default: none.
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is kept from pods for Kubernetes' own daemons (nodelet,
	// the runtime), as SystemReserved. Default: none.
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard are the hard eviction thresholds, signal to quantity or
	// percentage of capacity ("memory.available": "100Mi"); those of
	// memory.available and nodefs.available are kept from the Node's
	// allocatable. Given, it replaces the default whole; "0%" turns one
	// signal off. Default: the kubelet's, memory.available 100Mi,
	// nodefs.available 10%, nodefs.inodesFree 5%, imagefs.available 15%,
	// imagefs.inodesFree 5%.
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EnforceNodeAllocatable are the levels of node allocatable
	// enforcement: "pods" limits the cgroup holding every pod to the
	// capacity less SystemReserved and KubeReserved; "system-reserved"
	// limits SystemReservedCgroup to SystemReserved, "kube-reserved"
	// KubeReservedCgroup to KubeReserved; "none" alone enforces nothing.
	// Default: ["pods"].
	EnforceNodeAllocatable []string `json:"enforceNodeAllocatable,omitempty"`
	// SystemReservedCgroup is the absolute name of the system daemons'
	// cgroup ("/system.slice"), which must exist; required with
	// "system-reserved" in EnforceNodeAllocatable. Default: none.
	SystemReservedCgroup string `json:"systemReservedCgroup,omitempty"`
	// KubeReservedCgroup is the absolute name of Kubernetes' daemons'
	// cgroup, as SystemReservedCgroup, for "kube-reserved".
	KubeReservedCgroup string `json:"kubeReservedCgroup,omitempty"`

	// ImageGCHighThresholdPercent is the image file system's usage at or
	// above which unused images are removed; 100 turns image garbage
	// collection by usage off. Default: 85.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the usage image garbage collection
	// frees down to. Default: 80.
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// ImageMinimumGCAge is how long an image is on the node, unused,
	// before it may be collected. Default: "2m".
	ImageMinimumGCAge metav1.Duration `json:"imageMinimumGCAge,omitempty"`
	// ImageMaximumGCAge removes images unused for longer, whatever the
	// disk usage; "0s" never. Default: "0s".
	ImageMaximumGCAge metav1.Duration `json:"imageMaximumGCAge,omitempty"`

	// Address is the IP address the node's HTTPS API listens on.
	// Default: "0.0.0.0".
	Address string `json:"address,omitempty"`
	// Port is the port of the node's HTTPS API (logs, exec, attach,
	// port-forward, stats, configz), advertised as the Node's daemon
	// endpoint. Default: 10250.
	Port int32 `json:"port,omitempty"`
	// TLSCertFile and TLSPrivateKeyFile are the API's serving certificate
	// and key. Default: "", meaning a self-signed one in CertDir, or one
	// requested through the certificates API with RotateServerCertificates.
	TLSCertFile       string `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile string `json:"tlsPrivateKeyFile,omitempty"`
	// CertDir is the folder of the serving certificates nodelet makes or
	// requests. Default: "", meaning <rootDir>/pki.
	CertDir string `json:"certDir,omitempty"`
	// RotateServerCertificates requests the serving certificate through
	// the certificates API (signer kubernetes.io/kubelet-serving) and
	// renews it before it expires; the requests need approving.
	// Default: false.
	RotateServerCertificates bool `json:"rotateServerCertificates,omitempty"`
	// Authentication is how requests to the node's API are authenticated.
	Authentication NodeletAuthentication `json:"authentication"`
	// Authorization is how requests to the node's API are authorised.
	Authorization NodeletAuthorization `json:"authorization"`

	// ContainerLogMaxSize is the size at which a running container's log
	// file is rotated, a quantity; "0" turns rotation off. Default: "10Mi".
	ContainerLogMaxSize string `json:"containerLogMaxSize,omitempty"`
	// ContainerLogMaxFiles is how many files one container's log may span,
	// the live one included. Default: 5.
	ContainerLogMaxFiles *int32 `json:"containerLogMaxFiles,omitempty"`
	// ContainerLogMonitorInterval is how often container logs are looked
	// at for rotation. Default: "10s".
	ContainerLogMonitorInterval metav1.Duration `json:"containerLogMonitorInterval,omitempty"`

	// MetricsBindAddress is the host:port of nodelet's own /metrics; "0"
	// turns it off. Default: "127.0.0.1:10290".
	MetricsBindAddress string `json:"metricsBindAddress,omitempty"`
	// PprofBindAddress is the host:port of Go's /debug/pprof profiles of
	// nodelet, unauthenticated, so off unless set; "0" or "" is off.
	PprofBindAddress string `json:"pprofBindAddress,omitempty"`
	// HealthzBindAddress is the IP address of /healthz and /readyz.
	// Default: "127.0.0.1".
	HealthzBindAddress string `json:"healthzBindAddress,omitempty"`
	// HealthzPort is the port of /healthz and /readyz; 0 turns them off.
	// Default: 10291.
	HealthzPort *int32 `json:"healthzPort,omitempty"`
}

// NodeletAuthentication is how requests to the node's API are
// authenticated, as the kubelet's.
type NodeletAuthentication struct {
	// X509 authenticates client certificates.
	X509 NodeletX509Authentication `json:"x509"`
	// Webhook authenticates bearer tokens with TokenReviews.
	Webhook NodeletWebhookAuthentication `json:"webhook"`
	// Anonymous lets requests without credentials in.
	Anonymous NodeletAnonymousAuthentication `json:"anonymous"`
}

// NodeletX509Authentication authenticates client certificates.
type NodeletX509Authentication struct {
	// ClientCAFile holds the CAs whose client certificates authenticate
	// (the CA of the API server's kubelet client certificate).
	// Default: "", no client certificate authenticates.
	ClientCAFile string `json:"clientCAFile,omitempty"`
}

// NodeletWebhookAuthentication authenticates bearer tokens.
type NodeletWebhookAuthentication struct {
	// Enabled checks bearer tokens with TokenReviews. Default: true.
	Enabled *bool `json:"enabled,omitempty"`
	// CacheTTL is how long TokenReview answers are remembered.
	// Default: "2m".
	CacheTTL metav1.Duration `json:"cacheTTL,omitempty"`
}

// NodeletAnonymousAuthentication lets requests without credentials in.
type NodeletAnonymousAuthentication struct {
	// Enabled lets requests without credentials in as system:anonymous.
	// Default: false.
	Enabled *bool `json:"enabled,omitempty"`
}

// NodeletAuthorization is how requests to the node's API are authorised.
type NodeletAuthorization struct {
	// Mode is "Webhook" (SubjectAccessReviews on the Node's subresources)
	// or "AlwaysAllow". Default: "Webhook".
	Mode string `json:"mode,omitempty"`
	// Webhook remembers SubjectAccessReview answers.
	Webhook NodeletWebhookAuthorization `json:"webhook"`
}

// NodeletWebhookAuthorization remembers SubjectAccessReview answers.
type NodeletWebhookAuthorization struct {
	// CacheAuthorizedTTL is how long a yes is remembered. Default: "5m".
	CacheAuthorizedTTL metav1.Duration `json:"cacheAuthorizedTTL,omitempty"`
	// CacheUnauthorizedTTL is how long a no is remembered. Default: "30s".
	CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL,omitempty"`
}
