package e2e

// Names, as pods see them: the resolv.conf of each dnsPolicy, the cluster's
// DNS (CoreDNS, which the stack runs as a Deployment nodelet runs) finding
// Services and a headless Service's pods, Services reached through
// kube-proxy (a DaemonSet pod nodelet runs on the host's network), the
// /etc/hosts nodelet writes, and the pod's hostname. What the containers
// see is read with an exec through the runtime.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// resolverConfig is what a resolv.conf says, as the tests compare it.
type resolverConfig struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

func parseResolverConfig(content string) resolverConfig {
	var conf resolverConfig
	for _, line := range strings.Split(content, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			conf.Nameservers = append(conf.Nameservers, fields[1])
		case "search":
			conf.Searches = fields[1:]
		case "options":
			conf.Options = append(conf.Options, fields[1:]...)
		}
	}
	return conf
}

// requireClusterDNS fails the test when the stack has no cluster DNS, then
// waits until kube-proxy and CoreDNS run and are Ready.
func (f *Framework) requireClusterDNS(t *testing.T) {
	t.Helper()
	if f.Env.ClusterDNS == "" || f.Env.ClusterDomain == "" {
		t.Fatalf("the stack has no cluster DNS (CLUSTER_DNS and CLUSTER_DOMAIN are empty in its env file): bring it up with ADDONS=true")
	}
	for _, app := range []string{"kube-proxy", "kube-dns"} {
		f.waitForSystemPodReady(t, app)
	}
}

// waitForSystemPodReady waits until the kube-system pod labelled
// k8s-app=app is Running and Ready, and returns it.
func (f *Framework) waitForSystemPodReady(t *testing.T, app string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	var seen string
	err := await.Poll(t.Context(), 3*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		pods, err := f.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=" + app})
		if err != nil {
			return false, err
		}
		seen = fmt.Sprintf("%d pods", len(pods.Items))
		for i := range pods.Items {
			p := &pods.Items[i]
			seen += "; " + describePod(p)
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
				pod = p
				return true, nil
			}
		}
		return false, nil
	}))

	if err != nil {
		t.Fatalf("waiting for the kube-system pod k8s-app=%s to be Running and Ready: %v; seen: %s", app, err, seen)
	}
	return pod
}

func TestDNSResolvConfOfEachPolicy(t *testing.T) {
	t.Parallel()
	if f.Env.ClusterDNS == "" {
		t.Fatalf("the stack has no cluster DNS (CLUSTER_DNS is empty in its env file): bring it up with ADDONS=true")
	}
	ns := f.NewNamespace(t)
	hostConf, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatalf("reading the node's resolv.conf (nodelet's --resolv-conf): %v", err)
	}
	host := parseResolverConfig(string(hostConf))
	domain := f.Env.ClusterDomain
	cluster := resolverConfig{
		Nameservers: []string{f.Env.ClusterDNS},
		Searches:    withoutRepeats(append([]string{ns + ".svc." + domain, "svc." + domain, domain}, host.Searches...)),
		Options:     []string{"ndots:5"},
	}

	tests := map[string]struct {
		mutate func(*corev1.Pod)
		want   resolverConfig
	}{
		"ClusterFirst: the cluster's DNS alone": {
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSClusterFirst },
			want:   cluster,
		},
		"ClusterFirst on the host's network: the host's": {
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSClusterFirst; p.Spec.HostNetwork = true },
			want:   host,
		},
		"ClusterFirstWithHostNet on the host's network: the cluster's DNS": {
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet; p.Spec.HostNetwork = true },
			want:   cluster,
		},
		"Default: the host's": {
			mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault },
			want:   host,
		},
		"None: the pod's own dnsConfig alone": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSNone
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"192.0.2.53"},
					Searches:    []string{"pods.example"},
					Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
				}
			},
			want: resolverConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"pods.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		"ClusterFirst with a dnsConfig: merged into the cluster's": {
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSClusterFirst
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"192.0.2.53"},
					Searches:    []string{"pods.example"},
					Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("3")}},
				}
			},
			want: resolverConfig{
				Nameservers: []string{f.Env.ClusterDNS, "192.0.2.53"},
				Searches:    append(append([]string(nil), cluster.Searches...), "pods.example"),
				Options:     []string{"ndots:3"},
			},
		},
	}
	i := 0
	for name, tc := range tests {
		pod := newPod(ns, fmt.Sprintf("dns-%d", i)).obj()
		i++
		tc.mutate(pod)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pod := f.waitForPod(t, f.createPod(t, pod), podStartTimeout, "to be Running and Ready", runningAndReady)
			got := parseResolverConfig(f.execInContainer(t, pod, "app", "cat", "/etc/resolv.conf"))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("/etc/resolv.conf of a %s pod (hostNetwork %t) mismatch (-want +got):\n%s", pod.Spec.DNSPolicy, pod.Spec.HostNetwork, diff)
			}
		})
	}
}

func withoutRepeats(values []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// namedWebPod serves "hello from NAME" over HTTP on port 8080 (busybox httpd),
// as NAME.web in the namespace: hostname NAME, subdomain web.
func namedWebPod(ns, name string) *corev1.Pod {
	pod := newPod(ns, name).
		withShell(fmt.Sprintf("mkdir -p /tmp/www && echo 'hello from %s' >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www", name)).
		obj()
	pod.Labels = map[string]string{"app": "web"}
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = "web"
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
	return pod
}

// createWebServices makes the headless Service that gives namedWebPods their
// names (web) and a ClusterIP Service in front of them (front, port 80).
func (f *Framework) createWebServices(t *testing.T, ns string) *corev1.Service {
	t.Helper()
	headless := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app": "web"},
			Ports:     []corev1.ServicePort{{Name: "http", Port: 8080}},
		},
	}
	front := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := f.Client.CoreV1().Services(ns).Create(t.Context(), headless, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Service %s/web: %v", ns, err)
	}
	created, err := f.Client.CoreV1().Services(ns).Create(t.Context(), front, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Service %s/front: %v", ns, err)
	}
	return created
}

// execEventually runs a command in a container until its output holds
// want: DNS records and Service rules follow the objects within seconds.
func (f *Framework) execEventually(t *testing.T, pod *corev1.Pod, want string, timeout time.Duration, command ...string) string {
	t.Helper()
	var out string
	err := await.Poll(t.Context(), timeout, await.Condition(func(ctx context.Context) (bool, error) {
		stdout, stderr, err := f.Runtime.ExecSync(ctx, containerID(t, pod, "app"), command, 10*time.Second)
		out = string(stdout) + string(stderr)
		if err != nil {
			out += " (" + err.Error() + ")"
		}
		return strings.Contains(out, want), nil
	}))

	if err != nil {
		t.Fatalf("%q in %s/%s never printed %q within %s: %v; last output:\n%s", command, pod.Namespace, pod.Name, want, timeout, err, out)
	}
	return out
}

func TestDNSResolvesServicesAndPodsAndServicesAnswer(t *testing.T) {
	t.Parallel()
	f.requireClusterDNS(t)
	ns := f.NewNamespace(t)
	front := f.createWebServices(t, ns)
	web := f.createPod(t, namedWebPod(ns, "web-0"))
	client := f.createPod(t, newPod(ns, "client").obj())
	web = f.waitForPod(t, web, podStartTimeout, "to be Running and Ready", runningAndReady)
	client = f.waitForPod(t, client, podStartTimeout, "to be Running and Ready", runningAndReady)
	domain := f.Env.ClusterDomain

	// busybox's nslookup asks for the name as given; the C library's
	// resolver, which programs (here ping, for the address it prints
	// first) use, applies the search domains and ndots.
	t.Run("nslookup finds the kubernetes Service", func(t *testing.T) {
		f.execEventually(t, client, f.Env.ServiceIP, time.Minute, "nslookup", "kubernetes.default.svc."+domain)
	})
	t.Run("kubernetes.default resolves to the kubernetes Service through the search domains", func(t *testing.T) {
		f.execEventually(t, client, "("+f.Env.ServiceIP+")", time.Minute, "ping", "-c", "1", "-W", "1", "kubernetes.default")
	})
	t.Run("a Service of the namespace resolves by its short name", func(t *testing.T) {
		f.execEventually(t, client, "("+front.Spec.ClusterIP+")", time.Minute, "ping", "-c", "1", "-W", "1", "front")
	})
	t.Run("a headless Service's pod resolves by its hostname", func(t *testing.T) {
		f.execEventually(t, client, web.Status.PodIP, time.Minute, "nslookup", fmt.Sprintf("web-0.web.%s.svc.%s", ns, domain))
	})
	t.Run("the ClusterIP Service reaches its backend pod", func(t *testing.T) {
		request := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 80`, front.Spec.ClusterIP)
		f.execEventually(t, client, "hello from web-0", time.Minute, "sh", "-c", request)
	})
	t.Run("the ClusterIP Service reaches its backend pod by name", func(t *testing.T) {
		request := `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 front 80`
		f.execEventually(t, client, "hello from web-0", time.Minute, "sh", "-c", request)
	})
	t.Run("the backend pod reaches itself through its Service", func(t *testing.T) {
		request := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 80`, front.Spec.ClusterIP)
		f.execEventually(t, web, "hello from web-0", time.Minute, "sh", "-c", request)
	})
}

const podHostsLocalhost = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestEtcHosts(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	nodeHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatalf("reading the node's /etc/hosts: %v", err)
	}
	aliases := []corev1.HostAlias{
		{IP: "192.0.2.10", Hostnames: []string{"db.example", "db"}},
		{IP: "192.0.2.11", Hostnames: []string{"cache.example"}},
	}
	aliasLines := "\n# Entries added by HostAliases.\n192.0.2.10\tdb.example\tdb\n192.0.2.11\tcache.example\n"
	domain := f.Env.ClusterDomain

	hostsConfig := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosts"},
		Data:       map[string]string{"hosts": "127.0.0.1\tlocalhost\n192.0.2.99\tmine\n"},
	}
	if _, err := f.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), hostsConfig, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap %s/hosts: %v", ns, err)
	}

	tests := map[string]struct {
		name   string
		mutate func(*corev1.Pod)
		want   func(pod *corev1.Pod) string
	}{
		"a pod's IP with its hostname": {
			name: "plain",
			want: func(p *corev1.Pod) string { return podHostsLocalhost + p.Status.PodIP + "\tplain\n" },
		},
		"a pod with a subdomain: its FQDN, then hostAliases": {
			name: "named",
			mutate: func(p *corev1.Pod) {
				p.Spec.Hostname = "db-0"
				p.Spec.Subdomain = "db"
				p.Spec.HostAliases = aliases
			},
			want: func(p *corev1.Pod) string {
				return podHostsLocalhost + fmt.Sprintf("%s\tdb-0.db.%s.svc.%s\tdb-0\n", p.Status.PodIP, ns, domain) + aliasLines
			},
		},
		"a host-network pod: the node's file": {
			name:   "host",
			mutate: func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			want: func(*corev1.Pod) string {
				return "# Kubernetes-managed hosts file (host network).\n" + string(nodeHosts)
			},
		},
		"a host-network pod: the node's file, then hostAliases": {
			name:   "host-aliases",
			mutate: func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Spec.HostAliases = aliases },
			want: func(*corev1.Pod) string {
				return "# Kubernetes-managed hosts file (host network).\n" + string(nodeHosts) + aliasLines
			},
		},
		"a container that mounts /etc/hosts itself keeps its own": {
			name: "own",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostAliases = aliases
				p.Spec.Volumes = []corev1.Volume{{Name: "hosts", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hosts"}},
				}}}
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts", SubPath: "hosts"}}
			},
			want: func(*corev1.Pod) string { return hostsConfig.Data["hosts"] },
		},
	}
	for name, tc := range tests {
		pod := newPod(ns, tc.name).obj()
		if tc.mutate != nil {
			tc.mutate(pod)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pod := f.waitForPod(t, f.createPod(t, pod), podStartTimeout, "to be Running and Ready", runningAndReady)
			got := f.execInContainer(t, pod, "app", "cat", "/etc/hosts")
			if diff := cmp.Diff(tc.want(pod), got); diff != "" {
				t.Errorf("/etc/hosts mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostnameAndFQDN(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	fqdn := fmt.Sprintf("db-0.db.%s.svc.%s", ns, f.Env.ClusterDomain)

	tests := map[string]struct {
		name         string
		mutate       func(*corev1.Pod)
		wantHostname string
		wantFQDN     string
	}{
		"the pod's name": {
			name:         "plain",
			wantHostname: "plain",
			wantFQDN:     "plain",
		},
		"hostname and subdomain: the short name, and the FQDN from /etc/hosts": {
			name:         "sub",
			mutate:       func(p *corev1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.Subdomain = "db" },
			wantHostname: "db-0",
			wantFQDN:     fqdn,
		},
		"setHostnameAsFQDN: the FQDN is the hostname": {
			name: "as-fqdn",
			mutate: func(p *corev1.Pod) {
				p.Spec.Hostname = "db-0"
				p.Spec.Subdomain = "db"
				p.Spec.SetHostnameAsFQDN = ptr.To(true)
			},
			wantHostname: fqdn,
			wantFQDN:     fqdn,
		},
	}
	for name, tc := range tests {
		pod := newPod(ns, tc.name).obj()
		if tc.mutate != nil {
			tc.mutate(pod)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pod := f.waitForPod(t, f.createPod(t, pod), podStartTimeout, "to be Running and Ready", runningAndReady)
			if got := strings.TrimSpace(f.execInContainer(t, pod, "app", "hostname")); got != tc.wantHostname {
				t.Errorf("hostname = %q, want %q", got, tc.wantHostname)
			}
			if got := strings.TrimSpace(f.execInContainer(t, pod, "app", "hostname", "-f")); got != tc.wantFQDN {
				t.Errorf("hostname -f = %q, want %q", got, tc.wantFQDN)
			}
		})
	}

	t.Run("an FQDN longer than 64 characters: no sandbox, and the reason in an event", func(t *testing.T) {
		t.Parallel()
		pod := newPod(ns, "long").obj()
		pod.Spec.Hostname = strings.Repeat("h", 63)
		pod.Spec.Subdomain = "db"
		pod.Spec.SetHostnameAsFQDN = ptr.To(true)
		pod = f.createPod(t, pod)
		f.waitForEvent(t, pod, "FailedCreatePodSandBox", "is too long (64 characters is the max", time.Minute)
		if sandboxes := f.runtimeSandboxes(t, pod.UID); len(sandboxes) != 0 {
			t.Errorf("the pod has sandboxes in the runtime: %s", describeSandboxes(sandboxes))
		}
	})
}

// TestClusterAddOnsSurviveNodeletRestart kills nodelet, so it must run
// alone: it does not call t.Parallel (see main_test.go).
func TestClusterAddOnsSurviveNodeletRestart(t *testing.T) {
	f.requireClusterDNS(t)
	before := map[string]*corev1.Pod{}
	for _, app := range []string{"kube-proxy", "kube-dns"} {
		before[app] = f.waitForSystemPodReady(t, app)
	}

	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	f.restartNodelet(t)

	for app, old := range before {
		pod := f.waitForSystemPodReady(t, app)
		if pod.UID != old.UID {
			t.Errorf("k8s-app=%s: pod %s replaced by %s", app, old.Name, pod.Name)
			continue
		}
		for _, oldStatus := range old.Status.ContainerStatuses {
			now := containerStatus(pod, oldStatus.Name)
			if now == nil || now.ContainerID != oldStatus.ContainerID || now.RestartCount != oldStatus.RestartCount {
				t.Errorf("k8s-app=%s: container %s was %s (restarts %d), is %+v after the restart", app, oldStatus.Name, oldStatus.ContainerID, oldStatus.RestartCount, now)
			}
		}
	}

	// And DNS answers through both, from a new pod.
	ns := f.NewNamespace(t)
	client := f.waitForPod(t, f.createPod(t, newPod(ns, "client").obj()), podStartTimeout, "to be Running and Ready", runningAndReady)
	f.execEventually(t, client, f.Env.ServiceIP, time.Minute, "nslookup", "kubernetes.default.svc."+f.Env.ClusterDomain)
}
