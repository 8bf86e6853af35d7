package v1alpha1

// Table tests of defaulting, validation and decoding: plain values, no
// files, no cluster.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSetDefaults(t *testing.T) {
	tests := map[string]struct {
		config NodeletConfiguration
		want   NodeletConfiguration
	}{
		"an empty file takes every default": {
			config: NodeletConfiguration{},
			want:   defaulted(),
		},
		"set fields are kept, false and zero pointers included": {
			config: NodeletConfiguration{
				MaxPods:              42,
				RelistPeriod:         metav1.Duration{Duration: 2 * time.Second},
				NetworkMode:          NetworkModeAgent,
				KubeAPIQPS:           ptr.To[int32](0),
				ContainerLogMaxFiles: ptr.To[int32](3),
				HealthzPort:          ptr.To[int32](0),
				ClusterDNS:           []string{"10.96.0.10"},
				// An empty map and list are given, not left out.
				EvictionHard:               map[string]string{},
				EnforceNodeAllocatable:     []string{},
				ImageGCLowThresholdPercent: ptr.To[int32](0),
				TimerSlack:                 &metav1.Duration{},
				GCPercent:                  ptr.To[int32](0),
				Authentication: NodeletAuthentication{
					Webhook:   NodeletWebhookAuthentication{Enabled: ptr.To(false)},
					Anonymous: NodeletAnonymousAuthentication{Enabled: ptr.To(true)},
				},
				Authorization: NodeletAuthorization{Mode: AuthorizationModeAlwaysAllow},
			},
			want: func() NodeletConfiguration {
				c := defaulted()
				c.MaxPods = 42
				c.RelistPeriod.Duration = 2 * time.Second
				c.NetworkMode = NetworkModeAgent
				c.KubeAPIQPS = ptr.To[int32](0)
				c.ContainerLogMaxFiles = ptr.To[int32](3)
				c.HealthzPort = ptr.To[int32](0)
				c.ClusterDNS = []string{"10.96.0.10"}
				c.EvictionHard = map[string]string{}
				c.EnforceNodeAllocatable = []string{}
				c.ImageGCLowThresholdPercent = ptr.To[int32](0)
				c.TimerSlack = &metav1.Duration{}
				c.GCPercent = ptr.To[int32](0)
				c.Authentication.Webhook.Enabled = ptr.To(false)
				c.Authentication.Anonymous.Enabled = ptr.To(true)
				c.Authorization.Mode = AuthorizationModeAlwaysAllow
				return c
			}(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.config
			SetDefaults(&got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

// defaulted is the configuration an empty file makes, written out field by
// field, as docs/configuration.md lists it.
func defaulted() NodeletConfiguration {
	return NodeletConfiguration{
		TypeMeta:                  metav1.TypeMeta{APIVersion: "config.nodelet.dev/v1alpha1", Kind: "NodeletConfiguration"},
		ContainerRuntimeEndpoint:  "unix:///run/containerd/containerd.sock",
		RuntimeRequestTimeout:     metav1.Duration{Duration: 2 * time.Minute},
		FileCheckFrequency:        metav1.Duration{Duration: 20 * time.Second},
		HTTPCheckFrequency:        metav1.Duration{Duration: 20 * time.Second},
		KubeAPIQPS:                ptr.To[int32](50),
		KubeAPIBurst:              100,
		RootDir:                   "/var/lib/nodelet",
		PodLogsDir:                "/var/log/pods",
		ContainerLogsDir:          "/var/log/containers",
		CgroupRoot:                "/nodelet",
		CgroupDriver:              "cgroupfs",
		PodPidsLimit:              ptr.To[int64](-1),
		ResolvConf:                ptr.To("/etc/resolv.conf"),
		NetworkMode:               "runtime",
		CNIConfDir:                "/etc/cni/net.d",
		CNIBinDir:                 "/opt/cni/bin",
		CNINetworkName:            "nodelet",
		CNIBridge:                 "nodelet0",
		CNICheckPeriod:            metav1.Duration{Duration: time.Minute},
		RelistPeriod:              metav1.Duration{Duration: time.Second},
		ConcurrentReconciles:      110,
		MaxPods:                   110,
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 10 * time.Second},
		SlowPodStartThreshold:     &metav1.Duration{Duration: 30 * time.Second},
		EvictionHard: map[string]string{
			"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
			"imagefs.available": "15%", "imagefs.inodesFree": "5%",
		},
		EvictionPressureTransitionPeriod: metav1.Duration{Duration: 5 * time.Minute},
		EnforceNodeAllocatable:           []string{"pods"},
		ImageGCHighThresholdPercent:      ptr.To[int32](85),
		ImageGCLowThresholdPercent:       ptr.To[int32](80),
		ImageMinimumGCAge:                metav1.Duration{Duration: 2 * time.Minute},
		VolumeStatsAggPeriod:             metav1.Duration{Duration: time.Minute},
		Address:                          "0.0.0.0",
		Port:                             10250,
		EnableSystemLogHandler:           ptr.To(true),
		EnableSystemLogQuery:             ptr.To(false),
		Authentication: NodeletAuthentication{
			Webhook:   NodeletWebhookAuthentication{Enabled: ptr.To(true), CacheTTL: metav1.Duration{Duration: 2 * time.Minute}},
			Anonymous: NodeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization: NodeletAuthorization{
			Mode: "Webhook",
			Webhook: NodeletWebhookAuthorization{
				CacheAuthorizedTTL:   metav1.Duration{Duration: 5 * time.Minute},
				CacheUnauthorizedTTL: metav1.Duration{Duration: 30 * time.Second},
			},
		},
		ContainerLogMaxSize:         "10Mi",
		ContainerLogMaxFiles:        ptr.To[int32](5),
		ContainerLogMonitorInterval: metav1.Duration{Duration: 10 * time.Second},
		MetricsBindAddress:          "127.0.0.1:10290",
		HealthzBindAddress:          "127.0.0.1",
		HealthzPort:                 ptr.To[int32](10291),
		TimerSlack:                  &metav1.Duration{Duration: 10 * time.Millisecond},
		GCPercent:                   ptr.To[int32](200),
	}
}
