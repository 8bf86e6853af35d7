package runtime

// Tests of the pod's hostname and domain and of its hosts file: the pure
// composition as tables, then the file in a t.TempDir() and its mount.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestPodHostnameAndDomain(t *testing.T) {
	tests := map[string]struct {
		mutate        func(*corev1.Pod)
		clusterDomain string
		wantHostname  string
		wantDomain    string
		wantErr       string
	}{
		"the pod's name, no domain": {
			clusterDomain: "cluster.local",
			wantHostname:  "web",
		},
		"spec.hostname names the host": {
			mutate:       func(p *corev1.Pod) { p.Spec.Hostname = "web-0" },
			wantHostname: "web-0",
		},
		"a subdomain gives the domain under the namespace's Services": {
			mutate:        func(p *corev1.Pod) { p.Spec.Hostname = "web-0"; p.Spec.Subdomain = "web" },
			clusterDomain: "cluster.local",
			wantHostname:  "web-0",
			wantDomain:    "web.team.svc.cluster.local",
		},
		"a subdomain without a cluster domain ends in svc., as the kubelet's": {
			mutate:       func(p *corev1.Pod) { p.Spec.Subdomain = "web" },
			wantHostname: "web",
			wantDomain:   "web.team.svc.",
		},
		"hostnameOverride wins and has no domain": {
			mutate: func(p *corev1.Pod) {
				p.Spec.Hostname = "web-0"
				p.Spec.Subdomain = "web"
				p.Spec.HostnameOverride = ptr.To("web.internal")
			},
			clusterDomain: "cluster.local",
			wantHostname:  "web.internal",
		},
		"a long name is cut to 63 characters without a trailing dash or dot": {
			mutate:       func(p *corev1.Pod) { p.Name = strings.Repeat("a", 61) + ".-bcdef" },
			wantHostname: strings.Repeat("a", 61),
		},
		"an invalid hostname is an error": {
			mutate:  func(p *corev1.Pod) { p.Spec.Hostname = "Not_A_Label" },
			wantErr: `pod Hostname "Not_A_Label" is not a valid DNS label`,
		},
		"an invalid subdomain is an error": {
			mutate:  func(p *corev1.Pod) { p.Spec.Subdomain = "a.b" },
			wantErr: `pod Subdomain "a.b" is not a valid DNS label`,
		},
		"an invalid hostnameOverride is an error": {
			mutate:  func(p *corev1.Pod) { p.Spec.HostnameOverride = ptr.To("-bad") },
			wantErr: `pod HostnameOverride "-bad" is not a valid DNS subdomain`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}}
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			hostname, domain, err := podHostnameAndDomain(pod, tc.clusterDomain)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("podHostnameAndDomain() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("podHostnameAndDomain() error = %v", err)
			}
			if hostname != tc.wantHostname || domain != tc.wantDomain {
				t.Errorf("podHostnameAndDomain() = %q, %q, want %q, %q", hostname, domain, tc.wantHostname, tc.wantDomain)
			}
		})
	}
}

func TestKernelHostname(t *testing.T) {
	domain := "db.default.svc.cluster.local" // 28 characters
	tests := map[string]struct {
		hostname string
		domain   string
		asFQDN   *bool
		want     string
		wantErr  bool
	}{
		"the hostname by default":              {hostname: "db-0", domain: domain, want: "db-0"},
		"the hostname when asked not to":       {hostname: "db-0", domain: domain, asFQDN: ptr.To(false), want: "db-0"},
		"the FQDN when asked":                  {hostname: "db-0", domain: domain, asFQDN: ptr.To(true), want: "db-0." + domain},
		"the hostname when there is no domain": {hostname: "db-0", asFQDN: ptr.To(true), want: "db-0"},
		"an FQDN of 64 characters fits":        {hostname: strings.Repeat("h", 35), domain: domain, asFQDN: ptr.To(true), want: strings.Repeat("h", 35) + "." + domain},
		"an FQDN of 65 characters is an error": {hostname: strings.Repeat("h", 36), domain: domain, asFQDN: ptr.To(true), wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := kernelHostname(tc.hostname, tc.domain, tc.asFQDN)
			if (err != nil) != tc.wantErr {
				t.Fatalf("kernelHostname() error = %v, want error: %t", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("kernelHostname() = %q, want %q", got, tc.want)
			}
		})
	}
}

const localhostEntries = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestManagedHostsFileContent(t *testing.T) {
	aliases := []corev1.HostAlias{
		{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}},
		{IP: "fd00::3", Hostnames: []string{"baz.local"}},
	}
	tests := map[string]struct {
		podIPs   []string
		hostname string
		domain   string
		aliases  []corev1.HostAlias
		want     string
	}{
		"each pod IP with the hostname": {
			podIPs:   []string{"10.244.0.5", "fd00::5"},
			hostname: "web",
			want:     localhostEntries + "10.244.0.5\tweb\nfd00::5\tweb\n",
		},
		"with a domain, the FQDN first": {
			podIPs:   []string{"10.244.0.5"},
			hostname: "web-0",
			domain:   "web.team.svc.cluster.local",
			want:     localhostEntries + "10.244.0.5\tweb-0.web.team.svc.cluster.local\tweb-0\n",
		},
		"hostAliases follow, one line per IP": {
			podIPs:   []string{"10.244.0.5"},
			hostname: "web",
			aliases:  aliases,
			want: localhostEntries + "10.244.0.5\tweb\n" +
				"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\nfd00::3\tbaz.local\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := string(managedHostsFileContent(tc.podIPs, tc.hostname, tc.domain, tc.aliases))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("managedHostsFileContent() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeHostsFileContent(t *testing.T) {
	node := "127.0.0.1\tlocalhost\n192.0.2.2\tnode-1\n"
	header := "# Kubernetes-managed hosts file (host network).\n"
	tests := map[string]struct {
		aliases []corev1.HostAlias
		want    string
	}{
		"the node's file as it is": {
			want: header + node,
		},
		"the node's file, then hostAliases": {
			aliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local"}}},
			want:    header + node + "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := string(nodeHostsFileContent([]byte(node), tc.aliases))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodeHostsFileContent() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostsMount(t *testing.T) {
	dir := t.TempDir()
	nodeHosts := filepath.Join(dir, "node-hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(dir, "pods", "uid-1")
	hostsPath := filepath.Join(podDir, "etc-hosts")
	m := &Manager{config: Config{HostsFile: nodeHosts, ClusterDNS: ClusterDNS{Domain: "cluster.local"}}, recorder: record.NewFakeRecorder(10)}
	wantMount := &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: hostsPath, SelinuxRelabel: true}
	newPod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "team", UID: "uid-1"},
			Spec: corev1.PodSpec{
				Subdomain:   "web",
				HostAliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local"}}},
				Containers:  []corev1.Container{{Name: "app"}},
			},
		}
	}

	tests := map[string]struct {
		mutate      func(*corev1.Pod)
		podIPs      []string
		wantMount   bool
		wantContent string
	}{
		"a pod on its own network gets its IPs, names and aliases": {
			podIPs:    []string{"10.244.0.5"},
			wantMount: true,
			wantContent: localhostEntries + "10.244.0.5\tweb-0.web.team.svc.cluster.local\tweb-0\n" +
				"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\n",
		},
		"a pod whose IPs are not known yet gets none": {},
		"a container that mounts /etc/hosts itself keeps its own": {
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}}
			},
			podIPs: []string{"10.244.0.5"},
		},
		"a pod on the host's network gets the node's file and its aliases": {
			mutate:    func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			podIPs:    []string{"192.0.2.2"},
			wantMount: true,
			wantContent: "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n" +
				"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			os.Remove(hostsPath)
			pod := newPod()
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			got, err := m.hostsMount(pod, &pod.Spec.Containers[0], tc.podIPs, podDir)
			if err != nil {
				t.Fatalf("hostsMount() error = %v", err)
			}
			if !tc.wantMount {
				if got != nil {
					t.Errorf("hostsMount() = %v, want no mount", got)
				}
				if _, err := os.Stat(hostsPath); !os.IsNotExist(err) {
					t.Errorf("the hosts file was written: %v", err)
				}
				return
			}
			if diff := cmp.Diff(wantMount, got, protocmp.Transform()); diff != "" {
				t.Errorf("hostsMount() mismatch (-want +got):\n%s", diff)
			}
			content, err := os.ReadFile(hostsPath)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantContent, string(content)); diff != "" {
				t.Errorf("hosts file mismatch (-want +got):\n%s", diff)
			}
			if info, err := os.Stat(hostsPath); err != nil || info.Mode().Perm() != 0o644 {
				t.Errorf("hosts file mode = %v (%v), want 0644", info.Mode().Perm(), err)
			}
		})
	}
}

// The file is rewritten in place: containers running have its inode
// mounted, and must see the next container's version.
func TestHostsMountRewritesInPlace(t *testing.T) {
	podDir := t.TempDir()
	m := &Manager{config: Config{}, recorder: record.NewFakeRecorder(10)}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "uid-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
	}
	if _, err := m.hostsMount(pod, &pod.Spec.Containers[0], []string{"10.244.0.5"}, podDir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(podDir, "etc-hosts")
	before := inode(t, path)
	// What a container wrote into its /etc/hosts is undone.
	if err := os.WriteFile(path, []byte("changed by a container\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.hostsMount(pod, &pod.Spec.Containers[0], []string{"10.244.0.6"}, podDir); err != nil {
		t.Fatal(err)
	}
	if after := inode(t, path); after != before {
		t.Errorf("the hosts file was replaced (inode %d, was %d), not rewritten", after, before)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := localhostEntries + "10.244.0.6\tweb\n"; string(content) != want {
		t.Errorf("hosts file = %q, want %q", content, want)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}
