package options

// The settings as the option structs of the parts nodelet wires together.

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/resources/eviction"
	"github.com/nodelet/nodelet/internal/resources/imagegc"
	"github.com/nodelet/nodelet/internal/server"
)

// AllocatableConfig is what the settings keep from pods: the reservations,
// the hard eviction thresholds and the enforcement levels. The Node's
// allocatable and the pods' cgroup limits
// (AllocatableConfig.PodsCgroupLimits) are computed from it.
func (s *NodeletServer) AllocatableConfig() (node.AllocatableConfig, error) {
	systemReserved, err := reservation(s.SystemReserved)
	if err != nil {
		return node.AllocatableConfig{}, fmt.Errorf("--system-reserved: %w", err)
	}
	kubeReserved, err := reservation(s.KubeReserved)
	if err != nil {
		return node.AllocatableConfig{}, fmt.Errorf("--kube-reserved: %w", err)
	}
	thresholds, err := s.evictionThresholds()
	if err != nil {
		return node.AllocatableConfig{}, err
	}
	var hard []eviction.Threshold
	for _, t := range thresholds {
		if t.Hard() {
			hard = append(hard, t)
		}
	}
	return node.AllocatableConfig{
		SystemReserved:         systemReserved,
		KubeReserved:           kubeReserved,
		HardEvictionThresholds: hard,
		EnforceNodeAllocatable: slices.Clone(s.EnforceNodeAllocatable),
		SystemReservedCgroup:   s.SystemReservedCgroup,
		KubeReservedCgroup:     s.KubeReservedCgroup,
	}, nil
}

func reservation(reserved map[string]string) (corev1.ResourceList, error) {
	parsed, err := configv1alpha1.ParseReservation(reserved)
	if err != nil {
		return nil, err
	}
	list := corev1.ResourceList{}
	for name, q := range parsed {
		list[corev1.ResourceName(name)] = q
	}
	return list, nil
}

// ImageGCPolicy is the image garbage collection the settings ask for.
func (s *NodeletServer) ImageGCPolicy() imagegc.Policy {
	return imagegc.Policy{
		HighThresholdPercent: int(*s.ImageGCHighThresholdPercent),
		LowThresholdPercent:  int(*s.ImageGCLowThresholdPercent),
		MinAge:               s.ImageMinimumGCAge.Duration,
		MaxAge:               s.ImageMaximumGCAge.Duration,
	}
}

// evictionThresholds are the hard and soft eviction thresholds.
func (s *NodeletServer) evictionThresholds() ([]eviction.Threshold, error) {
	thresholds, err := eviction.ParseThresholdConfig(s.EnforceNodeAllocatable, s.EvictionHard, s.EvictionSoft, s.EvictionSoftGracePeriod, s.EvictionMinimumReclaim)
	if err != nil {
		return nil, fmt.Errorf("eviction thresholds: %w", err)
	}
	return thresholds, nil
}

// EvictionConfig is the eviction manager's configuration.
func (s *NodeletServer) EvictionConfig() (eviction.Config, error) {
	thresholds, err := s.evictionThresholds()
	if err != nil {
		return eviction.Config{}, err
	}
	return eviction.Config{
		Thresholds:               thresholds,
		PressureTransitionPeriod: s.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds: int64(s.EvictionMaxPodGracePeriod),
	}, nil
}

// VolumeStatsPeriod is the volume manager's StatsPeriod: the setting's
// zero or less (off, as the kubelet's) is its negative.
func (s *NodeletServer) VolumeStatsPeriod() time.Duration {
	if s.VolumeStatsAggPeriod.Duration <= 0 {
		return -1
	}
	return s.VolumeStatsAggPeriod.Duration
}

// ContainerLogMaxSizeBytes is --container-log-max-size in bytes.
func (s *NodeletServer) ContainerLogMaxSizeBytes() (int64, error) {
	size, err := resource.ParseQuantity(s.ContainerLogMaxSize)
	if err != nil {
		return 0, fmt.Errorf("--container-log-max-size %q: %w", s.ContainerLogMaxSize, err)
	}
	return size.Value(), nil
}

// HealthProbeBindAddress is the host:port of /healthz and /readyz as the
// manager takes it; "0" turns them off.
func (s *NodeletServer) HealthProbeBindAddress() string {
	if *s.HealthzPort == 0 {
		return "0"
	}
	return net.JoinHostPort(s.HealthzBindAddress, strconv.Itoa(int(*s.HealthzPort)))
}

// CertificateDir is --cert-dir, by default <root-dir>/pki: the node's
// client and serving certificates.
func (s *NodeletServer) CertificateDir() string {
	if s.CertDir != "" {
		return s.CertDir
	}
	return filepath.Join(s.RootDir, "pki")
}

// ServerOptions are the settings of the node's HTTPS API (package server).
func (s *NodeletServer) ServerOptions() server.Options {
	authn, authz := s.Authentication, s.Authorization
	return server.Options{
		NodeName: s.NodeName,
		Address:  s.Address,
		Port:     int(s.Port),
		RootDir:  s.RootDir,
		TLS: server.TLSOptions{
			CertFile:           s.TLSCertFile,
			KeyFile:            s.TLSPrivateKeyFile,
			CertDir:            s.CertificateDir(),
			RotateCertificates: s.RotateServerCertificates,
		},
		Auth: server.AuthOptions{
			ClientCAFile:      authn.X509.ClientCAFile,
			Anonymous:         *authn.Anonymous.Enabled,
			TokenWebhook:      *authn.Webhook.Enabled,
			TokenCacheTTL:     authn.Webhook.CacheTTL.Duration,
			AuthorizationMode: authz.Mode,
			AuthorizedTTL:     authz.Webhook.CacheAuthorizedTTL.Duration,
			UnauthorizedTTL:   authz.Webhook.CacheUnauthorizedTTL.Duration,
		},
		Logs: server.NodeLogsOptions{
			Enabled: *s.EnableSystemLogHandler,
			Query:   *s.EnableSystemLogQuery,
		},
	}
}

// PodCIDRs is --pod-cidr as a list; none takes the Node's.
func (s *NodeletServer) PodCIDRs() []string {
	if s.PodCIDR == "" {
		return nil
	}
	return strings.Split(s.PodCIDR, ",")
}

// NodeIPs is --node-ip as the node status reporter takes it: none lets it
// find the host's.
func (f *Flags) NodeIPs() []string {
	if f.NodeIP == "" {
		return nil
	}
	return []string{f.NodeIP}
}

// RegistrationLabels are the labels the Node is created with beyond
// nodelet's own: --node-labels and the topology labels.
func (f *Flags) RegistrationLabels() map[string]string {
	labels := f.TopologyLabels()
	for key, value := range f.NodeLabels {
		labels[key] = value
	}
	return labels
}

// TopologyLabels are --topology-zone and --topology-region as the Node's
// labels: an empty one is no label, as a zone named "" would be a
// topology domain of its own.
func (f *Flags) TopologyLabels() map[string]string {
	labels := map[string]string{}
	for key, value := range map[string]string{corev1.LabelTopologyZone: f.TopologyZone, corev1.LabelTopologyRegion: f.TopologyRegion} {
		if value != "" {
			labels[key] = value
		}
	}
	return labels
}

// ParseCapacity is --capacity: cpu, memory and ephemeral-storage, each a
// positive quantity.
func ParseCapacity(pairs map[string]string) (corev1.ResourceList, error) {
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

// RuntimeSocketPath is the unix socket of a CRI endpoint ("unix:///path",
// or a bare absolute path): the one whose listener's process the runtime's
// pod is found by (--cgroup-root-in-runtime-pod). Pure.
func RuntimeSocketPath(endpoint string) (string, error) {
	socket := endpoint
	if rest, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		socket = rest
	} else if strings.Contains(endpoint, "://") {
		return "", fmt.Errorf("the container runtime endpoint %q is not a unix socket, whose listener's process could be known", endpoint)
	}
	if !strings.HasPrefix(socket, "/") {
		return "", fmt.Errorf("the container runtime endpoint %q is not an absolute unix socket path", endpoint)
	}
	return socket, nil
}
