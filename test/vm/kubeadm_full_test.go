//go:build full

package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The cluster of two that TestKubeadm makes: each guest on qemu's user
// network (ssh, the registry at 10.0.2.2) and on a network of their own
// (hack/vm.sh's VM_LAN), where the API server, the node agents and the
// pods' traffic between the nodes go. Each node's pods take a /24 of the
// pod subnet, routed to it over that network.
type kubeadmNode struct {
	name, address, podRange    string
	sshPort, nodePort, lanPort int
	memory                     string
}

var (
	kubeadmControlPlane = kubeadmNode{name: "kubeadm-cp", address: "192.168.100.10", podRange: "10.244.0.0/24",
		sshPort: 32223, nodePort: 40251, lanPort: 32231, memory: "4096"}
	kubeadmWorker = kubeadmNode{name: "kubeadm-worker", address: "192.168.100.11", podRange: "10.244.1.0/24",
		sshPort: 32224, nodePort: 40252, lanPort: 32232, memory: "2560"}
)

const (
	kubeadmPodSubnet     = "10.244.0.0/16"
	kubeadmServiceSubnet = "10.96.0.0/12"
	// The bootstrap token init makes and join presents: fixed, as a
	// kubeadm config may give one; it dies with the guests.
	kubeadmToken = "nodlet.0123456789abcdef"
	// The timeouts kubeadm waits with, loosened for guests under TCG
	// (5 to 10 times slower than the host; the API server's first start
	// alone takes minutes there).
	kubeadmTimeouts = `timeouts:
  controlPlaneComponentHealthCheck: 20m0s
  kubeletHealthCheck: 10m0s
  kubernetesAPICall: 15m0s
  etcdAPICall: 15m0s
  tlsBootstrap: 10m0s
  discovery: 10m0s
`
)

// env is what hack/vm.sh needs to boot the node's guest on the nodes'
// network, with a route to the other node's pods.
func (n kubeadmNode) env(other kubeadmNode) []string {
	return []string{
		fmt.Sprintf("VM_SSH_PORT=%d", n.sshPort),
		fmt.Sprintf("VM_NODE_PORT=%d", n.nodePort),
		"VM_MEMORY=" + n.memory,
		fmt.Sprintf("VM_LAN=%d:%d", n.lanPort, other.lanPort),
		"VM_LAN_ADDRESS=" + n.address + "/24",
		"VM_LAN_ROUTES=" + other.podRange + "=" + other.address,
	}
}

// TestKubeadm brings a cluster up the way most are: `kubeadm init` on one
// guest, whose etcd, API server, controller manager and scheduler are
// static pods the node agent runs, and `kubeadm join` on another, whose
// agent obtains its certificate through TLS bootstrap (a CSR that
// kubeadm's RBAC has the controller manager approve). The node agent is
// nodelet, installed as /usr/bin/kubelet under the kubelet's packaged
// unit and kubeadm's drop-in; NODELET_KUBEADM_AGENT=kubelet runs the
// kubelet of the same version instead, for comparison. Then the README's
// quick start, on this cluster: a pod on the joined node reaches a
// Service by name, through kubeadm's CoreDNS and kube-proxy. Last,
// `kubeadm reset` cleans both nodes up.
//
// Real parts: the guests' kernels, systemd, containerd 2 and runc, the
// bridge CNI plugin; kubeadm, the control plane, CoreDNS and kube-proxy
// from the stack's registry (hack/build-images.sh --kubeadm vm). Only the
// registry of the host's stack is used.
func TestKubeadm(t *testing.T) {
	agent := os.Getenv("NODELET_KUBEADM_AGENT")
	if agent == "" {
		agent = "nodelet"
	}
	registry := kubeadmRegistry()
	files := kubeadmFiles(t, agent)
	t.Logf("node agent: %s; images from %s", agent, registry)

	cp := bootGuestWith(t, kubeadmControlPlane.name, kubeadmControlPlane.env(kubeadmWorker))
	worker := bootGuestWith(t, kubeadmWorker.name, kubeadmWorker.env(kubeadmControlPlane))
	nodes := []*guest{cp, worker}
	shape := map[*guest]kubeadmNode{cp: kubeadmControlPlane, worker: kubeadmWorker}

	timed(t, "preparing both nodes", func() {
		inBoth(t, nodes, func(ctx context.Context, g *guest) error {
			if err := inGuest(ctx, g, "mkdir -p /root/kubeadm"); err != nil {
				return err
			}
			for _, file := range files {
				if out, err := vmScript(ctx, "copy", g.name, file, "/root/kubeadm/").CombinedOutput(); err != nil {
					return fmt.Errorf("copying %s: %w\n%s", file, err, out)
				}
			}
			script := fmt.Sprintf("cd /root/kubeadm && AGENT=%s REGISTRY=%s PAUSE_IMAGE=%s/pause:3.10.2 POD_RANGE=%s ./prepare-node.sh",
				agent, registry, registry, shape[g].podRange)
			return inGuest(ctx, g, script)
		})
	})

	// The nodes reach each other on their network (cp's ssh server
	// listens on every address).
	worker.run(t, fmt.Sprintf("timeout 30 bash -c '</dev/tcp/%s/22'", kubeadmControlPlane.address))

	timed(t, "kubeadm init", func() {
		t.Log(cp.run(t, kubeadmProbePatches()+"cat >/root/kubeadm/init.yaml <<'EOF'\n"+kubeadmInitConfig(registry)+"EOF\n"+
			"kubeadm init --config /root/kubeadm/init.yaml 2>&1"))
	})
	timed(t, "the control plane's static pods, Ready, with their mirror pods", func() {
		await.Eventually(t, 10*time.Minute, "etcd, kube-apiserver, kube-controller-manager and kube-scheduler", func(ctx context.Context) error {
			return staticPodsReady(ctx, cp, kubeadmControlPlane.name)
		})
	})

	// The joining node reaches the API server on the nodes' network.
	worker.run(t, fmt.Sprintf("curl -sSk --max-time 30 https://%s:6443/version", kubeadmControlPlane.address))
	timed(t, "kubeadm join", func() {
		hash := cp.run(t, "openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1")
		t.Log(worker.run(t, "cat >/root/kubeadm/join.yaml <<'EOF'\n"+kubeadmJoinConfig("sha256:"+hash)+"EOF\n"+
			"kubeadm join --config /root/kubeadm/join.yaml 2>&1"))
	})
	timed(t, "both Nodes Ready", func() {
		await.Eventually(t, 10*time.Minute, "both Nodes Ready", func(ctx context.Context) error {
			return nodesReady(ctx, cp, kubeadmControlPlane.name, kubeadmWorker.name)
		})
	})
	// The joined node's agent has the certificate its CSR was issued.
	csrs := kubectl(t, cp, "get csr -o jsonpath='{range .items[*]}{.spec.username} {.status.conditions[*].type}{\"\\n\"}{end}'")
	if !strings.Contains(csrs, "system:bootstrap:nodlet Approved") {
		t.Errorf("no approved CSR of the joining node's bootstrap token:\n%s", csrs)
	}

	timed(t, "the quick start: a pod on the joined node reaches a Service by name", func() {
		quickStart(t, cp, registry)
	})

	timed(t, "kubeadm reset", func() {
		for _, g := range []*guest{worker, cp} {
			kubeadmReset(t, g)
			assertResetClean(t, g, g == cp)
		}
	})
}

// kubeadmRegistry is the stack's registry as the guests reach it.
func kubeadmRegistry() string {
	_, port, _ := strings.Cut(cluster.get("REGISTRY"), ":")
	return cluster.get("GUEST_HOST_IP") + ":" + port
}

// kubeadmFiles are the host files each guest gets: kubeadm, crictl and
// kubectl (hack/build-tools.sh), the agent (the kubelet, or nodelet's
// release tarball), the kubelet's packaged unit and kubeadm's drop-in, and
// the script that prepares the node.
func kubeadmFiles(t *testing.T, agent string) []string {
	t.Helper()
	bin := filepath.Join(cluster.repoRoot, ".cache", "bin")
	testdata := filepath.Join(cluster.repoRoot, "test", "vm", "testdata", "kubeadm")
	files := []string{
		filepath.Join(bin, "kubeadm"), filepath.Join(bin, "crictl"), filepath.Join(bin, "kubectl"),
		filepath.Join(testdata, "kubelet.service"), filepath.Join(testdata, "10-kubeadm.conf"),
		filepath.Join(testdata, "prepare-node.sh"),
	}
	switch agent {
	case "kubelet":
		files = append(files, filepath.Join(bin, "kubelet"))
	case "nodelet":
		files = append(files, cluster.release)
	default:
		t.Fatalf("NODELET_KUBEADM_AGENT is kubelet or nodelet, not %q", agent)
	}
	for _, file := range files {
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("%v (hack/build-tools.sh kubeadm crictl kubectl kubelet builds the tools)", err)
		}
	}
	return files
}

// kubectl runs kubectl with kubeadm's admin kubeconfig in guest g.
func kubectl(t *testing.T, g *guest, args string) string {
	t.Helper()
	return g.run(t, "kubectl --kubeconfig /etc/kubernetes/admin.conf "+args)
}

// kubectlCreate runs a kubectl command that creates an object, again
// while it fails (for three minutes at most): under TCG the control
// plane's etcd times a write out now and then ("etcdserver: request timed
// out"). A retry that finds the object already there counts, as the
// timed-out write may have been made.
func kubectlCreate(t *testing.T, g *guest, args string) {
	t.Helper()
	await.Eventually(t, 3*time.Minute, "kubectl "+args, func(ctx context.Context) error {
		out, err := kubectlContext(ctx, g, args)
		if err != nil && !strings.Contains(out, "AlreadyExists") && !strings.Contains(out, "already exists") {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
}

func kubectlContext(ctx context.Context, g *guest, args string) (string, error) {
	return g.output(ctx, "kubectl --kubeconfig /etc/kubernetes/admin.conf "+args)
}

// staticPodsReady checks that the four control plane components of node
// run as static pods: each has a mirror pod, <component>-<node>, Ready.
func staticPodsReady(ctx context.Context, g *guest, node string) error {
	out, err := kubectlContext(ctx, g, "get pods -n kube-system -o json")
	if err != nil {
		return fmt.Errorf("kubectl: %w: %s", err, out)
	}
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(out), &pods); err != nil {
		return fmt.Errorf("kubectl's pod list: %w: %s", err, lastLines(out, 5))
	}
	byName := map[string]corev1.Pod{}
	for _, pod := range pods.Items {
		byName[pod.Name] = pod
	}
	var missing []string
	for _, component := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		pod, ok := byName[component+"-"+node]
		switch {
		case !ok:
			missing = append(missing, component+": no mirror pod")
		case pod.Annotations[corev1.MirrorPodAnnotationKey] == "":
			missing = append(missing, component+": not a mirror pod")
		case !podReady(pod):
			missing = append(missing, fmt.Sprintf("%s: %s, not Ready", component, pod.Status.Phase))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s", strings.Join(missing, "; "))
	}
	return nil
}

func podReady(pod corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodesReady(ctx context.Context, g *guest, names ...string) error {
	out, err := kubectlContext(ctx, g, "get nodes -o json")
	if err != nil {
		return fmt.Errorf("kubectl: %w: %s", err, out)
	}
	var nodes corev1.NodeList
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		return fmt.Errorf("kubectl's node list: %w: %s", err, lastLines(out, 5))
	}
	ready := map[string]string{}
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready[node.Name] = fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
			}
		}
	}
	var notReady []string
	for _, name := range names {
		if state, ok := ready[name]; !ok {
			notReady = append(notReady, name+": no Node")
		} else if !strings.HasPrefix(state, "True") {
			notReady = append(notReady, name+": Ready "+state)
		}
	}
	if len(notReady) > 0 {
		return fmt.Errorf("%s", strings.Join(notReady, "; "))
	}
	return nil
}

// quickStart runs the README's quick start on the cluster: web, a busybox
// httpd behind a Service, on the control plane node, and x, on the joined
// node, which looks the Service up by name in CoreDNS and reaches web
// through it (kube-proxy's rules, then the route to the other node's pods).
func quickStart(t *testing.T, cp *guest, registry string) {
	t.Helper()
	busybox := registry + "/busybox:1.35"
	onNode := func(node string, tolerate bool) string {
		spec := fmt.Sprintf(`"nodeSelector":{"kubernetes.io/hostname":%q}`, node)
		if tolerate {
			spec += `,"tolerations":[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}]`
		}
		return shellQuote(`{"spec":{` + spec + `}}`)
	}
	kubectlCreate(t, cp, fmt.Sprintf("run x --image=%s --overrides=%s -- sleep 3600", busybox, onNode(kubeadmWorker.name, false)))
	kubectlCreate(t, cp, fmt.Sprintf("run web --image=%s --labels=app=web --port=8080 --overrides=%s -- "+
		"sh -c 'mkdir -p /tmp/www && echo hello from web >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www'",
		busybox, onNode(kubeadmControlPlane.name, true)))
	kubectlCreate(t, cp, "expose pod web --name=web --port=80 --target-port=8080")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = kubectlContext(ctx, cp, "delete pod x web --wait=false --ignore-not-found")
	})
	await.Eventually(t, 10*time.Minute, "x and web Running and Ready", func(ctx context.Context) error {
		out, err := kubectlContext(ctx, cp, "wait --for=condition=Ready pod/x pod/web --timeout=30s")
		if err != nil {
			status, _ := kubectlContext(ctx, cp, "get pods -A -o wide")
			return fmt.Errorf("%w: %s\n%s", err, out, status)
		}
		return nil
	})
	if node := kubectl(t, cp, "get pod x -o jsonpath='{.spec.nodeName}'"); node != kubeadmWorker.name {
		t.Fatalf("pod x runs on %q, not on the joined node %s", node, kubeadmWorker.name)
	}
	clusterIP := kubectl(t, cp, "get service web -o jsonpath='{.spec.clusterIP}'")
	await.Eventually(t, 5*time.Minute, "x to find web's ClusterIP "+clusterIP+" in CoreDNS", func(ctx context.Context) error {
		out, err := kubectlContext(ctx, cp, "exec x -- nslookup web.default.svc.cluster.local")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if !strings.Contains(out, clusterIP) {
			return fmt.Errorf("not the ClusterIP: %s", out)
		}
		return nil
	})
	await.Eventually(t, 3*time.Minute, "x to reach web by name", func(ctx context.Context) error {
		out, err := kubectlContext(ctx, cp, `exec x -- sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 web 80"`)
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if !strings.Contains(out, "hello from web") {
			return fmt.Errorf("not web's page: %s", out)
		}
		return nil
	})
}

// kubeadmReset runs `kubeadm reset` on g, and again (three runs at most)
// while it could not remove the runtime's pods: its CRI calls give up
// after 2 s, and under TCG a sandbox's stop (the CNI plugin's DEL, then
// the kill) takes longer while containerd goes on with it. kubeadm's
// reset is best effort and meant to be run again; what a third run
// cannot remove is a fault.
func kubeadmReset(t *testing.T, g *guest) {
	t.Helper()
	for run := 1; run <= 3; run++ {
		out := g.run(t, "kubeadm reset -f 2>&1")
		t.Log(out)
		if !strings.Contains(out, "Failed to remove containers") {
			return
		}
		t.Logf("guest %s: kubeadm reset run %d could not remove every pod in time", g.name, run)
	}
}

// assertResetClean checks what `kubeadm reset` promises on a node: the
// agent stopped, no pod left in the runtime, kubeadm's files and the
// agent's folder emptied (and etcd's data on the control plane).
func assertResetClean(t *testing.T, g *guest, controlPlane bool) {
	t.Helper()
	checks := map[string]string{
		"the kubelet unit":          "systemctl is-active kubelet || true",
		"the runtime's pods":        "crictl pods -q",
		"the runtime's containers":  "crictl ps -aq",
		"/etc/kubernetes/manifests": "ls -A /etc/kubernetes/manifests 2>/dev/null || true",
		"/etc/kubernetes/pki":       "ls -A /etc/kubernetes/pki 2>/dev/null || true",
		"kubeadm's kubeconfigs":     "ls /etc/kubernetes/*.conf 2>/dev/null || true",
		"/var/lib/kubelet":          "ls -A /var/lib/kubelet 2>/dev/null || true",
		"the agent's process":       "pgrep -a -x kubelet || pgrep -a -x nodelet || true",
	}
	if controlPlane {
		checks["etcd's data"] = "ls -A /var/lib/etcd 2>/dev/null || true"
	}
	for what, script := range checks {
		out := g.run(t, script)
		if what == "the kubelet unit" {
			if out == "active" || out == "activating" {
				t.Errorf("guest %s after kubeadm reset: the kubelet unit is %s", g.name, out)
			}
			continue
		}
		if out != "" {
			t.Errorf("guest %s after kubeadm reset: %s is not clean:\n%s", g.name, what, out)
		}
	}
}

// inBoth runs do for every guest at once.
func inBoth(t *testing.T, guests []*guest, do func(ctx context.Context, g *guest) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(guests))
	for i, g := range guests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = do(t.Context(), g)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("guest %s: %v", guests[i].name, err)
		}
	}
}

func inGuest(ctx context.Context, g *guest, script string) error {
	out, err := g.output(ctx, script)
	if err != nil {
		return fmt.Errorf("%w\n$ %s\n%s", err, script, out)
	}
	return nil
}

// timed runs step and logs how long it took.
func timed(t *testing.T, what string, step func()) {
	t.Helper()
	started := time.Now()
	t.Logf("%s ...", what)
	step()
	t.Logf("%s: done in %s", what, time.Since(started).Round(time.Second))
}
