package main

// Tests of option parsing, the configuration file and the root dir lock:
// plain files in t.TempDir(), no cluster. The start-up test runs this test
// binary as nodelet (TestMain calls main when asked to).

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

// runAsNodelet, set in the environment, makes the test binary run main
// with the arguments after "--".
const runAsNodelet = "NODELET_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsNodelet) == "1" {
		for i, arg := range os.Args {
			if arg == "--" {
				os.Args = append([]string{"nodelet"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const configHeader = "apiVersion: config.nodelet.dev/v1alpha1\nkind: NodeletConfiguration\n"

func writeConfig(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodelet.yaml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseOptionsFlagsWinOverTheConfigFile(t *testing.T) {
	config := writeConfig(t, configHeader+"maxPods: 42\nrelistPeriod: 2s\nrootDir: /from/file\nclusterDomain: file.local\n"+
		"authentication:\n  anonymous:\n    enabled: true\n")
	opts, err := parseOptions([]string{"--config", config, "--root-dir=/from/flag", "--anonymous-auth=false", "--cluster-dns=10.96.0.10,10.96.0.11"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.RootDir != "/from/flag" || opts.AnonymousAuth {
		t.Errorf("RootDir %q, AnonymousAuth %v; want the flags' /from/flag and false", opts.RootDir, opts.AnonymousAuth)
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
			opts, err := parseOptions(args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if opts.ResolvConf != tc.want {
				t.Errorf("ResolvConf = %q, want %q", opts.ResolvConf, tc.want)
			}
		})
	}
}

func TestEffectiveConfigurationIsTheFileDefaultedAndTheFlags(t *testing.T) {
	file := configHeader + "maxPods: 42\nnetworkMode: agent\nallowedUnsafeSysctls: [net.core.somaxconn]\n" +
		"authorization:\n  webhook:\n    cacheAuthorizedTTL: 1m\npprofBindAddress: 127.0.0.1:6060\n"
	opts, err := parseOptions([]string{"--config", writeConfig(t, file), "--max-pods=7", "--cluster-domain=flag.local", "--health-probe-bind-address=0", "--pprof-bind-address=127.0.0.1:6061"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := opts.configuration()
	if err != nil {
		t.Fatal(err)
	}

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

func TestDefaultOptionsAreTheConfigurationDefaults(t *testing.T) {
	opts := defaultOptions()
	got, err := opts.configuration()
	if err != nil {
		t.Fatal(err)
	}
	want := &configv1alpha1.NodeletConfiguration{}
	configv1alpha1.SetDefaults(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults through options (-want +got):\n%s", diff)
	}
}

func TestParseOptionsRejectsBadInput(t *testing.T) {
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
			if _, err := parseOptions(args, nil); err == nil {
				t.Errorf("parseOptions(%v) succeeded, want an error", args)
			}
		})
	}
}

// TestBadConfigFileStopsNodeletWithOneLine runs nodelet's main with bad
// configuration files: it must exit with code 2 and one line naming the
// problem, before it reaches for a cluster or a runtime.
func TestBadConfigFileStopsNodeletWithOneLine(t *testing.T) {
	tests := map[string]struct {
		file     string
		wantLine string // after "nodelet: config file <path>: "
	}{
		"an unknown field":   {configHeader + "maxPodz: 42\n", `unknown field "maxPodz"`},
		"a wrong type":       {configHeader + "maxPods: many\n", `field "maxPods": got string, want int32`},
		"no apiVersion":      {"kind: NodeletConfiguration\nmaxPods: 42\n", `missing apiVersion, want "config.nodelet.dev/v1alpha1"`},
		"the kubelet's kind": {"apiVersion: config.nodelet.dev/v1alpha1\nkind: KubeletConfiguration\n", `kind "KubeletConfiguration" is not supported, want "NodeletConfiguration"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.file)
			cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "--config", path, "--root-dir", t.TempDir())
			cmd.Env = append(os.Environ(), runAsNodelet+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
				t.Fatalf("nodelet exited with %v, want exit code 2; stderr:\n%s", err, stderr.String())
			}
			want := "nodelet: config file " + path + ": " + tc.wantLine + "\n"
			if stderr.String() != want {
				t.Errorf("stderr:\n%q\nwant exactly:\n%q", stderr.String(), want)
			}
		})
	}
}

func TestRootDirLockKeepsASecondNodeletOut(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockRootDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockRootDir(dir); err == nil || !strings.Contains(err.Error(), "another nodelet") {
		t.Fatalf("second lock: err = %v, want another nodelet holding it", err)
	}
	unlock()
	unlockAgain, err := lockRootDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlockAgain()
}

func TestParseOptionsReservationsAndImageGC(t *testing.T) {
	config := writeConfig(t, configHeader+"systemReserved: {cpu: 100m}\nevictionHard: {memory.available: 1Gi}\n")
	opts, err := parseOptions([]string{"--config", config,
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
	policy := opts.imageGCPolicy()
	if policy.HighThresholdPercent != 1 || policy.LowThresholdPercent != 0 || policy.MinAge != 0 {
		t.Errorf("image GC policy %+v, want the flags' 1%%, 0%%, 0s", policy)
	}
	allocatable, err := opts.allocatableConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cpu := allocatable.KubeReserved["cpu"]; cpu.MilliValue() != 200 || len(allocatable.HardEvictionThresholds) != 3 {
		t.Errorf("allocatable config %+v, want kube-reserved cpu 200m and three hard thresholds (allocatable memory's included)", allocatable)
	}

	defaults, err := parseOptions(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(defaults.EvictionHard) != 5 || defaults.ImageGCHighThresholdPercent != 85 || defaults.ImageGCLowThresholdPercent != 80 || defaults.ImageMinimumGCAge.Duration != 2*time.Minute {
		t.Errorf("defaults: eviction %v, image GC %d%%/%d%%/%s; want the kubelet's", defaults.EvictionHard, defaults.ImageGCHighThresholdPercent, defaults.ImageGCLowThresholdPercent, defaults.ImageMinimumGCAge.Duration)
	}
}

func TestParseOptionsRefusesBadReservationsAndImageGC(t *testing.T) {
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
	} {
		t.Run(tc.flag, func(t *testing.T) {
			_, err := parseOptions([]string{tc.flag}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
