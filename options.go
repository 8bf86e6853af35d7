package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/resources/admission"
)

// Options are nodelet's settings: the flags, which are the fields of the
// configuration file (config.nodelet.dev/v1alpha1 NodeletConfiguration,
// package api/config/v1alpha1, where each one's default is written), and
// the few that belong to one node only and so are flags alone, as the
// kubelet's: the kubeconfig, the node's name and IP. A flag given on the
// command line wins over the file.
type Options struct {
	// Kubeconfig to reach the API server as the node; default: in-cluster,
	// or $KUBECONFIG. Flag only.
	Kubeconfig string
	// BootstrapKubeconfig requests the node's client certificate when
	// Kubeconfig is missing or unusable, then writes Kubeconfig; see
	// main_identity.go. Flag only.
	BootstrapKubeconfig string
	// NodeIdentity is how nodelet gets the node's credentials:
	// NodeIdentityKubeconfig (default) or NodeIdentityCSR. Flag only.
	NodeIdentity string
	// NodeName is the Node nodelet registers and runs pods for; default:
	// the host name, lowercased. Flag only.
	NodeName string
	// NodeIP is the Node's InternalIP; default: the host's first
	// non-loopback address. Flag only.
	NodeIP string
	// RegisterWithTaints, NodeLabels, HostnameOverride, TopologyZone,
	// TopologyRegion, Capacity, CgroupRootInOwnPod,
	// CgroupRootInRuntimePod, HostPortsShared, HostRoot and
	// RuntimeHostRoot: see options_companion.go. Flags only.
	RegisterWithTaints []corev1.Taint
	NodeLabels         map[string]string
	HostnameOverride   string
	TopologyZone       string
	TopologyRegion     string
	Capacity           map[string]string
	CgroupRootInOwnPod bool
	// CgroupRootInRuntimePod: see options_runtime_pod.go.
	CgroupRootInRuntimePod bool
	HostPortsShared        bool
	HostRoot               string
	RuntimeHostRoot        string
	TimerSlack             time.Duration // options_process.go; flag only
	GCPercent              int           // options_process.go; flag only

	// The fields below are the configuration file's; see
	// v1alpha1.NodeletConfiguration for what each means and its default.

	ContainerRuntimeEndpoint string
	KubeAPIQPS               int32
	KubeAPIBurst             int
	RuntimeRequestTimeout    metav1.Duration
	RootDir                  string
	PodLogDir                string
	ContainerLogDir          string
	CgroupRoot               string
	CgroupDriver             string
	PodPidsLimit             int64
	ResolvConf               string
	// ClusterDNS, ClusterDomain and AllowedUnsafeSysctls are the
	// kubelet's settings of the same names.
	ClusterDNS           []string
	ClusterDomain        string
	AllowedUnsafeSysctls []string

	NetworkMode     string
	CNIConfDir      string
	CNIBinDir       string
	CNINetworkName  string
	CNIBridge       string
	PodCIDR         string
	CNIAgentConfDir string
	CNIShimPath     string
	CNICheckPeriod  metav1.Duration

	RelistPeriod              metav1.Duration
	ConcurrentReconciles      int
	ParallelSandboxStarts     int
	MaxPods                   int
	NodeStatusUpdateFrequency metav1.Duration
	SlowPodStartThreshold     metav1.Duration

	SystemReserved         map[string]string
	KubeReserved           map[string]string
	EvictionHard           map[string]string
	EnforceNodeAllocatable []string
	SystemReservedCgroup   string
	KubeReservedCgroup     string
	// The eviction manager's flags (no configuration file fields yet).
	EvictionSoft                     map[string]string
	EvictionSoftGracePeriod          map[string]string
	EvictionMinimumReclaim           map[string]string
	EvictionPressureTransitionPeriod time.Duration
	EvictionMaxPodGracePeriod        int64
	ImageGCHighThresholdPercent      int32
	ImageGCLowThresholdPercent       int32
	ImageMinimumGCAge                metav1.Duration
	ImageMaximumGCAge                metav1.Duration
	// VolumeStatsAggPeriod: see options_storage.go (no configuration
	// file field yet).
	VolumeStatsAggPeriod time.Duration

	Port                                     int
	Address                                  string
	TLSCertFile                              string
	TLSPrivateKeyFile                        string
	CertDir                                  string
	RotateServerCertificates                 bool
	ClientCAFile                             string
	AnonymousAuth                            bool
	AuthenticationTokenWebhook               bool
	AuthenticationTokenWebhookCacheTTL       metav1.Duration
	AuthorizationMode                        string
	AuthorizationWebhookCacheAuthorizedTTL   metav1.Duration
	AuthorizationWebhookCacheUnauthorizedTTL metav1.Duration

	ContainerLogMaxSize         string
	ContainerLogMaxFiles        int
	ContainerLogMonitorInterval metav1.Duration

	// MetricsBindAddress serves /metrics; "0" turns it off.
	MetricsBindAddress string
	// PprofBindAddress serves /debug/pprof; "" or "0" turns it off.
	PprofBindAddress string
	// HealthProbeBindAddress is host:port of /healthz and /readyz, the
	// file's healthzBindAddress and healthzPort; "0" turns them off.
	HealthProbeBindAddress string
}

// defaultOptions are nodelet's defaults: the configuration's
// (v1alpha1.SetDefaults) and the host's name.
func defaultOptions() Options {
	config := &configv1alpha1.NodeletConfiguration{}
	configv1alpha1.SetDefaults(config)
	return optionsFromConfiguration(config)
}

// optionsFromConfiguration is a defaulted configuration file as options,
// with the node's name defaulted to the host's.
func optionsFromConfiguration(c *configv1alpha1.NodeletConfiguration) Options {
	host, _ := os.Hostname()
	healthz := "0"
	if port := ptr.Deref(c.HealthzPort, 0); port != 0 {
		healthz = net.JoinHostPort(c.HealthzBindAddress, strconv.Itoa(int(port)))
	}
	return Options{
		// Node names are lowercase, host names need not be.
		NodeName:     strings.ToLower(host),
		NodeIdentity: NodeIdentityKubeconfig,

		ContainerRuntimeEndpoint: c.ContainerRuntimeEndpoint,
		KubeAPIQPS:               ptr.Deref(c.KubeAPIQPS, 0),
		KubeAPIBurst:             int(c.KubeAPIBurst),
		RuntimeRequestTimeout:    c.RuntimeRequestTimeout,
		RootDir:                  c.RootDir,
		PodLogDir:                c.PodLogsDir,
		ContainerLogDir:          c.ContainerLogsDir,
		CgroupRoot:               c.CgroupRoot,
		CgroupDriver:             c.CgroupDriver,
		PodPidsLimit:             ptr.Deref(c.PodPidsLimit, -1),
		ResolvConf:               ptr.Deref(c.ResolvConf, ""),
		ClusterDNS:               slices.Clone(c.ClusterDNS),
		ClusterDomain:            c.ClusterDomain,
		AllowedUnsafeSysctls:     slices.Clone(c.AllowedUnsafeSysctls),

		NetworkMode:     c.NetworkMode,
		CNIConfDir:      c.CNIConfDir,
		CNIBinDir:       c.CNIBinDir,
		CNINetworkName:  c.CNINetworkName,
		CNIBridge:       c.CNIBridge,
		PodCIDR:         c.PodCIDR,
		CNIAgentConfDir: c.CNIAgentConfDir,
		CNIShimPath:     c.CNIShimPath,
		CNICheckPeriod:  c.CNICheckPeriod,

		RelistPeriod:              c.RelistPeriod,
		ConcurrentReconciles:      int(c.ConcurrentReconciles),
		ParallelSandboxStarts:     int(c.ParallelSandboxStarts),
		MaxPods:                   int(c.MaxPods),
		NodeStatusUpdateFrequency: c.NodeStatusUpdateFrequency,
		SlowPodStartThreshold:     ptr.Deref(c.SlowPodStartThreshold, metav1.Duration{}),

		SystemReserved:                   maps.Clone(c.SystemReserved),
		KubeReserved:                     maps.Clone(c.KubeReserved),
		EvictionHard:                     maps.Clone(c.EvictionHard),
		EnforceNodeAllocatable:           slices.Clone(c.EnforceNodeAllocatable),
		SystemReservedCgroup:             c.SystemReservedCgroup,
		KubeReservedCgroup:               c.KubeReservedCgroup,
		EvictionPressureTransitionPeriod: defaultEvictionPressureTransitionPeriod,
		ImageGCHighThresholdPercent:      ptr.Deref(c.ImageGCHighThresholdPercent, 0),
		ImageGCLowThresholdPercent:       ptr.Deref(c.ImageGCLowThresholdPercent, 0),
		ImageMinimumGCAge:                c.ImageMinimumGCAge,
		ImageMaximumGCAge:                c.ImageMaximumGCAge,
		VolumeStatsAggPeriod:             defaultVolumeStatsAggPeriod,
		TimerSlack:                       defaultTimerSlack,
		GCPercent:                        defaultGCPercent,

		Port:                                     int(c.Port),
		Address:                                  c.Address,
		TLSCertFile:                              c.TLSCertFile,
		TLSPrivateKeyFile:                        c.TLSPrivateKeyFile,
		CertDir:                                  c.CertDir,
		RotateServerCertificates:                 c.RotateServerCertificates,
		ClientCAFile:                             c.Authentication.X509.ClientCAFile,
		AnonymousAuth:                            ptr.Deref(c.Authentication.Anonymous.Enabled, false),
		AuthenticationTokenWebhook:               ptr.Deref(c.Authentication.Webhook.Enabled, false),
		AuthenticationTokenWebhookCacheTTL:       c.Authentication.Webhook.CacheTTL,
		AuthorizationMode:                        c.Authorization.Mode,
		AuthorizationWebhookCacheAuthorizedTTL:   c.Authorization.Webhook.CacheAuthorizedTTL,
		AuthorizationWebhookCacheUnauthorizedTTL: c.Authorization.Webhook.CacheUnauthorizedTTL,

		ContainerLogMaxSize:         c.ContainerLogMaxSize,
		ContainerLogMaxFiles:        int(ptr.Deref(c.ContainerLogMaxFiles, 0)),
		ContainerLogMonitorInterval: c.ContainerLogMonitorInterval,

		MetricsBindAddress:     c.MetricsBindAddress,
		PprofBindAddress:       c.PprofBindAddress,
		HealthProbeBindAddress: healthz,
	}
}

// configuration is the options' configuration file: the effective
// configuration, served on /configz.
func (o *Options) configuration() (*configv1alpha1.NodeletConfiguration, error) {
	healthzAddress, healthzPort, err := splitBindAddress(o.HealthProbeBindAddress)
	if err != nil {
		return nil, fmt.Errorf("--health-probe-bind-address: %w", err)
	}
	c := &configv1alpha1.NodeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: configv1alpha1.SchemeGroupVersion.String(), Kind: configv1alpha1.Kind},

		ContainerRuntimeEndpoint: o.ContainerRuntimeEndpoint,
		RuntimeRequestTimeout:    o.RuntimeRequestTimeout,
		KubeAPIQPS:               ptr.To(o.KubeAPIQPS),
		KubeAPIBurst:             int32(o.KubeAPIBurst),
		RootDir:                  o.RootDir,
		PodLogsDir:               o.PodLogDir,
		ContainerLogsDir:         o.ContainerLogDir,
		CgroupRoot:               o.CgroupRoot,
		CgroupDriver:             o.CgroupDriver,
		PodPidsLimit:             ptr.To(o.PodPidsLimit),
		ResolvConf:               ptr.To(o.ResolvConf),
		ClusterDNS:               slices.Clone(o.ClusterDNS),
		ClusterDomain:            o.ClusterDomain,
		AllowedUnsafeSysctls:     slices.Clone(o.AllowedUnsafeSysctls),

		NetworkMode:     o.NetworkMode,
		CNIConfDir:      o.CNIConfDir,
		CNIBinDir:       o.CNIBinDir,
		CNINetworkName:  o.CNINetworkName,
		CNIBridge:       o.CNIBridge,
		PodCIDR:         o.PodCIDR,
		CNIAgentConfDir: o.CNIAgentConfDir,
		CNIShimPath:     o.CNIShimPath,
		CNICheckPeriod:  o.CNICheckPeriod,

		RelistPeriod:              o.RelistPeriod,
		ConcurrentReconciles:      int32(o.ConcurrentReconciles),
		ParallelSandboxStarts:     int32(o.ParallelSandboxStarts),
		MaxPods:                   int32(o.MaxPods),
		NodeStatusUpdateFrequency: o.NodeStatusUpdateFrequency,
		SlowPodStartThreshold:     ptr.To(o.SlowPodStartThreshold),

		SystemReserved:              maps.Clone(o.SystemReserved),
		KubeReserved:                maps.Clone(o.KubeReserved),
		EvictionHard:                maps.Clone(o.EvictionHard),
		EnforceNodeAllocatable:      slices.Clone(o.EnforceNodeAllocatable),
		SystemReservedCgroup:        o.SystemReservedCgroup,
		KubeReservedCgroup:          o.KubeReservedCgroup,
		ImageGCHighThresholdPercent: ptr.To(o.ImageGCHighThresholdPercent),
		ImageGCLowThresholdPercent:  ptr.To(o.ImageGCLowThresholdPercent),
		ImageMinimumGCAge:           o.ImageMinimumGCAge,
		ImageMaximumGCAge:           o.ImageMaximumGCAge,

		Address:                  o.Address,
		Port:                     int32(o.Port),
		TLSCertFile:              o.TLSCertFile,
		TLSPrivateKeyFile:        o.TLSPrivateKeyFile,
		CertDir:                  o.CertDir,
		RotateServerCertificates: o.RotateServerCertificates,
		Authentication: configv1alpha1.NodeletAuthentication{
			X509: configv1alpha1.NodeletX509Authentication{ClientCAFile: o.ClientCAFile},
			Webhook: configv1alpha1.NodeletWebhookAuthentication{
				Enabled:  ptr.To(o.AuthenticationTokenWebhook),
				CacheTTL: o.AuthenticationTokenWebhookCacheTTL,
			},
			Anonymous: configv1alpha1.NodeletAnonymousAuthentication{Enabled: ptr.To(o.AnonymousAuth)},
		},
		Authorization: configv1alpha1.NodeletAuthorization{
			Mode: o.AuthorizationMode,
			Webhook: configv1alpha1.NodeletWebhookAuthorization{
				CacheAuthorizedTTL:   o.AuthorizationWebhookCacheAuthorizedTTL,
				CacheUnauthorizedTTL: o.AuthorizationWebhookCacheUnauthorizedTTL,
			},
		},

		ContainerLogMaxSize:         o.ContainerLogMaxSize,
		ContainerLogMaxFiles:        ptr.To(int32(o.ContainerLogMaxFiles)),
		ContainerLogMonitorInterval: o.ContainerLogMonitorInterval,

		MetricsBindAddress: o.MetricsBindAddress,
		PprofBindAddress:   o.PprofBindAddress,
		HealthzBindAddress: healthzAddress,
		HealthzPort:        ptr.To(healthzPort),
	}
	return c, nil
}

// splitBindAddress splits host:port; "0" and "" are port 0, off.
func splitBindAddress(address string) (string, int32, error) {
	if address == "" || address == "0" {
		return "", 0, nil
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", address, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("%q: port %q is not a number from 0 to 65535", address, port)
	}
	return host, int32(n), nil
}

// bindFlags registers a flag for every option, writing into o.
func (o *Options) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig to reach the API server as the node (default: in-cluster config or $KUBECONFIG).")
	fs.StringVar(&o.BootstrapKubeconfig, "bootstrap-kubeconfig", o.BootstrapKubeconfig, "Kubeconfig with a bootstrap token that requests the node's client certificate (a CSR for system:node:<node-name>) when --kubeconfig is missing or its certificate is unusable or expired; --kubeconfig is then written to point at the certificate in --cert-dir, which nodelet renews with itself before it expires. As the kubelet's.")
	fs.StringVar(&o.NodeIdentity, "node-identity", o.NodeIdentity, "Where the node's credentials come from: kubeconfig (--kubeconfig, or in-cluster, is the node's) or csr (--kubeconfig, or in-cluster, is the DaemonSet pod's bound service account token, which only requests the node's client certificate through a CSR; nodelet then speaks with that certificate alone, kept in --cert-dir and renewed before it expires).")
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "Name of the Node to register and run pods for.")
	fs.StringVar(&o.NodeIP, "node-ip", o.NodeIP, "The Node's InternalIP (default: the first non-loopback address).")
	fs.Int32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second to the API server, events included.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the API server above --kube-api-qps.")
	fs.StringVar(&o.ContainerRuntimeEndpoint, "container-runtime-endpoint", o.ContainerRuntimeEndpoint, "CRI endpoint of the container runtime.")
	fs.DurationVar(&o.RuntimeRequestTimeout.Duration, "runtime-request-timeout", o.RuntimeRequestTimeout.Duration, "Timeout of CRI calls other than image pulls and container stops.")
	fs.StringVar(&o.RootDir, "root-dir", o.RootDir, "Folder for nodelet's state: pod folders, volumes, the lock file.")
	fs.StringVar(&o.PodLogDir, "pod-log-dir", o.PodLogDir, "Folder for the pods' container logs.")
	fs.StringVar(&o.ContainerLogDir, "container-log-dir", o.ContainerLogDir, "Folder for the <pod>_<namespace>_<container>-<id>.log links log shippers read.")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", o.CgroupRoot, "Cgroup under which pod cgroups are made; with --cgroup-driver=systemd its components name slices (/nodelet is nodelet.slice).")
	fs.StringVar(&o.CgroupDriver, "cgroup-driver", o.CgroupDriver, "How cgroups are made: cgroupfs (cgroup files) or systemd (slices made through systemd over D-Bus); the runtime's must be the same.")
	fs.Int64Var(&o.PodPidsLimit, "pod-max-pids", o.PodPidsLimit, "The most processes each pod may have; -1 is no limit.")
	fs.StringVar(&o.CNIConfDir, "cni-conf-dir", o.CNIConfDir, "The runtime's CNI configuration folder.")
	fs.StringVar(&o.CNIBinDir, "cni-bin-dir", o.CNIBinDir, "The CNI plugins' folder.")
	fs.StringVar(&o.CNINetworkName, "cni-network-name", o.CNINetworkName, "Name of the network in the conflist nodelet writes.")
	fs.StringVar(&o.CNIBridge, "cni-bridge", o.CNIBridge, "Bridge of the conflist nodelet writes.")
	fs.StringVar(&o.PodCIDR, "pod-cidr", o.PodCIDR, "Pod CIDR for the conflist (default: the Node's spec.podCIDR).")
	fs.StringVar(&o.NetworkMode, "network-mode", o.NetworkMode, "Who runs CNI: runtime (the container runtime, with the node's conflist in --cni-conf-dir) or agent (nodelet itself, behind the nodelet-cni plugin it installs for the runtime).")
	fs.StringVar(&o.CNIAgentConfDir, "cni-agent-conf-dir", o.CNIAgentConfDir, "Agent mode: folder of the node's real CNI configuration (default: <root-dir>/cni/net.d).")
	fs.StringVar(&o.CNIShimPath, "cni-shim-path", o.CNIShimPath, "Agent mode: the nodelet-cni binary to install into --cni-bin-dir (default: nodelet-cni beside nodelet).")
	fs.DurationVar(&o.CNICheckPeriod.Duration, "cni-check-period", o.CNICheckPeriod.Duration, "Agent mode: how often every pod network is checked (CNI CHECK); a broken one has its sandbox recreated.")
	fs.StringVar(&o.ResolvConf, "resolv-conf", o.ResolvConf, "Resolver configuration given to pods; empty gives them none of the host's (Default pods then resolve through the local machine).")
	fs.StringSliceVar(&o.ClusterDNS, "cluster-dns", o.ClusterDNS, "Comma-separated IP addresses of the cluster's DNS servers, given to pods with the ClusterFirst DNS policy.")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "The cluster's DNS domain, searched by pods besides the host's domains.")
	fs.StringSliceVar(&o.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", o.AllowedUnsafeSysctls, "Comma-separated unsafe sysctls, or prefixes ending in *, that pods may set.")
	fs.DurationVar(&o.RelistPeriod.Duration, "relist-period", o.RelistPeriod.Duration, "How often the PLEG relists the container runtime.")
	fs.IntVar(&o.ConcurrentReconciles, "concurrent-reconciles", o.ConcurrentReconciles, "How many pods are worked on at once.")
	fs.IntVar(&o.ParallelSandboxStarts, "parallel-sandbox-starts", o.ParallelSandboxStarts, "How many pod sandboxes are created in the runtime at once; the others wait their turn, first come first served (0: two per CPU).")
	fs.IntVar(&o.MaxPods, "max-pods", o.MaxPods, "The Node's pod capacity.")
	fs.DurationVar(&o.NodeStatusUpdateFrequency.Duration, "node-status-update-frequency", o.NodeStatusUpdateFrequency.Duration, "How often the Node's status is computed and, when changed, patched.")
	fs.DurationVar(&o.SlowPodStartThreshold.Duration, "slow-pod-start-threshold", o.SlowPodStartThreshold.Duration, "How long a pod may take from its creation to Ready before a SlowPodStart event names its slowest step; 0 tells none.")
	fs.Var(newMapFlag(&o.SystemReserved, "="), "system-reserved", "Resources kept from pods for the system's daemons, as resource=quantity pairs of cpu, memory, ephemeral-storage and pid (e.g. cpu=200m,memory=500Mi).")
	fs.Var(newMapFlag(&o.KubeReserved, "="), "kube-reserved", "Resources kept from pods for Kubernetes' daemons (nodelet, the runtime), as --system-reserved.")
	fs.Var(newMapFlag(&o.EvictionHard, "<"), "eviction-hard", "Hard eviction thresholds, signal<quantity or percentage (e.g. memory.available<1Gi,nodefs.available<10%); memory.available's and nodefs.available's are kept from the Node's allocatable. Replaces the default set whole.")
	o.bindEvictionFlags(fs)
	o.bindStorageFlags(fs)
	o.bindCompanionFlags(fs)
	o.bindProcessFlags(fs)
	fs.StringSliceVar(&o.EnforceNodeAllocatable, "enforce-node-allocatable", o.EnforceNodeAllocatable, "Levels of node allocatable enforcement: pods (the pods' cgroup limited to capacity less the reservations), system-reserved and kube-reserved (--system-reserved-cgroup and --kube-reserved-cgroup limited to the reservations), or none.")
	fs.StringVar(&o.SystemReservedCgroup, "system-reserved-cgroup", o.SystemReservedCgroup, "Absolute name of the existing cgroup of the system's daemons, limited to --system-reserved under --enforce-node-allocatable=system-reserved.")
	fs.StringVar(&o.KubeReservedCgroup, "kube-reserved-cgroup", o.KubeReservedCgroup, "Absolute name of the existing cgroup of Kubernetes' daemons, limited to --kube-reserved under --enforce-node-allocatable=kube-reserved.")
	fs.Int32Var(&o.ImageGCHighThresholdPercent, "image-gc-high-threshold", o.ImageGCHighThresholdPercent, "Image file system usage (percent) at which unused images are removed; 100 turns image garbage collection off.")
	fs.Int32Var(&o.ImageGCLowThresholdPercent, "image-gc-low-threshold", o.ImageGCLowThresholdPercent, "Image file system usage (percent) image garbage collection frees down to; below --image-gc-high-threshold.")
	fs.DurationVar(&o.ImageMinimumGCAge.Duration, "image-minimum-gc-age", o.ImageMinimumGCAge.Duration, "How long an unused image stays on the node before it may be collected.")
	fs.DurationVar(&o.ImageMaximumGCAge.Duration, "image-maximum-gc-age", o.ImageMaximumGCAge.Duration, "Images unused for longer are removed whatever the disk usage (0: never).")
	fs.IntVar(&o.Port, "port", o.Port, "Port of the node's HTTPS API (logs, exec, attach, port-forward, stats), advertised as the Node's daemon endpoint.")
	fs.StringVar(&o.Address, "address", o.Address, "IP address the node's HTTPS API listens on.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate of the node's API (default: self-signed in --cert-dir, or requested with --rotate-server-certificates).")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "Key of --tls-cert-file.")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Folder of the serving certificates nodelet makes or requests (default: <root-dir>/pki).")
	fs.BoolVar(&o.RotateServerCertificates, "rotate-server-certificates", o.RotateServerCertificates, "Request the serving certificate through the certificates API (signer kubernetes.io/kubelet-serving) and renew it before it expires; the requests need approving.")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CAs whose client certificates authenticate to the node's API.")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Let requests without credentials in as system:anonymous.")
	fs.BoolVar(&o.AuthenticationTokenWebhook, "authentication-token-webhook", o.AuthenticationTokenWebhook, "Check bearer tokens with TokenReviews.")
	fs.DurationVar(&o.AuthenticationTokenWebhookCacheTTL.Duration, "authentication-token-webhook-cache-ttl", o.AuthenticationTokenWebhookCacheTTL.Duration, "How long TokenReview answers are remembered.")
	fs.StringVar(&o.AuthorizationMode, "authorization-mode", o.AuthorizationMode, "Webhook (SubjectAccessReviews) or AlwaysAllow.")
	fs.DurationVar(&o.AuthorizationWebhookCacheAuthorizedTTL.Duration, "authorization-webhook-cache-authorized-ttl", o.AuthorizationWebhookCacheAuthorizedTTL.Duration, "How long an access review's yes is remembered.")
	fs.DurationVar(&o.AuthorizationWebhookCacheUnauthorizedTTL.Duration, "authorization-webhook-cache-unauthorized-ttl", o.AuthorizationWebhookCacheUnauthorizedTTL.Duration, "How long an access review's no is remembered.")
	fs.StringVar(&o.ContainerLogMaxSize, "container-log-max-size", o.ContainerLogMaxSize, "Size at which a running container's log file is rotated (a quantity such as 10Mi; 0 turns rotation off).")
	fs.IntVar(&o.ContainerLogMaxFiles, "container-log-max-files", o.ContainerLogMaxFiles, "How many log files one container's log may span, the live one included.")
	fs.DurationVar(&o.ContainerLogMonitorInterval.Duration, "container-log-monitor-interval", o.ContainerLogMonitorInterval.Duration, "How often container logs are looked at for rotation.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the metrics endpoint; 0 turns it off.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address of Go's /debug/pprof profiles, unauthenticated (off by default; 0 turns it off).")
}

// parseOptions reads defaults, then the --config file, then the flags given
// on the command line, and validates the result.
func parseOptions(args []string, goFlags *flag.FlagSet) (Options, error) {
	var configFile string

	// First pass: find --config without failing on the other flags.
	pre := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	pre.StringVar(&configFile, "config", "", "")
	pre.Usage = func() {}
	pre.SetOutput(io.Discard)
	_ = pre.Parse(args)
	config := &configv1alpha1.NodeletConfiguration{}
	if configFile != "" {
		var err error
		if config, err = readConfigFile(configFile); err != nil {
			return Options{}, err
		}
	}
	configv1alpha1.SetDefaults(config)
	opts := optionsFromConfiguration(config)

	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	fs.StringVar(&configFile, "config", configFile, "A "+configv1alpha1.Kind+" file ("+configv1alpha1.SchemeGroupVersion.String()+") with any of the settings below but --kubeconfig, --bootstrap-kubeconfig, --node-identity, --node-name and --node-ip; flags given on the command line win.")
	opts.bindFlags(fs)
	if goFlags != nil {
		fs.AddGoFlagSet(goFlags)
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	return opts, opts.validate()
}

// readConfigFile reads and strictly decodes a configuration file.
func readConfigFile(path string) (*configv1alpha1.NodeletConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	config, err := configv1alpha1.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return config, nil
}

// validate checks the options: the node's name, then the configuration
// they make, whose errors name the file's fields.
func (o *Options) validate() error {
	if o.NodeName == "" {
		return fmt.Errorf("--node-name is required when the host name is unknown")
	}
	if o.NodeIdentity != NodeIdentityKubeconfig && o.NodeIdentity != NodeIdentityCSR {
		return fmt.Errorf("--node-identity %q: want %s or %s", o.NodeIdentity, NodeIdentityKubeconfig, NodeIdentityCSR)
	}
	if err := o.validateBootstrap(); err != nil {
		return err
	}
	config, err := o.configuration()
	if err != nil {
		return err
	}
	if errs := configv1alpha1.Validate(config); len(errs) > 0 {
		return fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	if err := admission.ValidateSysctlPatterns(o.AllowedUnsafeSysctls); err != nil {
		return fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	if err := o.validateProcess(); err != nil {
		return err
	}
	return o.validateCompanion()
}

// containerLogMaxSize is --container-log-max-size in bytes.
func (o *Options) containerLogMaxSize() (int64, error) {
	size, err := resource.ParseQuantity(o.ContainerLogMaxSize)
	if err != nil {
		return 0, fmt.Errorf("--container-log-max-size %q: %w", o.ContainerLogMaxSize, err)
	}
	return size.Value(), nil
}
