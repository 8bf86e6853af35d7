package runtime

// Tests of the Pod → PodSandboxConfig mapping. They run against a
// resolv.conf written in t.TempDir(); nothing else is read or called.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func sandboxTestPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "web",
			Namespace:   "default",
			UID:         "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "hello"},
		},
		Spec: corev1.PodSpec{
			DNSPolicy: corev1.DNSClusterFirst,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "busybox:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}
}

func TestGenerateSandboxConfig(t *testing.T) {
	dir := t.TempDir()
	resolvConfPath := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConfPath, []byte("nameserver 10.0.0.1\nsearch corp.example\noptions ndots:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "pods")
	env := &PodEnv{CgroupParent: "/kubepods/poduid-1"}

	baseWant := func() *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: 2},
			Hostname:     "web",
			LogDirectory: filepath.Join(logDir, "default_web_uid-1"),
			DnsConfig: &runtimeapi.DNSConfig{
				Servers:  []string{"10.0.0.1"},
				Searches: []string{"corp.example"},
				Options:  []string{"ndots:1"},
			},
			Labels: map[string]string{
				"app":                           "web",
				kubecontainer.LabelPodName:      "web",
				kubecontainer.LabelPodNamespace: "default",
				kubecontainer.LabelPodUID:       "uid-1",
			},
			Annotations: map[string]string{"note": "hello"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{
				CgroupParent: "/kubepods/poduid-1",
				SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
					NamespaceOptions: &runtimeapi.NamespaceOption{
						Network: runtimeapi.NamespaceMode_POD,
						Pid:     runtimeapi.NamespaceMode_CONTAINER,
						Ipc:     runtimeapi.NamespaceMode_POD,
					},
					Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
				},
			},
		}
	}

	tests := map[string]struct {
		mutatePod    func(*corev1.Pod)
		mutateConfig func(*Config)
		mutateWant   func(*runtimeapi.PodSandboxConfig)
		wantErr      string
	}{
		"a plain pod": {},
		"spec.hostname names the host": {
			mutatePod:  func(p *corev1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.Subdomain = "db" },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) { c.Hostname = "db-0" },
		},
		"the cluster's DNS serves a ClusterFirst pod": {
			mutateConfig: func(c *Config) { c.ClusterDNS = ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"} },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.DnsConfig = &runtimeapi.DNSConfig{
					Servers:  []string{"10.96.0.10"},
					Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
					Options:  []string{"ndots:5"},
				}
			},
		},
		"setHostnameAsFQDN with a subdomain makes the FQDN the hostname": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Hostname = "db-0"
				p.Spec.Subdomain = "db"
				p.Spec.SetHostnameAsFQDN = ptr.To(true)
			},
			mutateConfig: func(c *Config) { c.ClusterDNS.Domain = "cluster.local" },
			mutateWant:   func(c *runtimeapi.PodSandboxConfig) { c.Hostname = "db-0.db.default.svc.cluster.local" },
		},
		"setHostnameAsFQDN without a subdomain keeps the short hostname": {
			mutatePod:    func(p *corev1.Pod) { p.Spec.SetHostnameAsFQDN = ptr.To(true) },
			mutateConfig: func(c *Config) { c.ClusterDNS.Domain = "cluster.local" },
		},
		"an FQDN longer than 64 characters is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Hostname = strings.Repeat("h", 36)
				p.Spec.Subdomain = "db"
				p.Spec.SetHostnameAsFQDN = ptr.To(true)
			},
			mutateConfig: func(c *Config) { c.ClusterDNS.Domain = "cluster.local" },
			wantErr:      "is too long (64 characters is the max, 65 characters requested)",
		},
		"hostnameOverride wins over spec.hostname": {
			mutatePod:  func(p *corev1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.HostnameOverride = ptr.To("db.internal") },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) { c.Hostname = "db.internal" },
		},
		"a long pod name is cut to 63 characters without a trailing dash": {
			mutatePod: func(p *corev1.Pod) { p.Name = strings.Repeat("a", 62) + "-bcdef" },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				name := strings.Repeat("a", 62) + "-bcdef"
				c.Metadata.Name = name
				c.Hostname = strings.Repeat("a", 62)
				c.LogDirectory = filepath.Join(logDir, "default_"+name+"_uid-1")
				c.Labels[kubecontainer.LabelPodName] = name
			},
		},
		"a host-network pod keeps the node's hostname and network": {
			mutatePod: func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.Hostname = ""
				c.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
			},
		},
		"hostPID and hostIPC share the node's namespaces": {
			mutatePod: func(p *corev1.Pod) { p.Spec.HostPID = true; p.Spec.HostIPC = true },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_NODE
				c.Linux.SecurityContext.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
			},
		},
		"shareProcessNamespace gives the pod one PID namespace": {
			mutatePod: func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
			},
		},
		"host ports of every container are mapped once each": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
					corev1.ContainerPort{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
					corev1.ContainerPort{Name: "http", ContainerPort: 81, HostPort: 8081, Protocol: corev1.ProtocolTCP},
				)
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
					Name:  "dns",
					Image: "busybox:1",
					Ports: []corev1.ContainerPort{{ContainerPort: 53, HostPort: 5353, HostIP: "127.0.0.1", Protocol: corev1.ProtocolUDP}},
				})
			},
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.PortMappings = []*runtimeapi.PortMapping{
					{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
					{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
				}
			},
		},
		"a privileged init container makes the sandbox privileged": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{
					Name: "setup", Image: "busybox:1",
					SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				}}
			},
			mutateWant: func(c *runtimeapi.PodSandboxConfig) { c.Linux.SecurityContext.Privileged = true },
		},
		"a privileged ephemeral container makes the sandbox privileged": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name: "debugger", Image: "busybox:1",
					SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				}}}
			},
			mutateWant: func(c *runtimeapi.PodSandboxConfig) { c.Linux.SecurityContext.Privileged = true },
		},
		"sysctls written with slashes reach the runtime with dots": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net/ipv4/conf/eth0.100/forwarding", Value: "1"}}}
			},
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.Linux.Sysctls = map[string]string{"net.ipv4.conf.eth0/100.forwarding": "1"}
			},
		},
		"the pod's security context applies to the sandbox": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{
					RunAsUser:                ptr.To[int64](1000),
					RunAsGroup:               ptr.To[int64](2000),
					FSGroup:                  ptr.To[int64](3000),
					SupplementalGroups:       []int64{4000, 4001},
					SupplementalGroupsPolicy: ptr.To(corev1.SupplementalGroupsPolicyStrict),
					SELinuxOptions:           &corev1.SELinuxOptions{Level: "s0:c1,c2"},
					Sysctls:                  []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
				}
			},
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				sc := c.Linux.SecurityContext
				sc.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
				sc.RunAsGroup = &runtimeapi.Int64Value{Value: 2000}
				sc.SupplementalGroups = []int64{3000, 4000, 4001}
				sc.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
				sc.SelinuxOptions = &runtimeapi.SELinuxOption{Level: "s0:c1,c2"}
				c.Linux.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
			},
		},
		"DNS policy None does not read the host's resolv.conf": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSNone
				p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"9.9.9.9"}}
			},
			mutateConfig: func(c *Config) { c.ResolvConf = filepath.Join(dir, "missing") },
			mutateWant: func(c *runtimeapi.PodSandboxConfig) {
				c.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"9.9.9.9"}}
			},
		},
		"an unreadable resolv.conf is an error": {
			mutateConfig: func(c *Config) { c.ResolvConf = filepath.Join(dir, "missing") },
			wantErr:      "resolver configuration",
		},
		"an invalid hostname is an error": {
			mutatePod: func(p *corev1.Pod) { p.Spec.Hostname = "Not_A_Label" },
			wantErr:   `pod Hostname "Not_A_Label" is not a valid DNS label`,
		},
		"an unknown supplementalGroupsPolicy is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To[corev1.SupplementalGroupsPolicy]("Sometimes")}
			},
			wantErr: "unsupported supplementalGroupsPolicy: Sometimes",
		},
		"an unknown port protocol is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: "QUIC"}}
			},
			wantErr: `unknown protocol "QUIC"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			config := Config{PodLogDir: logDir, ResolvConf: resolvConfPath}
			if tc.mutateConfig != nil {
				tc.mutateConfig(&config)
			}
			m := &Manager{config: config, recorder: record.NewFakeRecorder(10)}
			pod := sandboxTestPod()
			if tc.mutatePod != nil {
				tc.mutatePod(pod)
			}
			got, err := m.generateSandboxConfig(pod, 2, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("generateSandboxConfig() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("generateSandboxConfig() error = %v", err)
			}
			want := baseWant()
			if tc.mutateWant != nil {
				tc.mutateWant(want)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("generateSandboxConfig() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerateSandboxConfigReportsDNSLimits(t *testing.T) {
	dir := t.TempDir()
	resolvConfPath := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConfPath, []byte("nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)
	m := &Manager{config: Config{PodLogDir: dir, ResolvConf: resolvConfPath}, recorder: recorder}
	pod := sandboxTestPod()
	pod.Spec.DNSPolicy = corev1.DNSDefault
	pod.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"9.9.9.9"}}

	if _, err := m.generateSandboxConfig(pod, 0, &PodEnv{}); err != nil {
		t.Fatalf("generateSandboxConfig() error = %v", err)
	}
	want := "Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3"
	if diff := cmp.Diff([]string{want}, drainEvents(recorder)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestGenerateSandboxConfigReportsMissingClusterDNS(t *testing.T) {
	dir := t.TempDir()
	resolvConfPath := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConfPath, []byte("nameserver 10.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)
	m := &Manager{config: Config{PodLogDir: dir, ResolvConf: resolvConfPath, NodeName: "node-1"}, recorder: recorder}

	got, err := m.generateSandboxConfig(sandboxTestPod(), 0, &PodEnv{})
	if err != nil {
		t.Fatalf("generateSandboxConfig() error = %v", err)
	}
	if diff := cmp.Diff([]string{"10.0.0.1"}, got.DnsConfig.Servers); diff != "" {
		t.Errorf("nameservers mismatch (-want +got):\n%s", diff)
	}
	// One on the pod, one on the Node, as the kubelet tells both.
	message := `nodelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	want := []string{
		`Warning MissingClusterDNS pod: "web_default(uid-1)". ` + message,
		"Warning MissingClusterDNS " + message,
	}
	if diff := cmp.Diff(want, drainEvents(recorder)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestContainerRef(t *testing.T) {
	pod := sandboxTestPod()
	pod.ResourceVersion = "42"
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	tests := map[string]struct {
		container     string
		wantFieldPath string
	}{
		"a regular container":     {container: "app", wantFieldPath: "spec.containers{app}"},
		"an init container":       {container: "setup", wantFieldPath: "spec.initContainers{setup}"},
		"a container not in spec": {container: "ghost", wantFieldPath: "implicitly required container ghost"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := containerRef(pod, &corev1.Container{Name: tc.container})
			want := &corev1.ObjectReference{
				Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web", UID: "uid-1",
				ResourceVersion: "42", FieldPath: tc.wantFieldPath,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("containerRef() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// drainEvents returns the events a FakeRecorder holds, oldest first.
func drainEvents(recorder *record.FakeRecorder) []string {
	var events []string
	for {
		select {
		case e := <-recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}
