package options

// Tests of reading the settings: defaults, the configuration file, the
// flags given over it, and what is refused. Plain files in t.TempDir(), no
// cluster.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

const configHeader = "apiVersion: config.nodelet.dev/v1alpha1\nkind: NodeletConfiguration\n"

func writeConfig(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodelet.yaml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseFlagsWinOverTheConfigFile(t *testing.T) {
	config := writeConfig(t, configHeader+"maxPods: 42\nrelistPeriod: 2s\nrootDir: /from/file\nclusterDomain: file.local\n"+
		"authentication:\n  anonymous:\n    enabled: true\n")
	opts, err := Parse([]string{"--config", config, "--root-dir=/from/flag", "--anonymous-auth=false", "--cluster-dns=10.96.0.10,10.96.0.11"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if anonymous := *opts.Authentication.Anonymous.Enabled; opts.RootDir != "/from/flag" || anonymous {
		t.Errorf("RootDir %q, authentication.anonymous.enabled %v; want the flags' /from/flag and false", opts.RootDir, anonymous)
	}
	if opts.MaxPods != 42 || opts.RelistPeriod.Duration != 2*time.Second || opts.ClusterDomain != "file.local" {
		t.Errorf("file settings not applied: maxPods %d, relistPeriod %s, clusterDomain %q", opts.MaxPods, opts.RelistPeriod.Duration, opts.ClusterDomain)
	}
	if diff := cmp.Diff([]string{"10.96.0.10", "10.96.0.11"}, opts.ClusterDNS); diff != "" {
		t.Errorf("ClusterDNS (-want +got):\n%s", diff)
	}
	if opts.ConcurrentReconciles != configv1alpha1.DefaultMaxPods {
		t.Errorf("ConcurrentReconciles = %d, want the default", opts.ConcurrentReconciles)
	}
}

// An empty resolvConf, in the file or on the command line, gives pods
// none of the host's resolvers, as the kubelet's; left out, it is the
// host's /etc/resolv.conf.
func TestEmptyResolvConfIsKeptApartFromAnUnsetOne(t *testing.T) {
	cases := map[string]struct {
		file string
		args []string
		want string
	}{
		"unset":                     {want: "/etc/resolv.conf"},
		"empty in the file":         {file: "resolvConf: \"\"\n", want: ""},
		"empty on the command line": {file: "resolvConf: /from/file\n", args: []string{"--resolv-conf="}, want: ""},
		"set in the file":           {file: "resolvConf: /from/file\n", want: "/from/file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--config", writeConfig(t, configHeader+tc.file)}, tc.args...)
			opts, err := Parse(args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if *opts.ResolvConf != tc.want {
				t.Errorf("ResolvConf = %q, want %q", *opts.ResolvConf, tc.want)
			}
		})
	}
}

func TestEffectiveConfigurationIsTheFileDefaultedAndTheFlags(t *testing.T) {
	file := configHeader + "maxPods: 42\nnetworkMode: agent\nallowedUnsafeSysctls: [net.core.somaxconn]\n" +
		"authorization:\n  webhook:\n    cacheAuthorizedTTL: 1m\npprofBindAddress: 127.0.0.1:6060\n"
	opts, err := Parse([]string{"--config", writeConfig(t, file), "--max-pods=7", "--cluster-domain=flag.local", "--health-probe-bind-address=0", "--pprof-bind-address=127.0.0.1:6061"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := &opts.NodeletConfiguration

	want, err := configv1alpha1.Decode([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	configv1alpha1.SetDefaults(want)
	want.MaxPods = 7
	want.ClusterDomain = "flag.local"
	want.HealthzBindAddress, want.HealthzPort = "", ptr.To[int32](0)
	want.PprofBindAddress = "127.0.0.1:6061"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effective configuration (-want +got):\n%s", diff)
	}
}

// Binding the flags changes nothing: with none given, the configuration
// is SetDefaults' alone.
func TestParseWithNoFlagsIsTheConfigurationDefaults(t *testing.T) {
	opts, err := Parse([]string{"--node-name=n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &configv1alpha1.NodeletConfiguration{}
	configv1alpha1.SetDefaults(want)
	if diff := cmp.Diff(want, &opts.NodeletConfiguration); diff != "" {
		t.Errorf("defaults through the flags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(newFlags("n"), opts.Flags); diff != "" {
		t.Errorf("flags alone (-want +got):\n%s", diff)
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	unknown := writeConfig(t, configHeader+"noSuchSetting: 1\n")
	unversioned := writeConfig(t, "maxPods: 42\n")
	cases := map[string][]string{
		"an unknown setting in the config file": {"--config", unknown},
		"an unversioned config file":            {"--config", unversioned},
		"a missing config file":                 {"--config", unknown + ".missing"},
		"no concurrency":                        {"--concurrent-reconciles=0"},
		"a negative relist period":              {"--relist-period=-1s"},
		"an unknown flag":                       {"--no-such-flag"},
		"no port":                               {"--port=0"},
		"a certificate without its key":         {"--tls-cert-file=/x.crt"},
		"an unknown authorization mode":         {"--authorization-mode=RBAC"},
		"a log size that is not a quantity":     {"--container-log-max-size=big"},
		"a single log file":                     {"--container-log-max-files=1"},
		"a cluster DNS that is not an IP":       {"--cluster-dns=dns.local"},
		"a health address without a port":       {"--health-probe-bind-address=127.0.0.1"},
		"a cluster DNS list with a name":        {"--cluster-dns=10.96.0.10,kube-dns"},
		"an unknown node identity":              {"--node-identity=token"},
		"a bootstrap kubeconfig, no kubeconfig": {"--bootstrap-kubeconfig=/b"},
		"a bootstrap kubeconfig and csr":        {"--bootstrap-kubeconfig=/b", "--kubeconfig=/k", "--node-identity=csr"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(args, nil); err == nil {
				t.Errorf("Parse(%v) succeeded, want an error", args)
			}
		})
	}
}

func TestParseReservationsAndImageGC(t *testing.T) {
	config := writeConfig(t, configHeader+"systemReserved: {cpu: 100m}\nevictionHard: {memory.available: 1Gi}\n")
	opts, err := Parse([]string{"--config", config,
		"--kube-reserved=cpu=200m,memory=500Mi", "--eviction-hard=memory.available<200Mi,nodefs.available<5%",
		"--image-gc-high-threshold=1", "--image-gc-low-threshold=0", "--image-minimum-gc-age=0s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "100m"}, opts.SystemReserved); diff != "" {
		t.Errorf("SystemReserved from the file (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "200m", "memory": "500Mi"}, opts.KubeReserved); diff != "" {
		t.Errorf("KubeReserved from the flag (-want +got):\n%s", diff)
	}
	// The flag replaces the file's thresholds whole.
	if diff := cmp.Diff(map[string]string{"memory.available": "200Mi", "nodefs.available": "5%"}, opts.EvictionHard); diff != "" {
		t.Errorf("EvictionHard (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"pods"}, opts.EnforceNodeAllocatable); diff != "" {
		t.Errorf("EnforceNodeAllocatable default (-want +got):\n%s", diff)
	}
	policy := opts.ImageGCPolicy()
	if policy.HighThresholdPercent != 1 || policy.LowThresholdPercent != 0 || policy.MinAge != 0 {
		t.Errorf("image GC policy %+v, want the flags' 1%%, 0%%, 0s", policy)
	}
	allocatable, err := opts.AllocatableConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cpu := allocatable.KubeReserved["cpu"]; cpu.MilliValue() != 200 || len(allocatable.HardEvictionThresholds) != 3 {
		t.Errorf("allocatable config %+v, want kube-reserved cpu 200m and three hard thresholds (allocatable memory's included)", allocatable)
	}

	defaults, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	high, low := *defaults.ImageGCHighThresholdPercent, *defaults.ImageGCLowThresholdPercent
	if len(defaults.EvictionHard) != 5 || high != 85 || low != 80 || defaults.ImageMinimumGCAge.Duration != 2*time.Minute {
		t.Errorf("defaults: eviction %v, image GC %d%%/%d%%/%s; want the kubelet's", defaults.EvictionHard, high, low, defaults.ImageMinimumGCAge.Duration)
	}
}

func TestParseRefusesBadReservationsAndImageGC(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--system-reserved=nvidia.com/gpu=1", `cannot reserve "nvidia.com/gpu" resource`},
		{"--kube-reserved=memory=-1Gi", `resource quantity for "memory" cannot be negative`},
		{"--eviction-hard=memory.available<0", "eviction threshold memory.available must be positive"},
		{"--eviction-hard=memory.available", "malformed pair"},
		{"--enforce-node-allocatable=pods,none", `may not contain additional enforcements when "none" is specified`},
		{"--enforce-node-allocatable=pods,system-reserved", `systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" included in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{"--image-gc-low-threshold=90", "imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85"},
		{"--image-gc-high-threshold=101", "must be between 0 and 100, inclusive"},
		{"--image-maximum-gc-age=1m", "imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s"},
		{"--eviction-soft=memory.available<1Gi", "grace period must be specified for the soft eviction threshold memory.available"},
		{"--eviction-soft-grace-period=memory.available=soon", `evictionSoftGracePeriod: Invalid value`},
		{"--eviction-minimum-reclaim=disk.available=1Gi", "unsupported eviction signal disk.available"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			_, err := Parse([]string{tc.flag}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The eviction manager's settings are the file's, as the kubelet's, and
// their flags win over it.
func TestParseEvictionSettings(t *testing.T) {
	config := writeConfig(t, configHeader+"evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 1m}\n"+
		"evictionPressureTransitionPeriod: 1m\nevictionMaxPodGracePeriod: 30\n")
	opts, err := Parse([]string{"--node-name=n", "--config", config,
		"--eviction-minimum-reclaim=memory.available=100Mi", "--eviction-max-pod-grace-period=20"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evictions, err := opts.EvictionConfig()
	if err != nil {
		t.Fatal(err)
	}
	if evictions.PressureTransitionPeriod != time.Minute || evictions.MaxPodGracePeriodSeconds != 20 {
		t.Errorf("eviction config %+v, want the file's 1m transition and the flag's 20s grace period", evictions)
	}
	var soft []string
	for _, threshold := range evictions.Thresholds {
		if !threshold.Hard() {
			soft = append(soft, fmt.Sprintf("%s %s reclaim %v", threshold.Signal, threshold.GracePeriod, threshold.MinReclaim != nil))
		}
	}
	if diff := cmp.Diff([]string{"memory.available 1m0s reclaim true"}, soft); diff != "" {
		t.Errorf("soft thresholds (-want +got):\n%s", diff)
	}

	defaults, err := Parse([]string{"--node-name=n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := defaults.EvictionPressureTransitionPeriod.Duration; got != 5*time.Minute {
		t.Errorf("default pressure transition period %v, want the kubelet's 5m", got)
	}
}

// --volume-stats-agg-period=0 turns volume stats off, as a negative
// period does in the file, where a zero is left out.
func TestVolumeStatsPeriod(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"--volume-stats-agg-period=30s"}, 30 * time.Second},
		{[]string{"--volume-stats-agg-period=0"}, -1},
		{[]string{"--config", writeConfig(t, configHeader+"volumeStatsAggPeriod: 2m\n")}, 2 * time.Minute},
		{[]string{"--config", writeConfig(t, configHeader+"volumeStatsAggPeriod: 0s\n")}, time.Minute},
		{[]string{"--config", writeConfig(t, configHeader+"volumeStatsAggPeriod: -1s\n")}, -1},
	} {
		opts, err := Parse(append(c.args, "--node-name=n"), nil)
		if err != nil {
			t.Errorf("Parse(%v): %v", c.args, err)
			continue
		}
		if got := opts.VolumeStatsPeriod(); got != c.want {
			t.Errorf("Parse(%v): volume stats period %v, want %v", c.args, got, c.want)
		}
	}
}
