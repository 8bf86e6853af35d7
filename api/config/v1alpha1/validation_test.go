package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		mutate func(*NodeletConfiguration)
		// wantFields are the paths of the errors, in order.
		wantFields []string
	}{
		"the defaults are valid": {mutate: func(*NodeletConfiguration) {}},
		"agent network mode":     {mutate: func(c *NodeletConfiguration) { c.NetworkMode = NetworkModeAgent }},
		"health probes off":      {mutate: func(c *NodeletConfiguration) { c.HealthzPort = ptr.To[int32](0); c.HealthzBindAddress = "" }},
		"cluster DNS, sysctls and a dual stack CIDR": {mutate: func(c *NodeletConfiguration) {
			c.ClusterDNS = []string{"10.96.0.10", "fd00::10"}
			c.AllowedUnsafeSysctls = []string{"net.core.somaxconn", "kernel.msg*"}
			c.PodCIDR = "10.244.0.0/24,fd00:10:244::/64"
		}},
		"a certificate with its key": {mutate: func(c *NodeletConfiguration) { c.TLSCertFile, c.TLSPrivateKeyFile = "/x.crt", "/x.key" }},
		"log rotation off":           {mutate: func(c *NodeletConfiguration) { c.ContainerLogMaxSize = "0" }},
		"the systemd cgroup driver":  {mutate: func(c *NodeletConfiguration) { c.CgroupDriver = CgroupDriverSystemd }},

		"an unknown cgroup driver":          {mutate: func(c *NodeletConfiguration) { c.CgroupDriver = "none" }, wantFields: []string{"cgroupDriver"}},
		"an unknown network mode":           {mutate: func(c *NodeletConfiguration) { c.NetworkMode = "host" }, wantFields: []string{"networkMode"}},
		"no concurrency":                    {mutate: func(c *NodeletConfiguration) { c.ConcurrentReconciles = 0 }, wantFields: []string{"concurrentReconciles"}},
		"negative parallel sandbox starts":  {mutate: func(c *NodeletConfiguration) { c.ParallelSandboxStarts = -1 }, wantFields: []string{"parallelSandboxStarts"}},
		"a negative relist period":          {mutate: func(c *NodeletConfiguration) { c.RelistPeriod.Duration = -1 }, wantFields: []string{"relistPeriod"}},
		"no pods":                           {mutate: func(c *NodeletConfiguration) { c.MaxPods = 0 }, wantFields: []string{"maxPods"}},
		"no CNI check period":               {mutate: func(c *NodeletConfiguration) { c.CNICheckPeriod.Duration = 0 }, wantFields: []string{"cniCheckPeriod"}},
		"a port out of range":               {mutate: func(c *NodeletConfiguration) { c.Port = 70000 }, wantFields: []string{"port"}},
		"an address that is not an IP":      {mutate: func(c *NodeletConfiguration) { c.Address = "localhost" }, wantFields: []string{"address"}},
		"a certificate without its key":     {mutate: func(c *NodeletConfiguration) { c.TLSCertFile = "/x.crt" }, wantFields: []string{"tlsPrivateKeyFile"}},
		"an unknown authorization mode":     {mutate: func(c *NodeletConfiguration) { c.Authorization.Mode = "RBAC" }, wantFields: []string{"authorization.mode"}},
		"a zero token cache":                {mutate: func(c *NodeletConfiguration) { c.Authentication.Webhook.CacheTTL.Duration = 0 }, wantFields: []string{"authentication.webhook.cacheTTL"}},
		"a zero access cache":               {mutate: func(c *NodeletConfiguration) { c.Authorization.Webhook.CacheUnauthorizedTTL.Duration = 0 }, wantFields: []string{"authorization.webhook.cacheUnauthorizedTTL"}},
		"a log size that is not a quantity": {mutate: func(c *NodeletConfiguration) { c.ContainerLogMaxSize = "big" }, wantFields: []string{"containerLogMaxSize"}},
		"a single log file":                 {mutate: func(c *NodeletConfiguration) { c.ContainerLogMaxFiles = ptr.To[int32](1) }, wantFields: []string{"containerLogMaxFiles"}},
		"a negative QPS":                    {mutate: func(c *NodeletConfiguration) { c.KubeAPIQPS = ptr.To[int32](-1) }, wantFields: []string{"kubeAPIQPS"}},
		"a cluster DNS that is not an IP":   {mutate: func(c *NodeletConfiguration) { c.ClusterDNS = []string{"10.96.0.10", "dns.local"} }, wantFields: []string{"clusterDNS[1]"}},
		"an empty sysctl":                   {mutate: func(c *NodeletConfiguration) { c.AllowedUnsafeSysctls = []string{"*"} }, wantFields: []string{"allowedUnsafeSysctls[0]"}},
		"a pod CIDR that is not one":        {mutate: func(c *NodeletConfiguration) { c.PodCIDR = "10.244.0.0" }, wantFields: []string{"podCIDR"}},
		"a health port out of range":        {mutate: func(c *NodeletConfiguration) { c.HealthzPort = ptr.To[int32](-1) }, wantFields: []string{"healthzPort"}},
		"reservations, thresholds and enforcement": {mutate: func(c *NodeletConfiguration) {
			c.SystemReserved = map[string]string{"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi", "pid": "1000"}
			c.KubeReserved = map[string]string{"memory": "256Mi"}
			c.EvictionHard = map[string]string{"memory.available": "5%", "nodefs.available": "0%"}
			c.EnforceNodeAllocatable = []string{"pods", "system-reserved", "kube-reserved"}
			c.SystemReservedCgroup, c.KubeReservedCgroup = "/system.slice", "/kube.slice"
		}},
		"no enforcement": {mutate: func(c *NodeletConfiguration) { c.EnforceNodeAllocatable = []string{"none"} }},
		"graceful shutdown with a critical part": {mutate: func(c *NodeletConfiguration) {
			c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration = 30*time.Second, 10*time.Second
		}},
		"graceful shutdown by priority": {mutate: func(c *NodeletConfiguration) {
			c.ShutdownGracePeriodByPodPriority = []ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: 10}, {Priority: 2000000000, ShutdownGracePeriodSeconds: 5}}
		}},
		"a critical part longer than the shutdown": {mutate: func(c *NodeletConfiguration) {
			c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration = 10*time.Second, 20*time.Second
		}, wantFields: []string{"shutdownGracePeriodCriticalPods"}},
		"a shutdown shorter than a second": {mutate: func(c *NodeletConfiguration) {
			c.ShutdownGracePeriod.Duration = 500 * time.Millisecond
		}, wantFields: []string{"shutdownGracePeriod"}},
		"both forms of graceful shutdown": {mutate: func(c *NodeletConfiguration) {
			c.ShutdownGracePeriod.Duration = 30 * time.Second
			c.ShutdownGracePeriodByPodPriority = []ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: -1}}
		}, wantFields: []string{"shutdownGracePeriodByPodPriority", "shutdownGracePeriodByPodPriority[0].shutdownGracePeriodSeconds"}},
		"image GC that always runs": {mutate: func(c *NodeletConfiguration) {
			c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent, c.ImageMinimumGCAge.Duration = ptr.To[int32](1), ptr.To[int32](0), 0
		}},
		"soft thresholds with their grace periods and minimum reclaims": {mutate: func(c *NodeletConfiguration) {
			c.EvictionSoft = map[string]string{"memory.available": "1Gi", "nodefs.available": "15%"}
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "1m30s", "nodefs.available": "2m"}
			c.EvictionMinimumReclaim = map[string]string{"memory.available": "0Mi", "nodefs.available": "500Mi"}
		}},
		"taints to register with": {mutate: func(c *NodeletConfiguration) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Effect: corev1.TaintEffectNoExecute}}
		}},
		"timer slack and GC percent left to the kernel and the Go runtime": {mutate: func(c *NodeletConfiguration) {
			c.TimerSlack, c.GCPercent = &metav1.Duration{}, ptr.To[int32](0)
		}},
		"image GC off":        {mutate: func(c *NodeletConfiguration) { c.ImageGCHighThresholdPercent = ptr.To[int32](100) }},
		"a maximum image age": {mutate: func(c *NodeletConfiguration) { c.ImageMaximumGCAge.Duration = time.Hour }},

		"an unreservable resource":                  {mutate: func(c *NodeletConfiguration) { c.SystemReserved = map[string]string{"nvidia.com/gpu": "1"} }, wantFields: []string{"systemReserved"}},
		"a negative reservation":                    {mutate: func(c *NodeletConfiguration) { c.KubeReserved = map[string]string{"cpu": "-1"} }, wantFields: []string{"kubeReserved"}},
		"an unknown eviction signal":                {mutate: func(c *NodeletConfiguration) { c.EvictionHard = map[string]string{"disk.available": "1Gi"} }, wantFields: []string{"evictionHard"}},
		"an unknown enforcement":                    {mutate: func(c *NodeletConfiguration) { c.EnforceNodeAllocatable = []string{"pods", "node"} }, wantFields: []string{"enforceNodeAllocatable[1]"}},
		"none with another enforcement":             {mutate: func(c *NodeletConfiguration) { c.EnforceNodeAllocatable = []string{"pods", "none"} }, wantFields: []string{"enforceNodeAllocatable[1]"}},
		"a duplicated enforcement":                  {mutate: func(c *NodeletConfiguration) { c.EnforceNodeAllocatable = []string{"pods", "pods"} }, wantFields: []string{"enforceNodeAllocatable[1]"}},
		"system-reserved without its cgroup":        {mutate: func(c *NodeletConfiguration) { c.EnforceNodeAllocatable = []string{"pods", "system-reserved"} }, wantFields: []string{"systemReservedCgroup"}},
		"kube-reserved without its cgroup":          {mutate: func(c *NodeletConfiguration) { c.EnforceNodeAllocatable = []string{"kube-reserved"} }, wantFields: []string{"kubeReservedCgroup"}},
		"a relative reserved cgroup":                {mutate: func(c *NodeletConfiguration) { c.SystemReservedCgroup = "system.slice" }, wantFields: []string{"systemReservedCgroup"}},
		"a reserved cgroup out of the tree":         {mutate: func(c *NodeletConfiguration) { c.KubeReservedCgroup = "/a/../../b" }, wantFields: []string{"kubeReservedCgroup"}},
		"an image GC threshold over 100":            {mutate: func(c *NodeletConfiguration) { c.ImageGCHighThresholdPercent = ptr.To[int32](101) }, wantFields: []string{"imageGCHighThresholdPercent"}},
		"the low threshold at the high one":         {mutate: func(c *NodeletConfiguration) { c.ImageGCLowThresholdPercent = ptr.To[int32](85) }, wantFields: []string{"imageGCLowThresholdPercent"}},
		"a maximum age under the minimum":           {mutate: func(c *NodeletConfiguration) { c.ImageMaximumGCAge.Duration = time.Minute }, wantFields: []string{"imageMaximumGCAge"}},
		"a negative minimum image age":              {mutate: func(c *NodeletConfiguration) { c.ImageMinimumGCAge.Duration = -1 }, wantFields: []string{"imageMinimumGCAge"}},
		"a soft threshold without its grace period": {mutate: func(c *NodeletConfiguration) { c.EvictionSoft = map[string]string{"memory.available": "1Gi"} }, wantFields: []string{"evictionSoft"}},
		"a grace period that is no duration": {mutate: func(c *NodeletConfiguration) {
			c.EvictionSoft = map[string]string{"memory.available": "1Gi"}
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "soon"}
		}, wantFields: []string{"evictionSoftGracePeriod"}},
		"a minimum reclaim of an unknown signal": {mutate: func(c *NodeletConfiguration) { c.EvictionMinimumReclaim = map[string]string{"disk.available": "1Gi"} }, wantFields: []string{"evictionMinimumReclaim"}},
		"a taint of an unknown effect":           {mutate: func(c *NodeletConfiguration) { c.RegisterWithTaints = []corev1.Taint{{Key: "a", Effect: "NoRun"}} }, wantFields: []string{"registerWithTaints[0]"}},
		"a taint whose key is no name": {mutate: func(c *NodeletConfiguration) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "bad key", Effect: corev1.TaintEffectNoSchedule}}
		}, wantFields: []string{"registerWithTaints[0]"}},
		"two taints of one key and effect": {mutate: func(c *NodeletConfiguration) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Value: "2", Effect: corev1.TaintEffectNoSchedule}}
		}, wantFields: []string{"registerWithTaints[1]"}},
		"a sysctl of no known namespace": {mutate: func(c *NodeletConfiguration) { c.AllowedUnsafeSysctls = []string{"vm.swappiness"} }, wantFields: []string{"allowedUnsafeSysctls[0]"}},
		"a negative timer slack":         {mutate: func(c *NodeletConfiguration) { c.TimerSlack = &metav1.Duration{Duration: -time.Millisecond} }, wantFields: []string{"timerSlack"}},
		"a negative GC percent":          {mutate: func(c *NodeletConfiguration) { c.GCPercent = ptr.To[int32](-1) }, wantFields: []string{"gcPercent"}},
		"static pods from a folder and a URL with headers": {mutate: func(c *NodeletConfiguration) {
			c.StaticPodPath, c.StaticPodURL = "/etc/kubernetes/manifests", "https://config.example/pods"
			c.StaticPodURLHeader = map[string][]string{"Authorization": {"Bearer x"}, "X-Node": {"a", "b"}}
		}},
		"a static pod URL that is no http URL": {mutate: func(c *NodeletConfiguration) { c.StaticPodURL = "file:///etc/pods" }, wantFields: []string{"staticPodURL"}},
		"a header name with a colon":           {mutate: func(c *NodeletConfiguration) { c.StaticPodURLHeader = map[string][]string{"a:b": {"c"}} }, wantFields: []string{"staticPodURLHeader[a:b]"}},
		"a zero file check frequency":          {mutate: func(c *NodeletConfiguration) { c.FileCheckFrequency.Duration = 0 }, wantFields: []string{"fileCheckFrequency"}},
		"every bad field is named": {
			mutate:     func(c *NodeletConfiguration) { c.MaxPods, c.Port, c.RelistPeriod.Duration = 0, 0, 0 },
			wantFields: []string{"relistPeriod", "maxPods", "port"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := defaulted()
			tc.mutate(&c)
			var got []string
			for _, err := range Validate(&c) {
				got = append(got, err.Field)
			}
			if diff := cmp.Diff(tc.wantFields, got); diff != "" {
				t.Errorf("Validate: error fields (-want +got):\n%s\nerrors: %v", diff, Validate(&c))
			}
		})
	}
}
