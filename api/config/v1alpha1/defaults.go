package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/resources/eviction"
	"github.com/nodelet/nodelet/internal/util/timerslack"
)

// The values of NetworkMode.
const (
	// NetworkModeRuntime: the container runtime runs CNI with the node's
	// conflist.
	NetworkModeRuntime = "runtime"
	// NetworkModeAgent: nodelet runs CNI itself, behind its shim plugin.
	NetworkModeAgent = "agent"
)

// The values of Authorization.Mode.
const (
	// AuthorizationModeWebhook asks the API server with a
	// SubjectAccessReview per request.
	AuthorizationModeWebhook = "Webhook"
	// AuthorizationModeAlwaysAllow lets every authenticated request in.
	AuthorizationModeAlwaysAllow = "AlwaysAllow"
)

// The cgroup drivers, as the kubelet names them.
const (
	// CgroupDriverCgroupfs is the cgroupfs driver, writing cgroup files.
	CgroupDriverCgroupfs = "cgroupfs"
	// CgroupDriverSystemd is the systemd driver, the kubelet's other one.
	CgroupDriverSystemd = "systemd"
)

// Defaults that the packages taking these values (node/, server/,
// runtime/) also fall back to when a caller leaves them empty.
const (
	// DefaultResolvConf is the host's resolver configuration, which pods
	// of dnsPolicy Default (and the search path of the others) start from.
	DefaultResolvConf = "/etc/resolv.conf"
	// DefaultMaxPods is the Node's pod capacity, the kubelet's.
	DefaultMaxPods = 110
	// DefaultRootDir holds the pods' volumes, /etc/hosts and state.
	DefaultRootDir = "/var/lib/nodelet"
	// DefaultPort is the node's API port, the kubelet's.
	DefaultPort = 10250
	// DefaultNodeStatusUpdateFrequency is how often the node computes its
	// status, the kubelet's.
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
)

// The CNI defaults, which package network also falls back to when a caller
// leaves them empty. The folders are containerd's and CRI-O's own: the
// conflist must land where the runtime reads it.
const (
	DefaultCNIConfDir     = "/etc/cni/net.d"
	DefaultCNIBinDir      = "/opt/cni/bin"
	DefaultCNINetworkName = "nodelet"
	DefaultCNIBridge      = "nodelet0"
	DefaultCNICheckPeriod = time.Minute
)

// SetDefaults fills every field of c left unset with its default. It is
// the one place nodelet's defaults are written: --help and the reference
// show what it sets. A field it leaves alone defaults to its zero value.
func SetDefaults(c *NodeletConfiguration) {
	if c.APIVersion == "" {
		c.APIVersion = SchemeGroupVersion.String()
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	setString(&c.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock")
	setDuration(&c.RuntimeRequestTimeout, 2*time.Minute)
	setDuration(&c.FileCheckFrequency, 20*time.Second)
	setDuration(&c.HTTPCheckFrequency, 20*time.Second)
	if c.KubeAPIQPS == nil {
		c.KubeAPIQPS = ptr.To[int32](50)
	}
	setInt32(&c.KubeAPIBurst, 100)

	setString(&c.RootDir, DefaultRootDir)
	setString(&c.PodLogsDir, "/var/log/pods")
	setString(&c.ContainerLogsDir, "/var/log/containers")
	setString(&c.CgroupRoot, "/nodelet")
	setString(&c.CgroupDriver, CgroupDriverCgroupfs)
	if c.PodPidsLimit == nil {
		c.PodPidsLimit = ptr.To[int64](-1)
	}
	if c.ResolvConf == nil {
		c.ResolvConf = ptr.To(DefaultResolvConf)
	}

	setString(&c.NetworkMode, NetworkModeRuntime)
	setString(&c.CNIConfDir, DefaultCNIConfDir)
	setString(&c.CNIBinDir, DefaultCNIBinDir)
	setString(&c.CNINetworkName, DefaultCNINetworkName)
	setString(&c.CNIBridge, DefaultCNIBridge)
	setDuration(&c.CNICheckPeriod, DefaultCNICheckPeriod)

	setDuration(&c.RelistPeriod, time.Second)
	setInt32(&c.ConcurrentReconciles, DefaultMaxPods)
	setInt32(&c.MaxPods, DefaultMaxPods)
	setDuration(&c.NodeStatusUpdateFrequency, DefaultNodeStatusUpdateFrequency)
	if c.SlowPodStartThreshold == nil {
		c.SlowPodStartThreshold = &metav1.Duration{Duration: 30 * time.Second}
	}

	// As the kubelet's file: only an EvictionHard left out takes the
	// default, an empty one stays empty.
	if c.EvictionHard == nil {
		c.EvictionHard = eviction.DefaultEvictionHard()
	}
	// The kubelet's.
	setDuration(&c.EvictionPressureTransitionPeriod, 5*time.Minute)
	if c.EnforceNodeAllocatable == nil {
		c.EnforceNodeAllocatable = []string{eviction.EnforcePods}
	}
	if c.ImageGCHighThresholdPercent == nil {
		c.ImageGCHighThresholdPercent = ptr.To[int32](85)
	}
	if c.ImageGCLowThresholdPercent == nil {
		c.ImageGCLowThresholdPercent = ptr.To[int32](80)
	}
	setDuration(&c.ImageMinimumGCAge, 2*time.Minute)

	// The kubelet's.
	setDuration(&c.VolumeStatsAggPeriod, time.Minute)

	// The node's API: the kubelet's secure defaults (its config file's):
	// no anonymous requests, tokens and access reviewed by the API server.
	setString(&c.Address, "0.0.0.0")
	setInt32(&c.Port, DefaultPort)
	if c.Authentication.Webhook.Enabled == nil {
		c.Authentication.Webhook.Enabled = ptr.To(true)
	}
	setDuration(&c.Authentication.Webhook.CacheTTL, 2*time.Minute)
	if c.Authentication.Anonymous.Enabled == nil {
		c.Authentication.Anonymous.Enabled = ptr.To(false)
	}
	if c.EnableSystemLogHandler == nil {
		c.EnableSystemLogHandler = ptr.To(true)
	}
	if c.EnableSystemLogQuery == nil {
		c.EnableSystemLogQuery = ptr.To(false)
	}
	setString(&c.Authorization.Mode, AuthorizationModeWebhook)
	setDuration(&c.Authorization.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	setDuration(&c.Authorization.Webhook.CacheUnauthorizedTTL, 30*time.Second)

	setString(&c.ContainerLogMaxSize, "10Mi")
	if c.ContainerLogMaxFiles == nil {
		c.ContainerLogMaxFiles = ptr.To[int32](5)
	}
	setDuration(&c.ContainerLogMonitorInterval, 10*time.Second)

	setString(&c.MetricsBindAddress, "127.0.0.1:10290")
	setString(&c.HealthzBindAddress, "127.0.0.1")
	if c.HealthzPort == nil {
		c.HealthzPort = ptr.To[int32](10291)
	}

	if c.TimerSlack == nil {
		c.TimerSlack = &metav1.Duration{Duration: timerslack.Default}
	}
	// nodelet's heap may grow to three times what is live before the Go
	// runtime collects it, where Go's default is twice. nodelet's live
	// heap is small (tens of MiB for a full node) and most of what it
	// allocates lives for one reconcile, so collecting half as often costs
	// about ten MiB of resident memory and saves about a tenth of its CPU
	// in a burst of pod starts, as measured when it was set.
	if c.GCPercent == nil {
		c.GCPercent = ptr.To[int32](200)
	}
}

func setString(field *string, value string) {
	if *field == "" {
		*field = value
	}
}

func setInt32(field *int32, value int32) {
	if *field == 0 {
		*field = value
	}
}

func setDuration(field *metav1.Duration, value time.Duration) {
	if field.Duration == 0 {
		field.Duration = value
	}
}
