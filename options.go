package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Options are nodelet's settings. Every field can be given as a flag or in
// the --config file (the same names in camelCase); a flag given on the
// command line wins over the file.
type Options struct {
	// Kubeconfig to reach the API server as the node; default: in-cluster,
	// or $KUBECONFIG.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// NodeName is the Node nodelet registers and runs pods for; default:
	// the host name.
	NodeName string `json:"nodeName,omitempty"`
	// NodeIP is the Node's InternalIP; default: the host's first
	// non-loopback address.
	NodeIP string `json:"nodeIP,omitempty"`
	// ContainerRuntimeEndpoint is the CRI socket.
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint,omitempty"`
	// KubeAPIQPS and KubeAPIBurst limit nodelet's requests to the API
	// server, the kubelet's defaults: a burst of pod starts writes statuses
	// and events at once.
	KubeAPIQPS   float32 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst int     `json:"kubeAPIBurst,omitempty"`
	// RuntimeRequestTimeout bounds every CRI call but pulls and stops.
	RuntimeRequestTimeout metav1.Duration `json:"runtimeRequestTimeout,omitempty"`
	// RootDir holds nodelet's state: pod folders, volumes, the lock file.
	RootDir string `json:"rootDir,omitempty"`
	// PodLogDir holds the pods' container logs, as the kubelet's /var/log/pods.
	PodLogDir string `json:"podLogDir,omitempty"`
	// ContainerLogDir holds the links log shippers read, as /var/log/containers.
	ContainerLogDir string `json:"containerLogDir,omitempty"`
	// CgroupRoot is the cgroup under which pod cgroups are made.
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// CNIConfDir and CNIBinDir are the runtime's CNI folders; nodelet writes
	// the node's conflist into CNIConfDir when none is there.
	CNIConfDir string `json:"cniConfDir,omitempty"`
	CNIBinDir  string `json:"cniBinDir,omitempty"`
	// CNINetworkName and CNIBridge name the network and bridge of the
	// conflist nodelet writes.
	CNINetworkName string `json:"cniNetworkName,omitempty"`
	CNIBridge      string `json:"cniBridge,omitempty"`
	// PodCIDR overrides the Node's spec.podCIDR for the conflist.
	PodCIDR string `json:"podCIDR,omitempty"`
	// NetworkMode is who runs CNI: "runtime" (the runtime, with the
	// node's conflist in CNIConfDir) or "agent" (nodelet, behind its shim
	// plugin, which it installs into CNIBinDir and CNIConfDir).
	NetworkMode string `json:"networkMode,omitempty"`
	// CNIAgentConfDir holds the node's real conflist in agent mode;
	// default: <RootDir>/cni/net.d.
	CNIAgentConfDir string `json:"cniAgentConfDir,omitempty"`
	// CNIShimPath is the shim plugin's binary that agent mode installs;
	// default: nodelet-cni beside nodelet's own binary.
	CNIShimPath string `json:"cniShimPath,omitempty"`
	// CNICheckPeriod is how often agent mode CHECKs every pod's network.
	CNICheckPeriod metav1.Duration `json:"cniCheckPeriod,omitempty"`
	// ResolvConf is the host's resolver configuration, given to pods.
	ResolvConf string `json:"resolvConf,omitempty"`
	// ClusterDNS are the IPs of the cluster's DNS service, the only
	// resolvers of ClusterFirst pods; without them those pods resolve as
	// the host does (with a MissingClusterDNS event).
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ClusterDomain is the cluster's DNS domain: pods search it, and a
	// pod with a subdomain has an FQDN in it.
	ClusterDomain string `json:"clusterDomain,omitempty"`
	// RelistPeriod is how often the PLEG relists the runtime.
	RelistPeriod metav1.Duration `json:"relistPeriod,omitempty"`
	// ConcurrentReconciles is how many pods are worked on at once. A pod
	// waiting out a grace period, a lifecycle hook or an image pull holds
	// one; the default, as many as the node's default capacity, gives
	// every pod its own, as the kubelet's pod workers do, so that no pod
	// waits for another.
	ConcurrentReconciles int `json:"concurrentReconciles,omitempty"`
	// ParallelSandboxStarts is how many pod sandboxes are being created in
	// the runtime at once; 0 means two per CPU.
	ParallelSandboxStarts int `json:"parallelSandboxStarts,omitempty"`
	// MaxPods is the Node's pod capacity.
	MaxPods int `json:"maxPods,omitempty"`
	// NodeStatusUpdateFrequency is how often the Node's status is computed
	// (and patched when it changed).
	NodeStatusUpdateFrequency metav1.Duration `json:"nodeStatusUpdateFrequency,omitempty"`
	// Port is where the node's HTTPS API listens, advertised as the
	// Node's daemon endpoint; Address is the IP it listens on.
	Port    int    `json:"port,omitempty"`
	Address string `json:"address,omitempty"`
	// TLSCertFile and TLSPrivateKeyFile are the API's serving certificate;
	// without them nodelet makes a self-signed one in CertDir, or with
	// RotateServerCertificates requests one through the certificates API
	// (signer kubernetes.io/kubelet-serving) and renews it before it
	// expires. CertDir defaults to <root-dir>/pki.
	TLSCertFile              string `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile        string `json:"tlsPrivateKeyFile,omitempty"`
	CertDir                  string `json:"certDir,omitempty"`
	RotateServerCertificates bool   `json:"rotateServerCertificates,omitempty"`
	// ClientCAFile holds the CAs whose client certificates authenticate to
	// the API (the API server's kubelet client certificate's CA).
	ClientCAFile string `json:"clientCAFile,omitempty"`
	// AnonymousAuth lets requests without credentials in as
	// system:anonymous; off by default.
	AnonymousAuth bool `json:"anonymousAuth,omitempty"`
	// AuthenticationTokenWebhook checks bearer tokens with TokenReviews,
	// remembered for the cache TTL.
	AuthenticationTokenWebhook         bool            `json:"authenticationTokenWebhook,omitempty"`
	AuthenticationTokenWebhookCacheTTL metav1.Duration `json:"authenticationTokenWebhookCacheTTL,omitempty"`
	// AuthorizationMode is Webhook (SubjectAccessReviews, answers
	// remembered for the TTLs) or AlwaysAllow.
	AuthorizationMode                        string          `json:"authorizationMode,omitempty"`
	AuthorizationWebhookCacheAuthorizedTTL   metav1.Duration `json:"authorizationWebhookCacheAuthorizedTTL,omitempty"`
	AuthorizationWebhookCacheUnauthorizedTTL metav1.Duration `json:"authorizationWebhookCacheUnauthorizedTTL,omitempty"`
	// ContainerLogMaxSize is the size at which a running container's log
	// is rotated ("0" turns rotation off), ContainerLogMaxFiles how many
	// files it may span, ContainerLogMonitorInterval how often logs are
	// looked at.
	ContainerLogMaxSize         string          `json:"containerLogMaxSize,omitempty"`
	ContainerLogMaxFiles        int             `json:"containerLogMaxFiles,omitempty"`
	ContainerLogMonitorInterval metav1.Duration `json:"containerLogMonitorInterval,omitempty"`
	// MetricsBindAddress serves /metrics; "0" turns it off.
	MetricsBindAddress string `json:"metricsBindAddress,omitempty"`
	// HealthProbeBindAddress serves /healthz and /readyz.
	HealthProbeBindAddress string `json:"healthProbeBindAddress,omitempty"`
}

// defaultMaxPods is the Node's pod capacity by default (the kubelet's).
const defaultMaxPods = 110

// defaultOptions are nodelet's defaults, documented on the flags.
func defaultOptions() Options {
	host, _ := os.Hostname()
	return Options{
		// Node names are lowercase, host names need not be.
		NodeName:                  strings.ToLower(host),
		ContainerRuntimeEndpoint:  "unix:///run/containerd/containerd.sock",
		KubeAPIQPS:                50,
		KubeAPIBurst:              100,
		RuntimeRequestTimeout:     metav1.Duration{Duration: 2 * time.Minute},
		RootDir:                   "/var/lib/nodelet",
		PodLogDir:                 "/var/log/pods",
		ContainerLogDir:           "/var/log/containers",
		CgroupRoot:                "/nodelet",
		CNIConfDir:                "/etc/cni/net.d",
		CNIBinDir:                 "/opt/cni/bin",
		CNINetworkName:            "nodelet",
		CNIBridge:                 "nodelet0",
		NetworkMode:               "runtime",
		CNICheckPeriod:            metav1.Duration{Duration: time.Minute},
		ResolvConf:                "/etc/resolv.conf",
		RelistPeriod:              metav1.Duration{Duration: time.Second},
		ConcurrentReconciles:      defaultMaxPods,
		MaxPods:                   defaultMaxPods,
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
		Port:                      10250,
		MetricsBindAddress:        "127.0.0.1:10290",
		HealthProbeBindAddress:    "127.0.0.1:10291",

		// The node's API: the kubelet's secure defaults (its config
		// file's): no anonymous requests, tokens and access reviewed by
		// the API server.
		Address:                                  "0.0.0.0",
		AuthenticationTokenWebhook:               true,
		AuthenticationTokenWebhookCacheTTL:       metav1.Duration{Duration: 2 * time.Minute},
		AuthorizationMode:                        "Webhook",
		AuthorizationWebhookCacheAuthorizedTTL:   metav1.Duration{Duration: 5 * time.Minute},
		AuthorizationWebhookCacheUnauthorizedTTL: metav1.Duration{Duration: 30 * time.Second},
		ContainerLogMaxSize:                      "10Mi",
		ContainerLogMaxFiles:                     5,
		ContainerLogMonitorInterval:              metav1.Duration{Duration: 10 * time.Second},
	}
}

// bindFlags registers a flag for every option, writing into o.
func (o *Options) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig to reach the API server as the node (default: in-cluster config or $KUBECONFIG).")
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "Name of the Node to register and run pods for.")
	fs.StringVar(&o.NodeIP, "node-ip", o.NodeIP, "The Node's InternalIP (default: the first non-loopback address).")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second to the API server, events included.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the API server above --kube-api-qps.")
	fs.StringVar(&o.ContainerRuntimeEndpoint, "container-runtime-endpoint", o.ContainerRuntimeEndpoint, "CRI endpoint of the container runtime.")
	fs.DurationVar(&o.RuntimeRequestTimeout.Duration, "runtime-request-timeout", o.RuntimeRequestTimeout.Duration, "Timeout of CRI calls other than image pulls and container stops.")
	fs.StringVar(&o.RootDir, "root-dir", o.RootDir, "Folder for nodelet's state: pod folders, volumes, the lock file.")
	fs.StringVar(&o.PodLogDir, "pod-log-dir", o.PodLogDir, "Folder for the pods' container logs.")
	fs.StringVar(&o.ContainerLogDir, "container-log-dir", o.ContainerLogDir, "Folder for the <pod>_<namespace>_<container>-<id>.log links log shippers read.")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", o.CgroupRoot, "Cgroup under which pod cgroups are made (cgroupfs driver).")
	fs.StringVar(&o.CNIConfDir, "cni-conf-dir", o.CNIConfDir, "The runtime's CNI configuration folder.")
	fs.StringVar(&o.CNIBinDir, "cni-bin-dir", o.CNIBinDir, "The CNI plugins' folder.")
	fs.StringVar(&o.CNINetworkName, "cni-network-name", o.CNINetworkName, "Name of the network in the conflist nodelet writes.")
	fs.StringVar(&o.CNIBridge, "cni-bridge", o.CNIBridge, "Bridge of the conflist nodelet writes.")
	fs.StringVar(&o.PodCIDR, "pod-cidr", o.PodCIDR, "Pod CIDR for the conflist (default: the Node's spec.podCIDR).")
	fs.StringVar(&o.NetworkMode, "network-mode", o.NetworkMode, "Who runs CNI: runtime (the container runtime, with the node's conflist in --cni-conf-dir) or agent (nodelet itself, behind the nodelet-cni plugin it installs for the runtime).")
	fs.StringVar(&o.CNIAgentConfDir, "cni-agent-conf-dir", o.CNIAgentConfDir, "Agent mode: folder of the node's real CNI configuration (default: <root-dir>/cni/net.d).")
	fs.StringVar(&o.CNIShimPath, "cni-shim-path", o.CNIShimPath, "Agent mode: the nodelet-cni binary to install into --cni-bin-dir (default: nodelet-cni beside nodelet).")
	fs.DurationVar(&o.CNICheckPeriod.Duration, "cni-check-period", o.CNICheckPeriod.Duration, "Agent mode: how often every pod network is checked (CNI CHECK); a broken one has its sandbox recreated.")
	fs.StringVar(&o.ResolvConf, "resolv-conf", o.ResolvConf, "Resolver configuration given to pods.")
	fs.StringSliceVar(&o.ClusterDNS, "cluster-dns", o.ClusterDNS, "Comma-separated IPs of the cluster's DNS service, which ClusterFirst pods resolve through.")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "The cluster's DNS domain (such as cluster.local), searched by pods and the domain of their FQDN.")
	fs.DurationVar(&o.RelistPeriod.Duration, "relist-period", o.RelistPeriod.Duration, "How often the PLEG relists the container runtime.")
	fs.IntVar(&o.ConcurrentReconciles, "concurrent-reconciles", o.ConcurrentReconciles, "How many pods are worked on at once.")
	fs.IntVar(&o.ParallelSandboxStarts, "parallel-sandbox-starts", o.ParallelSandboxStarts, "How many pod sandboxes are created in the runtime at once; the others wait their turn, first come first served (0: two per CPU).")
	fs.IntVar(&o.MaxPods, "max-pods", o.MaxPods, "The Node's pod capacity.")
	fs.DurationVar(&o.NodeStatusUpdateFrequency.Duration, "node-status-update-frequency", o.NodeStatusUpdateFrequency.Duration, "How often the Node's status is computed and, when changed, patched.")
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
}

// parseOptions reads defaults, then the --config file, then the flags given
// on the command line.
func parseOptions(args []string, goFlags *flag.FlagSet) (Options, error) {
	opts := defaultOptions()
	var configFile string

	// First pass: find --config without failing on the other flags.
	pre := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	pre.StringVar(&configFile, "config", "", "")
	pre.Usage = func() {}
	pre.SetOutput(nopWriter{})
	_ = pre.Parse(args)
	if configFile != "" {
		data, err := os.ReadFile(configFile)
		if err != nil {
			return opts, fmt.Errorf("reading config file: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &opts); err != nil {
			return opts, fmt.Errorf("parsing config file %s: %w", configFile, err)
		}
	}

	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	fs.StringVar(&configFile, "config", configFile, "Optional YAML file with any of the settings below, in camelCase; flags given on the command line win.")
	opts.bindFlags(fs)
	if goFlags != nil {
		fs.AddGoFlagSet(goFlags)
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	return opts, opts.validate()
}

func (o *Options) validate() error {
	switch {
	case o.NodeName == "":
		return fmt.Errorf("--node-name is required when the host name is unknown")
	case o.ConcurrentReconciles < 1:
		return fmt.Errorf("--concurrent-reconciles must be at least 1, not %d", o.ConcurrentReconciles)
	case o.ParallelSandboxStarts < 0:
		return fmt.Errorf("--parallel-sandbox-starts must be 0 or more, not %d", o.ParallelSandboxStarts)
	case o.RelistPeriod.Duration <= 0:
		return fmt.Errorf("--relist-period must be positive, not %s", o.RelistPeriod.Duration)
	case o.MaxPods < 1:
		return fmt.Errorf("--max-pods must be at least 1, not %d", o.MaxPods)
	case o.NetworkMode != "runtime" && o.NetworkMode != "agent":
		return fmt.Errorf("--network-mode must be runtime or agent, not %q", o.NetworkMode)
	case o.CNICheckPeriod.Duration <= 0:
		return fmt.Errorf("--cni-check-period must be positive, not %s", o.CNICheckPeriod.Duration)
	case o.Port < 1 || o.Port > 65535:
		return fmt.Errorf("--port must be between 1 and 65535, not %d", o.Port)
	case (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == ""):
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file go together")
	case o.AuthorizationMode != "Webhook" && o.AuthorizationMode != "AlwaysAllow":
		return fmt.Errorf("--authorization-mode must be Webhook or AlwaysAllow, not %q", o.AuthorizationMode)
	}
	for _, ip := range o.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("--cluster-dns must be IP addresses, not %q", ip)
		}
	}
	if _, err := o.containerLogMaxSize(); err != nil {
		return err
	}
	if o.ContainerLogMaxFiles < 2 {
		return fmt.Errorf("--container-log-max-files must be at least 2, not %d", o.ContainerLogMaxFiles)
	}
	if o.ContainerLogMonitorInterval.Duration <= 0 {
		return fmt.Errorf("--container-log-monitor-interval must be positive, not %s", o.ContainerLogMonitorInterval.Duration)
	}
	return nil
}

// containerLogMaxSize is --container-log-max-size in bytes.
func (o *Options) containerLogMaxSize() (int64, error) {
	size, err := resource.ParseQuantity(o.ContainerLogMaxSize)
	if err != nil {
		return 0, fmt.Errorf("--container-log-max-size %q: %w", o.ContainerLogMaxSize, err)
	}
	return size.Value(), nil
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
