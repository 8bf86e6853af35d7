// Package v1alpha1 is nodelet's configuration file format,
// config.nodelet.dev/v1alpha1 NodeletConfiguration.
//
// Fields take the names and nesting of the kubelet's KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) wherever they mean the same; the rest
// are nodelet's own. Each setting lives in one place: its field here, whose
// doc comment is its one description (FieldDocs: nodelet's --help and the
// generated reference, docs/configuration.md, show it) and whose flag tag
// names its command-line flag; its default in SetDefaults; its checks in
// Validate. Decode reads a file strictly: an unknown field, a value of the
// wrong type or a missing apiVersion or kind is an error naming it.
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
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
// optional; a field left out takes its default (SetDefaults). Flags given
// on the command line win over the file.
//
// Each field's `flag` tag names the flag that sets it (the options package
// binds them): "sep=<" reads a map as key<value pairs, as the kubelet's
// eviction thresholds; "host" and "port" are the two halves of one
// host:port flag. No field is left out of /configz: empty ones are served
// too, so none is tagged omitempty.
//
// The comments standing alone between the fields are the headings of the
// reference's sections.
type NodeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// The container runtime and the API server.

	// ContainerRuntimeEndpoint is the CRI endpoint of the container runtime.
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint" flag:"container-runtime-endpoint"`
	// RuntimeRequestTimeout is the timeout of every CRI call but image
	// pulls and container stops.
	RuntimeRequestTimeout metav1.Duration `json:"runtimeRequestTimeout" flag:"runtime-request-timeout"`
	// KubeAPIQPS is how many requests per second nodelet makes to the API
	// server, events included. The default is the kubelet's: a burst of pod
	// starts writes statuses and events at once.
	KubeAPIQPS *int32 `json:"kubeAPIQPS" flag:"kube-api-qps"`
	// KubeAPIBurst is the burst of requests allowed above KubeAPIQPS.
	KubeAPIBurst int32 `json:"kubeAPIBurst" flag:"kube-api-burst"`

	// The node's files.

	// RootDir is the folder of nodelet's state: pod folders, volumes, the
	// lock file.
	RootDir string `json:"rootDir" flag:"root-dir"`
	// PodLogsDir is the folder of the pods' container logs, as the
	// kubelet's.
	PodLogsDir string `json:"podLogsDir" flag:"pod-log-dir"`
	// ContainerLogsDir is the folder of the
	// <pod>_<namespace>_<container>-<id>.log links log shippers read.
	ContainerLogsDir string `json:"containerLogsDir" flag:"container-log-dir"`

	// Cgroups.

	// CgroupRoot is the cgroup under which pod cgroups are made; with the
	// systemd driver its components name slices ("/nodelet" is
	// nodelet.slice, "/" puts kubepods.slice at the top).
	CgroupRoot string `json:"cgroupRoot" flag:"cgroup-root"`
	// CgroupDriver is how cgroups are made: "cgroupfs", writing cgroup
	// files, or "systemd", as slices systemd makes (over D-Bus) whose
	// files are then written; it must be the runtime's (containerd's
	// SystemdCgroup).
	CgroupDriver string `json:"cgroupDriver" flag:"cgroup-driver"`
	// PodPidsLimit is the most processes each pod may have (its cgroup's
	// pids.max); -1, or any value below 1, leaves it unlimited.
	PodPidsLimit *int64 `json:"podPidsLimit" flag:"pod-max-pids"`

	// DNS and sysctls.

	// ResolvConf is the resolver configuration given to pods. An empty
	// string gives them none of the host's: pods of the Default DNS policy
	// then resolve through the local machine, as under the kubelet.
	ResolvConf *string `json:"resolvConf" flag:"resolv-conf"`
	// ClusterDNS are the IP addresses of the cluster's DNS servers, given
	// to pods with the ClusterFirst DNS policy (comma-separated on the
	// command line).
	ClusterDNS []string `json:"clusterDNS" flag:"cluster-dns"`
	// ClusterDomain is the cluster's DNS domain, searched by pods besides
	// the host's domains; empty is none.
	ClusterDomain string `json:"clusterDomain" flag:"cluster-domain"`
	// AllowedUnsafeSysctls are the unsafe sysctls (or prefixes of them
	// ending in "*") pods may set, namespaced ones only.
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls" flag:"allowed-unsafe-sysctls"`

	// Pod networking.

	// NetworkMode is who runs CNI: "runtime" (the container runtime, with
	// the node's conflist in CNIConfDir) or "agent" (nodelet itself,
	// behind the nodelet-cni plugin it installs for the runtime).
	NetworkMode string `json:"networkMode" flag:"network-mode"`
	// CNIConfDir is the runtime's CNI configuration folder; nodelet writes
	// the node's conflist there when none is installed.
	CNIConfDir string `json:"cniConfDir" flag:"cni-conf-dir"`
	// CNIBinDir is the CNI plugins' folder.
	CNIBinDir string `json:"cniBinDir" flag:"cni-bin-dir"`
	// CNINetworkName is the network of the conflist nodelet writes.
	CNINetworkName string `json:"cniNetworkName" flag:"cni-network-name"`
	// CNIBridge is the bridge of the conflist nodelet writes.
	CNIBridge string `json:"cniBridge" flag:"cni-bridge"`
	// PodCIDR is the pod CIDR (comma-separated for dual stack) of the
	// conflist nodelet writes; empty takes the Node's spec.podCIDRs.
	PodCIDR string `json:"podCIDR" flag:"pod-cidr"`
	// CNIAgentConfDir is the folder of the node's real CNI configuration
	// in agent mode; empty is <rootDir>/cni/net.d.
	CNIAgentConfDir string `json:"cniAgentConfDir" flag:"cni-agent-conf-dir"`
	// CNIShimPath is the nodelet-cni binary agent mode installs into
	// CNIBinDir; empty is nodelet-cni beside nodelet's binary.
	CNIShimPath string `json:"cniShimPath" flag:"cni-shim-path"`
	// CNICheckPeriod is how often agent mode checks every pod's network
	// (CNI CHECK); a broken one has its sandbox recreated.
	CNICheckPeriod metav1.Duration `json:"cniCheckPeriod" flag:"cni-check-period"`

	// Pods and the Node.

	// RelistPeriod is how often the PLEG relists the container runtime.
	RelistPeriod metav1.Duration `json:"relistPeriod" flag:"relist-period"`
	// ConcurrentReconciles is how many pods are worked on at once. A pod
	// waiting out a grace period, a lifecycle hook or an image pull holds
	// one; the default, the kubelet's default pod capacity, gives every
	// pod its own, as the kubelet's pod workers do, so that no pod waits
	// for another.
	ConcurrentReconciles int32 `json:"concurrentReconciles" flag:"concurrent-reconciles"`
	// ParallelSandboxStarts is how many pod sandboxes are being created
	// in the runtime at once; the others wait their turn, first come
	// first served. 0 is two per CPU.
	ParallelSandboxStarts int32 `json:"parallelSandboxStarts" flag:"parallel-sandbox-starts"`
	// MaxPods is the Node's pod capacity.
	MaxPods int32 `json:"maxPods" flag:"max-pods"`
	// NodeStatusUpdateFrequency is how often the Node's status is
	// computed, and patched when it changed.
	NodeStatusUpdateFrequency metav1.Duration `json:"nodeStatusUpdateFrequency" flag:"node-status-update-frequency"`
	// SlowPodStartThreshold is how long a pod may take from its creation
	// to Ready before a SlowPodStart event names its slowest step; "0s"
	// tells none.
	SlowPodStartThreshold *metav1.Duration `json:"slowPodStartThreshold" flag:"slow-pod-start-threshold"`
	// RegisterWithTaints are the taints the Node is created with, as the
	// kubelet's; a Node that exists keeps its own. In the file, objects of
	// key, value and effect; on the command line, comma-separated
	// <key>=<value>:<effect> or <key>:<effect>, the list replaced each time
	// the flag is given.
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints" flag:"register-with-taints"`

	// Static pods.

	// StaticPodPath is the folder of static pod manifests (or one manifest
	// file) the node runs without the API server, as kubeadm's control
	// plane; files whose name starts with a dot are ignored. Empty: none.
	StaticPodPath string `json:"staticPodPath" flag:"pod-manifest-path"`
	// StaticPodURL is a URL serving one Pod or a PodList the node runs as
	// static pods. Empty: none.
	StaticPodURL string `json:"staticPodURL" flag:"manifest-url"`
	// StaticPodURLHeader are the HTTP headers sent with each request to
	// StaticPodURL. On the command line, comma-separated <name>:<value>
	// pairs; a name given twice keeps both values in order, and the flag
	// may be given again to add more.
	StaticPodURLHeader map[string][]string `json:"staticPodURLHeader" flag:"manifest-url-header"`
	// FileCheckFrequency is how often StaticPodPath is read again besides
	// the changes the kernel reports.
	FileCheckFrequency metav1.Duration `json:"fileCheckFrequency" flag:"file-check-frequency"`
	// HTTPCheckFrequency is how often StaticPodURL is fetched again.
	HTTPCheckFrequency metav1.Duration `json:"httpCheckFrequency" flag:"http-check-frequency"`

	// Node allocatable and eviction.

	// SystemReserved is what is kept from pods for the system's daemons: a
	// quantity of cpu, memory, ephemeral-storage or pid each (on the
	// command line resource=quantity pairs, e.g. cpu=200m,memory=500Mi).
	// The Node's allocatable is its capacity less SystemReserved,
	// KubeReserved and the hard eviction thresholds.
	SystemReserved map[string]string `json:"systemReserved" flag:"system-reserved"`
	// KubeReserved is what is kept from pods for Kubernetes' own daemons
	// (nodelet, the runtime), as SystemReserved.
	KubeReserved map[string]string `json:"kubeReserved" flag:"kube-reserved"`
	// EvictionHard are the hard eviction thresholds, signal to quantity or
	// percentage of capacity ("memory.available": "100Mi"; on the command
	// line memory.available<100Mi,nodefs.available<10%); those of
	// memory.available and nodefs.available are kept from the Node's
	// allocatable. Given, it replaces the default whole; "0%" turns one
	// signal off. The default is the kubelet's.
	EvictionHard map[string]string `json:"evictionHard" flag:"eviction-hard,sep=<"`
	// EvictionSoft are the soft eviction thresholds, as EvictionHard; each
	// acts once met for its EvictionSoftGracePeriod.
	EvictionSoft map[string]string `json:"evictionSoft" flag:"eviction-soft,sep=<"`
	// EvictionSoftGracePeriod is how long each soft eviction threshold must
	// be met before pods are evicted, signal to duration
	// ("memory.available": "1m30s"; on the command line
	// memory.available=1m30s).
	EvictionSoftGracePeriod map[string]string `json:"evictionSoftGracePeriod" flag:"eviction-soft-grace-period"`
	// EvictionMinimumReclaim is how far past a threshold eviction reclaims
	// before the pressure ends, signal to quantity or percentage
	// ("nodefs.available": "500Mi"; on the command line
	// nodefs.available=500Mi).
	EvictionMinimumReclaim map[string]string `json:"evictionMinimumReclaim" flag:"eviction-minimum-reclaim"`
	// EvictionPressureTransitionPeriod is how long a pressure condition
	// stays true after its threshold was last met.
	EvictionPressureTransitionPeriod metav1.Duration `json:"evictionPressureTransitionPeriod" flag:"eviction-pressure-transition-period"`
	// EvictionMaxPodGracePeriod is the longest grace period, in seconds,
	// of a pod evicted for a soft threshold (the pod's own when shorter);
	// a hard threshold's get 1s.
	EvictionMaxPodGracePeriod int32 `json:"evictionMaxPodGracePeriod" flag:"eviction-max-pod-grace-period"`
	// EnforceNodeAllocatable are the levels of node allocatable
	// enforcement: "pods" limits the cgroup holding every pod to the
	// capacity less SystemReserved and KubeReserved; "system-reserved"
	// limits SystemReservedCgroup to SystemReserved, "kube-reserved"
	// KubeReservedCgroup to KubeReserved; "none" alone enforces nothing.
	EnforceNodeAllocatable []string `json:"enforceNodeAllocatable" flag:"enforce-node-allocatable"`
	// SystemReservedCgroup is the absolute name of the system daemons'
	// cgroup ("/system.slice"), which must exist; required with
	// "system-reserved" in EnforceNodeAllocatable.
	SystemReservedCgroup string `json:"systemReservedCgroup" flag:"system-reserved-cgroup"`
	// KubeReservedCgroup is the absolute name of Kubernetes' daemons'
	// cgroup, as SystemReservedCgroup, for "kube-reserved".
	KubeReservedCgroup string `json:"kubeReservedCgroup" flag:"kube-reserved-cgroup"`

	// Image garbage collection.

	// ImageGCHighThresholdPercent is the image file system's usage at or
	// above which unused images are removed; 100 turns image garbage
	// collection by usage off.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent" flag:"image-gc-high-threshold"`
	// ImageGCLowThresholdPercent is the usage image garbage collection
	// frees down to, below ImageGCHighThresholdPercent.
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent" flag:"image-gc-low-threshold"`
	// ImageMinimumGCAge is how long an image is on the node, unused,
	// before it may be collected.
	ImageMinimumGCAge metav1.Duration `json:"imageMinimumGCAge" flag:"image-minimum-gc-age"`
	// ImageMaximumGCAge is how long an unused image may stay: one unused
	// for longer is removed whatever the disk usage; "0s" is for ever.
	ImageMaximumGCAge metav1.Duration `json:"imageMaximumGCAge" flag:"image-maximum-gc-age"`

	// Volumes.

	// VolumeStatsAggPeriod is how long a pod volume's measured usage
	// (/stats/summary, kubelet_volume_stats_*) is served before the volume
	// is measured again. A negative period, or 0 on the command line
	// (where a zero in the file is left out, as in the kubelet's), turns
	// volume stats off.
	VolumeStatsAggPeriod metav1.Duration `json:"volumeStatsAggPeriod" flag:"volume-stats-agg-period"`

	// Graceful node shutdown.

	// ShutdownGracePeriod is how long the node's shutdown is delayed for
	// its pods to stop (a systemd-logind delay inhibitor lock), the
	// critical pods' ShutdownGracePeriodCriticalPods included; 0 turns
	// graceful shutdown off. As in the kubelet, only the file sets it.
	ShutdownGracePeriod metav1.Duration `json:"shutdownGracePeriod"`
	// ShutdownGracePeriodCriticalPods is the part of ShutdownGracePeriod
	// kept for the critical pods (priority system-cluster-critical and
	// above), stopped after the others.
	ShutdownGracePeriodCriticalPods metav1.Duration `json:"shutdownGracePeriodCriticalPods"`
	// ShutdownGracePeriodByPodPriority are the shutdown's bands, instead
	// of the two above: the pods of a priority at or above a band's
	// priority (and below the next band's) are stopped in that band, the
	// lowest band first, each within its shutdownGracePeriodSeconds; the
	// shutdown is delayed by their sum.
	ShutdownGracePeriodByPodPriority []ShutdownGracePeriodByPodPriority `json:"shutdownGracePeriodByPodPriority"`

	// The node's HTTPS API.

	// Address is the IP address the node's HTTPS API listens on.
	Address string `json:"address" flag:"address"`
	// Port is the port of the node's HTTPS API (logs, exec, attach,
	// port-forward, stats, configz), advertised as the Node's daemon
	// endpoint.
	Port int32 `json:"port" flag:"port"`
	// TLSCertFile is the API's serving certificate. Empty: a self-signed
	// one in CertDir, or one requested through the certificates API with
	// RotateServerCertificates.
	TLSCertFile string `json:"tlsCertFile" flag:"tls-cert-file"`
	// TLSPrivateKeyFile is the key of TLSCertFile.
	TLSPrivateKeyFile string `json:"tlsPrivateKeyFile" flag:"tls-private-key-file"`
	// CertDir is the folder of the serving certificates nodelet makes or
	// requests, and of the node's client certificate when nodelet requests
	// it; empty is <rootDir>/pki.
	CertDir string `json:"certDir" flag:"cert-dir"`
	// RotateServerCertificates is whether the serving certificate is
	// requested through the certificates API (signer
	// kubernetes.io/kubelet-serving) and renewed before it expires; the
	// requests need approving.
	RotateServerCertificates bool `json:"rotateServerCertificates" flag:"rotate-server-certificates"`
	// EnableSystemLogHandler serves the node's /var/log on /logs/
	// (authorised as nodes/log). As in the kubelet, only the file sets
	// it; default true.
	EnableSystemLogHandler *bool `json:"enableSystemLogHandler"`
	// EnableSystemLogQuery lets /logs/ take the node log query
	// (?query=<unit or file>&sinceTime=&untilTime=&tailLines=&pattern=&boot=):
	// a systemd unit's journal through journalctl, else its file under
	// /var/log. Only the file sets it; default false, as the kubelet's.
	EnableSystemLogQuery *bool `json:"enableSystemLogQuery"`
	// Authentication is how requests to the node's API are authenticated.
	Authentication NodeletAuthentication `json:"authentication"`
	// Authorization is how requests to the node's API are authorised.
	Authorization NodeletAuthorization `json:"authorization"`

	// Container logs.

	// ContainerLogMaxSize is the size at which a running container's log
	// file is rotated, a quantity such as 10Mi; "0" turns rotation off.
	ContainerLogMaxSize string `json:"containerLogMaxSize" flag:"container-log-max-size"`
	// ContainerLogMaxFiles is how many files one container's log may span,
	// the live one included.
	ContainerLogMaxFiles *int32 `json:"containerLogMaxFiles" flag:"container-log-max-files"`
	// ContainerLogMonitorInterval is how often container logs are looked
	// at for rotation.
	ContainerLogMonitorInterval metav1.Duration `json:"containerLogMonitorInterval" flag:"container-log-monitor-interval"`

	// nodelet's own endpoints.

	// MetricsBindAddress is the host:port of nodelet's own /metrics; "0"
	// turns it off.
	MetricsBindAddress string `json:"metricsBindAddress" flag:"metrics-bind-address"`
	// PprofBindAddress is the host:port of Go's /debug/pprof profiles of
	// nodelet, unauthenticated, so off unless set; "0" or "" is off.
	PprofBindAddress string `json:"pprofBindAddress" flag:"pprof-bind-address"`
	// HealthzBindAddress is the IP address /healthz and /readyz listen on:
	// on the command line, the host of --health-probe-bind-address's
	// host:port.
	HealthzBindAddress string `json:"healthzBindAddress" flag:"health-probe-bind-address,host"`
	// HealthzPort is the port they listen on, the flag's port; 0, or the
	// flag's "0", turns them off.
	HealthzPort *int32 `json:"healthzPort" flag:"health-probe-bind-address,port"`

	// nodelet's process.

	// TimerSlack is how late the kernel may end nodelet's timed waits to
	// serve them with other wakeups (its threads' timer slack); 0 leaves
	// the kernel's (50µs). Setting it needs CAP_SYS_NICE.
	TimerSlack *metav1.Duration `json:"timerSlack" flag:"timer-slack"`
	// GCPercent is how much nodelet's heap may grow, in percent of what is
	// live after a collection, before the Go runtime collects again; it
	// wins over GOGC, and 0 leaves the Go runtime's (GOGC, or 100).
	GCPercent *int32 `json:"gcPercent" flag:"gc-percent"`
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
	// ClientCAFile is the file of the CAs whose client certificates
	// authenticate (the CA of the API server's kubelet client
	// certificate); empty, no client certificate does.
	ClientCAFile string `json:"clientCAFile" flag:"client-ca-file"`
}

// NodeletWebhookAuthentication authenticates bearer tokens.
type NodeletWebhookAuthentication struct {
	// Enabled is whether bearer tokens are checked with TokenReviews.
	Enabled *bool `json:"enabled" flag:"authentication-token-webhook"`
	// CacheTTL is how long TokenReview answers are remembered.
	CacheTTL metav1.Duration `json:"cacheTTL" flag:"authentication-token-webhook-cache-ttl"`
}

// NodeletAnonymousAuthentication lets requests without credentials in.
type NodeletAnonymousAuthentication struct {
	// Enabled is whether requests without credentials are let in, as
	// system:anonymous.
	Enabled *bool `json:"enabled" flag:"anonymous-auth"`
}

// NodeletAuthorization is how requests to the node's API are authorised.
type NodeletAuthorization struct {
	// Mode is "Webhook" (SubjectAccessReviews on the Node's subresources)
	// or "AlwaysAllow".
	Mode string `json:"mode" flag:"authorization-mode"`
	// Webhook remembers SubjectAccessReview answers.
	Webhook NodeletWebhookAuthorization `json:"webhook"`
}

// NodeletWebhookAuthorization remembers SubjectAccessReview answers.
type NodeletWebhookAuthorization struct {
	// CacheAuthorizedTTL is how long a yes is remembered.
	CacheAuthorizedTTL metav1.Duration `json:"cacheAuthorizedTTL" flag:"authorization-webhook-cache-authorized-ttl"`
	// CacheUnauthorizedTTL is how long a no is remembered.
	CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL" flag:"authorization-webhook-cache-unauthorized-ttl"`
}

// ShutdownGracePeriodByPodPriority is one band of a graceful node
// shutdown, as the kubelet's.
type ShutdownGracePeriodByPodPriority struct {
	// Priority is the lowest pod priority of the band.
	Priority int32 `json:"priority"`
	// ShutdownGracePeriodSeconds is how long the band's pods have to stop.
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}
