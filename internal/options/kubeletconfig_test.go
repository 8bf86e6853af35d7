package options

// Tests of reading the kubelet's KubeletConfiguration and its drop-ins:
// plain files in a temporary folder, Parse over them.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

const kubeletHeader = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func TestEveryKubeletFieldIsCarriedOrRefused(t *testing.T) {
	carried := carriedKubeletFields()
	upstream := map[string]bool{}
	for _, leaf := range leaves(reflect.ValueOf(&kubeletconfigv1beta1.KubeletConfiguration{}).Elem(), "") {
		upstream[leaf.path] = true
		_, mapped := mappedKubeletFields[leaf.path]
		_, refused := unsupportedKubeletFields[leaf.path]
		switch {
		case carried[leaf.path] && refused:
			t.Errorf("%s is carried now (NodeletConfiguration has it): take it out of unsupportedKubeletFields", leaf.path)
		case carried[leaf.path] && mapped:
			t.Errorf("%s is carried by name and in mappedKubeletFields", leaf.path)
		case !carried[leaf.path] && !mapped && !refused:
			t.Errorf("the kubelet's %s is neither carried nor in unsupportedKubeletFields: map it or list its default", leaf.path)
		}
	}
	for path := range unsupportedKubeletFields {
		if !upstream[path] {
			t.Errorf("unsupportedKubeletFields has %s, which the kubelet's file has not", path)
		}
	}
	for path := range mappedKubeletFields {
		if !upstream[path] {
			t.Errorf("mappedKubeletFields has %s, which the kubelet's file has not", path)
		}
	}
	// The fields kubeadm writes, and the ones whose names are the same.
	for _, path := range []string{"clusterDNS", "authentication.x509.clientCAFile", "healthzPort", "containerRuntimeEndpoint", "evictionHard", "resolvConf"} {
		if !carried[path] {
			t.Errorf("%s is not carried by name", path)
		}
	}
}

// The accepted values of the table are the kubelet's defaults: a file
// setting each to it is taken.
func TestKubeletDefaultsOfUnsupportedFieldsAreAccepted(t *testing.T) {
	for _, path := range sortedUnsupported() {
		field := unsupportedKubeletFields[path]
		if field.accepted == nil {
			continue
		}
		doc := map[string]any{"apiVersion": kubeletAPIVersion, "kind": kubeletKind}
		setPath(doc, path, field.accepted)
		if _, err := decodeKubeletConfig(mustJSON(t, doc)); err != nil {
			t.Errorf("%s at the kubelet's default: %v", path, err)
		}
	}
}

func TestKubeadmCommandLine(t *testing.T) {
	// The file kubeadm v1.36.3 writes (hack/tools/cmd/kubeadm-kubelet-config),
	// with the resolvConf it adds on a host running systemd-resolved.
	data, err := os.ReadFile("testdata/kubeadm-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "resolvConf: /run/systemd/resolve/resolv.conf\n"...)
	// kubeadm's systemd drop-in: the bootstrap and node kubeconfigs and
	// its config file, then kubeadm-flags.env (which v1.36 leaves empty
	// but for --hostname-override, when the node's name is not the
	// host's) and the node's extra arguments.
	args := func(config string) []string {
		return []string{
			"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
			"--kubeconfig=/etc/kubernetes/kubelet.conf",
			"--config=" + config,
			"--hostname-override=Worker-1",
			"--node-ip=10.0.0.5",
		}
	}
	s, err := Parse(args(writeConfig(t, string(data))), nil)
	if err != nil {
		t.Fatalf("kubeadm's command line: %v", err)
	}
	for name, c := range map[string]struct{ got, want any }{
		"node name":                  {s.NodeName, "worker-1"},
		"hostname":                   {s.HostnameOverride, "Worker-1"},
		"node IP":                    {s.NodeIP, "10.0.0.5"},
		"kubeconfig":                 {s.Kubeconfig, "/etc/kubernetes/kubelet.conf"},
		"bootstrap kubeconfig":       {s.BootstrapKubeconfig, "/etc/kubernetes/bootstrap-kubelet.conf"},
		"root dir":                   {s.RootDir, "/var/lib/kubelet"},
		"cert dir (<rootDir>/pki)":   {s.CertDir, ""},
		"healthz":                    {s.HealthzBindAddress + ":" + strconv.Itoa(int(*s.HealthzPort)), "127.0.0.1:10248"},
		"port":                       {s.Port, int32(10250)},
		"cgroup driver":              {s.CgroupDriver, "systemd"},
		"cgroup root":                {s.CgroupRoot, "/"},
		"cluster DNS":                {s.ClusterDNS, []string{"10.96.0.10"}},
		"cluster domain":             {s.ClusterDomain, "cluster.local"},
		"resolv.conf":                {*s.ResolvConf, "/run/systemd/resolve/resolv.conf"},
		"runtime":                    {s.ContainerRuntimeEndpoint, "unix:///var/run/containerd/containerd.sock"},
		"client CA":                  {s.Authentication.X509.ClientCAFile, "/etc/kubernetes/pki/ca.crt"},
		"anonymous":                  {*s.Authentication.Anonymous.Enabled, false},
		"token webhook":              {*s.Authentication.Webhook.Enabled, true},
		"token webhook cache (0s)":   {s.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute},
		"authorization":              {s.Authorization.Mode, "Webhook"},
		"runtime request timeout":    {s.RuntimeRequestTimeout.Duration, 2 * time.Minute},
		"node status update (0s)":    {s.NodeStatusUpdateFrequency.Duration, 10 * time.Second},
		"serving certificate issued": {s.RotateServerCertificates, false},
		"static pods":                {s.StaticPodPath, "/etc/kubernetes/manifests"},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", name, c.got, c.want)
		}
	}
}

func TestKubeletConfigErrorsNameTheField(t *testing.T) {
	for name, c := range map[string]struct {
		file string
		want string
	}{
		"an unsupported field set": {
			file: "cpuManagerPolicy: static\n",
			want: `field "cpuManagerPolicy": "static" is not supported by nodelet (the kubelet's default "none" is)`,
		},
		"an unsupported field without a default": {
			file: "tlsMinVersion: VersionTLS13\n",
			want: `field "tlsMinVersion": "VersionTLS13" is not supported by nodelet (only the kubelet's default, unset, is)`,
		},
		"a nested one": {
			file: "logging:\n  format: json\n",
			want: `field "logging.format": "json" is not supported by nodelet (the kubelet's default "text" is)`,
		},
		"an unknown field": {
			file: "cpuManagerPolicyy: static\n",
			want: `unknown field "cpuManagerPolicyy"`,
		},
		"nodelet's own field": {
			file: "networkMode: agent\n",
			want: `unknown field "networkMode"`,
		},
		"a wrong type": {
			file: "maxPods: many\n",
			want: `field "maxPods": got string, want int32`,
		},
		"a bad duration": {
			file: "cpuManagerReconcilePeriod: soon\n",
			want: `field "cpuManagerReconcilePeriod"`,
		},
		"a gate not at its default": {
			file: "featureGates:\n  NoSuchGate: true\n",
			want: `field "featureGates": NoSuchGate is not a feature gate of Kubernetes v1.36.3`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, kubeletHeader+c.file)
			_, err := Parse([]string{"--node-name=n", "--config=" + path}, nil)
			if err == nil {
				t.Fatalf("taken, want %q", c.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "config file "+path+": ") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line: config file %s: ...%s", msg, path, c.want)
			}
		})
	}
}

func TestKubeletConfigFields(t *testing.T) {
	path := writeConfig(t, kubeletHeader+`serverTLSBootstrap: true
maxPods: 42
evictionHard:
  memory.available: 200Mi
containerLogMonitorInterval: 20s
cpuManagerPolicy: none
failSwapOn: false
shutdownGracePeriodByPodPriority:
- priority: 0
  shutdownGracePeriodSeconds: 20
- priority: 2000000000
  shutdownGracePeriodSeconds: 10
`)
	s, err := Parse([]string{"--node-name=n", "--config=" + path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.RotateServerCertificates {
		t.Error("serverTLSBootstrap: true did not set rotateServerCertificates")
	}
	if s.MaxPods != 42 || s.ContainerLogMonitorInterval.Duration != 20*time.Second {
		t.Errorf("maxPods %d, containerLogMonitorInterval %v; want 42, 20s", s.MaxPods, s.ContainerLogMonitorInterval.Duration)
	}
	if !reflect.DeepEqual(s.EvictionHard, map[string]string{"memory.available": "200Mi"}) {
		t.Errorf("evictionHard %v, want the file's alone", s.EvictionHard)
	}
	bands := []configv1alpha1.ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: 20}, {Priority: 2000000000, ShutdownGracePeriodSeconds: 10}}
	if !reflect.DeepEqual(s.ShutdownGracePeriodByPodPriority, bands) {
		t.Errorf("shutdownGracePeriodByPodPriority %+v, want the file's %+v", s.ShutdownGracePeriodByPodPriority, bands)
	}
}

// kubeletDefaults is where nodelet's defaults and the kubelet's differ:
// a KubeletConfiguration that sets nothing gives the kubelet's v1beta1
// defaults (pkg/kubelet/apis/config/v1beta1/defaults.go, and the
// kubelet's --root-dir) in every field nodelet carries; a
// NodeletConfiguration gives nodelet's.
func TestKubeletDefaultsAreTheKubelets(t *testing.T) {
	kubelet, err := Parse([]string{"--node-name=n", "--config=" + writeConfig(t, kubeletHeader)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodelet, err := Parse([]string{"--node-name=n", "--config=" + writeConfig(t, configHeader)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ kubelet, want, nodelet any }{
		"rootDir":                          {kubelet.RootDir, "/var/lib/kubelet", nodelet.RootDir},
		"healthzPort":                      {*kubelet.HealthzPort, int32(10248), *nodelet.HealthzPort},
		"cgroupRoot":                       {kubelet.CgroupRoot, "/", nodelet.CgroupRoot},
		"healthzBindAddress":               {kubelet.HealthzBindAddress, "127.0.0.1", nil},
		"address":                          {kubelet.Address, "0.0.0.0", nil},
		"port":                             {kubelet.Port, int32(10250), nil},
		"cgroupDriver":                     {kubelet.CgroupDriver, "cgroupfs", nil},
		"containerRuntimeEndpoint":         {kubelet.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock", nil},
		"runtimeRequestTimeout":            {kubelet.RuntimeRequestTimeout.Duration, 2 * time.Minute, nil},
		"kubeAPIQPS":                       {*kubelet.KubeAPIQPS, int32(50), nil},
		"kubeAPIBurst":                     {kubelet.KubeAPIBurst, int32(100), nil},
		"podLogsDir":                       {kubelet.PodLogsDir, "/var/log/pods", nil},
		"podPidsLimit":                     {*kubelet.PodPidsLimit, int64(-1), nil},
		"resolvConf":                       {*kubelet.ResolvConf, "/etc/resolv.conf", nil},
		"maxPods":                          {kubelet.MaxPods, int32(110), nil},
		"nodeStatusUpdateFrequency":        {kubelet.NodeStatusUpdateFrequency.Duration, 10 * time.Second, nil},
		"evictionPressureTransitionPeriod": {kubelet.EvictionPressureTransitionPeriod.Duration, 5 * time.Minute, nil},
		"enforceNodeAllocatable":           {kubelet.EnforceNodeAllocatable, []string{"pods"}, nil},
		"imageGCHighThresholdPercent":      {*kubelet.ImageGCHighThresholdPercent, int32(85), nil},
		"imageGCLowThresholdPercent":       {*kubelet.ImageGCLowThresholdPercent, int32(80), nil},
		"imageMinimumGCAge":                {kubelet.ImageMinimumGCAge.Duration, 2 * time.Minute, nil},
		"volumeStatsAggPeriod":             {kubelet.VolumeStatsAggPeriod.Duration, time.Minute, nil},
		"anonymous":                        {*kubelet.Authentication.Anonymous.Enabled, false, nil},
		"webhook":                          {*kubelet.Authentication.Webhook.Enabled, true, nil},
		"cacheTTL":                         {kubelet.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute, nil},
		"authorization.mode":               {kubelet.Authorization.Mode, "Webhook", nil},
		"cacheAuthorizedTTL":               {kubelet.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5 * time.Minute, nil},
		"cacheUnauthorizedTTL":             {kubelet.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30 * time.Second, nil},
		"containerLogMaxSize":              {kubelet.ContainerLogMaxSize, "10Mi", nil},
		"containerLogMaxFiles":             {*kubelet.ContainerLogMaxFiles, int32(5), nil},
		"containerLogMonitorInterval":      {kubelet.ContainerLogMonitorInterval.Duration, 10 * time.Second, nil},
	} {
		if !reflect.DeepEqual(c.kubelet, c.want) {
			t.Errorf("%s from a KubeletConfiguration = %#v, want the kubelet's %#v", name, c.kubelet, c.want)
		}
		if c.nodelet != nil && reflect.DeepEqual(c.nodelet, c.want) {
			t.Errorf("%s from a NodeletConfiguration = %#v, the kubelet's: kubeletDefaults need not set it", name, c.nodelet)
		}
	}
}

func TestConfigDirDropins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Lexical order: 10 before 2, the subfolder's after 2's, and the
	// files without .conf are not read.
	write("10-kubelet.conf", kubeletHeader+"maxPods: 50\nevictionHard:\n  memory.available: 200Mi\nclusterDNS: [10.0.0.10, 10.0.0.11]\n")
	write("2-nodelet.conf", configHeader+"maxPods: 60\nevictionHard:\n  nodefs.available: 5%\nnetworkMode: agent\n")
	write("3/kubelet.conf", kubeletHeader+"clusterDNS: [10.0.0.12]\nclusterDomain: example.org\n")
	write("99-ignored.yaml", "not: a drop-in\n")
	base := writeConfig(t, kubeletHeader+"maxPods: 40\nclusterDomain: cluster.local\n")

	s, err := Parse([]string{"--node-name=n", "--config=" + base, "--config-dir=" + dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ got, want any }{
		"maxPods, the last drop-in's":          {s.MaxPods, int32(60)},
		"evictionHard, merged key by key":      {s.EvictionHard, map[string]string{"memory.available": "200Mi", "nodefs.available": "5%"}},
		"clusterDNS, a list replaced":          {s.ClusterDNS, []string{"10.0.0.12"}},
		"clusterDomain, the subfolder's":       {s.ClusterDomain, "example.org"},
		"networkMode, nodelet's drop-in":       {s.NetworkMode, "agent"},
		"rootDir, the kubelet's (--config is)": {s.RootDir, "/var/lib/kubelet"},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", name, c.got, c.want)
		}
	}

	// Flags on the command line win over every file.
	s, err = Parse([]string{"--node-name=n", "--config=" + base, "--config-dir=" + dir, "--max-pods=70"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxPods != 70 {
		t.Errorf("--max-pods=70 over the files: maxPods %d", s.MaxPods)
	}

	// A drop-in's unsupported field names the drop-in.
	write("50-bad.conf", kubeletHeader+"cpuManagerPolicy: static\n")
	_, err = Parse([]string{"--node-name=n", "--config-dir=" + dir}, nil)
	if want := "config file " + filepath.Join(dir, "50-bad.conf") + `: field "cpuManagerPolicy"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a bad drop-in: %v, want %s...", err, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
