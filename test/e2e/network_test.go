package e2e

// The pod network, as a user and the node see it. `make test` runs these
// cases twice: on a stack whose runtime runs CNI (--network-mode=runtime)
// and on one where nodelet does (--network-mode=agent); Env.NetworkMode
// says which. The node's conflist is nodelet's in both (bridge,
// host-local, portmap, bandwidth), its addresses kept under nodelet's root
// dir.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

const webText = "hello-from-web"

// webPod serves webText over HTTP on port 8080 with busybox httpd.
func webPod(ns, name string) *podBuilder {
	return newPod(ns, name).withShell("mkdir -p /www && echo " + webText + " >/www/index.html && exec httpd -f -p 8080 -h /www")
}

func (b *podBuilder) withHostPort(containerPort, hostPort int32) *podBuilder {
	b.pod.Spec.Containers[0].Ports = append(b.pod.Spec.Containers[0].Ports,
		corev1.ContainerPort{ContainerPort: containerPort, HostPort: hostPort, Protocol: corev1.ProtocolTCP})
	return b
}

func (b *podBuilder) withAnnotation(key, value string) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[key] = value
	return b
}

// nodePodCIDR is the pod subnet the controller-manager gave the node.
func (f *Framework) nodePodCIDR(t *testing.T) *net.IPNet {
	t.Helper()
	node, err := f.Client.CoreV1().Nodes().Get(t.Context(), f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting node %s: %v", f.Env.NodeName, err)
	}
	_, cidr, err := net.ParseCIDR(node.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s has no usable spec.podCIDR %q: %v", node.Name, node.Spec.PodCIDR, err)
	}
	return cidr
}

// allocatedIPs are the addresses host-local holds in its store under
// nodelet's root dir (one file per address, named after it).
func (f *Framework) allocatedIPs() (map[string]bool, error) {
	dir := filepath.Join(f.Env.NodeletRootDir, "cni", "networks", f.Env.CNINetworkName)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	ips := map[string]bool{}
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			ips[e.Name()] = true
		}
	}
	return ips, nil
}

// bridgeVeths are the interfaces plugged into the node's pod bridge.
func (f *Framework) bridgeVeths() ([]string, error) {
	out, err := exec.Command("ip", "-o", "link", "show", "master", f.Env.CNIBridge).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "does not exist") {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the veths of %s: %w: %s", f.Env.CNIBridge, err, out)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 {
			names = append(names, strings.SplitN(strings.TrimSuffix(fields[1], ":"), "@", 2)[0])
		}
	}
	return names, nil
}

// netnsMounts are the network namespaces the runtime keeps mounted under
// the stack's state folder.
func (f *Framework) netnsMounts() ([]string, error) {
	all, err := NodeMounts()
	if err != nil {
		return nil, err
	}
	var mounts []string
	for _, m := range all {
		if strings.HasPrefix(m.Point, f.Env.StateDir+"/") && strings.Contains(m.Point, "/netns/") {
			mounts = append(mounts, m.Point)
		}
	}
	return mounts, nil
}

// readySandboxes counts the runtime's ready sandboxes not on the host's
// network, each of which holds one address, one veth and one namespace.
func (f *Framework) readyPodNetworkSandboxes(ctx context.Context) (int, error) {
	sandboxes, err := f.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sb := range sandboxes {
		status, err := f.Runtime.PodSandboxStatus(ctx, sb.Id, false)
		if err != nil {
			return 0, err
		}
		if status.GetStatus().GetLinux().GetNamespaces().GetOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
			n++
		}
	}
	return n, nil
}

// livePodIPs are the IPs of the node's pods that have not finished.
func (f *Framework) livePodIPs(ctx context.Context) (map[string]bool, error) {
	pods, err := f.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + f.Env.NodeName})
	if err != nil {
		return nil, err
	}
	ips := map[string]bool{}
	for _, pod := range pods.Items {
		// A pod that ran to completion keeps its podIP in its status, but
		// its sandbox and address are gone.
		if pod.Spec.HostNetwork || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ip := range pod.Status.PodIPs {
			ips[ip.IP] = true
		}
	}
	return ips, nil
}

func TestNetworkPodsReachEachOtherByPodIP(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	server := f.createPod(t, webPod(ns, "server").obj())
	server = f.waitForPod(t, server, podStartTimeout, "to be Running and Ready", runningAndReady)

	// busybox nc, as busybox wget crashes here.
	client := f.createPod(t, newPod(ns, "client").withRestartPolicy(corev1.RestartPolicyNever).
		withShell(fmt.Sprintf(`for i in 1 2 3 4 5; do printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 8080 | grep %s && exit 0; sleep 1; done; exit 1`, server.Status.PodIP, webText)).obj())
	f.waitForPod(t, client, podStartTimeout, "to reach the server and succeed", func(pod *corev1.Pod) (bool, error) {
		return pod.Status.Phase == corev1.PodSucceeded, failedIfPhase(pod, corev1.PodFailed)
	})
}

func TestNetworkHostPortReachableAtTheNodeAddress(t *testing.T) {
	t.Parallel()
	if f.Env.NodeIP == "" || f.Env.NodeletPort == "" {
		t.Fatal("the env file names no NODE_IP or NODELET_PORT")
	}
	// A port of this stack's own (its ports are spaced a hundred apart).
	nodeletPort, err := strconv.Atoi(f.Env.NodeletPort)
	if err != nil {
		t.Fatalf("NODELET_PORT %q: %v", f.Env.NodeletPort, err)
	}
	hostPort := int32(nodeletPort + 40)
	ns := f.NewNamespace(t)
	pod := f.createPod(t, webPod(ns, "web").withHostPort(8080, hostPort).obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	address := net.JoinHostPort(f.Env.NodeIP, strconv.Itoa(int(hostPort)))
	var last string
	err = await.Poll(t.Context(), 30*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		last = httpGet(address)
		return strings.Contains(last, webText), nil
	}))
	if err != nil {
		t.Fatalf("GET http://%s/ never answered %q: %v; last answer: %q", address, webText, err, last)
	}
}

// httpGet sends a plain HTTP/1.0 GET and returns what came back, or the
// error's text.
func httpGet(address string) string {
	conn, err := net.DialTimeout("tcp", address, 2*time.Second)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return err.Error()
	}
	data, err := io.ReadAll(conn)
	if err != nil {
		return string(data) + err.Error()
	}
	return string(data)
}

func TestNetworkBandwidthAnnotationsShapeTheHostSideVeth(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "shaped").
		withAnnotation("kubernetes.io/ingress-bandwidth", "1M").
		withAnnotation("kubernetes.io/egress-bandwidth", "2M").
		withShell("cat /sys/class/net/eth0/iflink; exec sleep 3600").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// eth0's peer is the host-side veth; the pod prints its index.
	logPath := filepath.Join(f.podLogDir(pod), "app", "0.log")
	var lines []string
	await.Eventually(t, 30*time.Second, "the host-side veth's index in "+logPath, await.Condition(func(ctx context.Context) (bool, error) {
		lines = readCRILog(t, logPath)
		return len(lines) >= 1, nil
	}))
	index, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		t.Fatalf("the pod printed %q, not an interface index", lines[0])
	}
	veth, err := net.InterfaceByIndex(index)
	if err != nil {
		t.Fatalf("no host interface with index %d (eth0's peer): %v", index, err)
	}

	// Ingress to the pod is the veth's egress: a token bucket on it.
	qdiscs := run(t, "tc", "qdisc", "show", "dev", veth.Name)
	if !regexp.MustCompile(`qdisc tbf .* rate 1Mbit`).MatchString(qdiscs) {
		t.Errorf("qdiscs of %s = %q, want a tbf at 1Mbit for kubernetes.io/ingress-bandwidth", veth.Name, qdiscs)
	}
	// Egress from the pod is redirected to an ifb device shaped in turn.
	filters := run(t, "tc", "filter", "show", "dev", veth.Name, "ingress")
	match := regexp.MustCompile(`Redirect to device (\S+)\)`).FindStringSubmatch(filters)
	if match == nil {
		t.Fatalf("ingress filters of %s = %q, want a redirect to an ifb device for kubernetes.io/egress-bandwidth", veth.Name, filters)
	}
	if ifb := run(t, "tc", "qdisc", "show", "dev", match[1]); !regexp.MustCompile(`qdisc tbf .* rate 2Mbit`).MatchString(ifb) {
		t.Errorf("qdiscs of %s = %q, want a tbf at 2Mbit", match[1], ifb)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestNetworkPodIPsAreUniqueInThePodCIDRAndReleasedOnDeletion(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	cidr := f.nodePodCIDR(t)
	const n = 8
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = f.createPod(t, newPod(ns, fmt.Sprintf("p%d", i)).obj())
	}
	seen := map[string]string{}
	for i := range pods {
		pods[i] = f.waitForPod(t, pods[i], podStartTimeout, "to be Running and Ready", runningAndReady)
		ip := pods[i].Status.PodIP
		if parsed := net.ParseIP(ip); parsed == nil || !cidr.Contains(parsed) {
			t.Errorf("pod %s has podIP %q, want an address in the node's pod CIDR %s", pods[i].Name, ip, cidr)
		}
		if other, dup := seen[ip]; dup {
			t.Errorf("pods %s and %s share podIP %s", other, pods[i].Name, ip)
		}
		seen[ip] = pods[i].Name
		if len(pods[i].Status.PodIPs) != 1 || pods[i].Status.PodIPs[0].IP != ip {
			t.Errorf("pod %s podIPs = %v, want [%s]", pods[i].Name, pods[i].Status.PodIPs, ip)
		}
	}
	allocated, err := f.allocatedIPs()
	if err != nil {
		t.Fatal(err)
	}
	for ip, name := range seen {
		if !allocated[ip] {
			t.Errorf("pod %s's IP %s is not in the IPAM store", name, ip)
		}
	}
	if f.Env.agentMode() {
		t.Run("the pod IPs are the ones in nodelet's own CNI results", func(t *testing.T) {
			for _, pod := range pods {
				sandboxes := f.runtimeSandboxes(t, pod.UID)
				if len(sandboxes) != 1 {
					t.Fatalf("pod %s has sandboxes %s, want one", pod.Name, describeSandboxes(sandboxes))
				}
				if got := f.agentResultIP(t, sandboxes[0].Id); got != pod.Status.PodIP {
					t.Errorf("pod %s: podIP %s, nodelet's cached CNI result for sandbox %s says %s", pod.Name, pod.Status.PodIP, shortID(sandboxes[0].Id), got)
				}
			}
		})
	}

	for _, pod := range pods {
		f.deletePod(t, pod, nil)
	}
	for _, pod := range pods {
		f.waitForPodGone(t, pod, time.Minute)
	}
	var held []string
	await.Eventually(t, 30*time.Second, "the deleted pods' IPs to leave the IPAM store", await.Condition(func(ctx context.Context) (bool, error) {
		allocated, err := f.allocatedIPs()
		if err != nil {
			return false, err
		}
		held = nil
		for ip := range seen {
			if allocated[ip] {
				held = append(held, ip)
			}
		}
		return len(held) == 0, nil
	}))
}

// agentResultIP reads the first IP of nodelet's cached ADD result for a
// sandbox (agent mode: libcni's cache under nodelet's root dir).
func (f *Framework) agentResultIP(t *testing.T, sandboxID string) string {
	t.Helper()
	path := filepath.Join(f.Env.NodeletRootDir, "cni", "cache", "results", f.Env.CNINetworkName+"-"+sandboxID+"-eth0")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading nodelet's cached CNI result: %v", err)
	}
	var cached struct {
		Result struct {
			IPs []struct {
				Address string `json:"address"`
			} `json:"ips"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &cached); err != nil || len(cached.Result.IPs) == 0 {
		t.Fatalf("nodelet's cached CNI result %s: %v: %s", path, err, data)
	}
	ip, _, _ := net.ParseCIDR(cached.Result.IPs[0].Address)
	return ip.String()
}

// checkAgentCallLogs reads nodelet's per-container logs of plugin calls
// (agent mode): no container had a plugin's ADD run twice, and at least
// wantSandboxes containers had one.
func (f *Framework) checkAgentCallLogs(t *testing.T, wantSandboxes int) {
	t.Helper()
	dir := filepath.Join(f.Env.NodeletRootDir, "cni")
	records, err := os.ReadDir(filepath.Join(dir, "attachments"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := f.readyPodNetworkSandboxes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != live {
		t.Errorf("%d attachment records for %d ready sandboxes", len(records), live)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "calls", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		adds := map[string]int{}
		for _, line := range strings.Split(string(data), "\n") {
			if fields := strings.Fields(line); len(fields) == 3 && fields[1] == "ADD" {
				adds[fields[2]]++
			}
		}
		for plugin, count := range adds {
			if count > 1 {
				t.Errorf("container %s: plugin %s ran ADD %d times:\n%s", strings.TrimSuffix(filepath.Base(path), ".log"), plugin, count, data)
			}
		}
		if adds["bridge"] > 0 {
			added++
		}
	}
	if added < wantSandboxes {
		t.Errorf("%d containers' logs show a bridge ADD, want at least %d (one per pod)", added, wantSandboxes)
	}
}

// TestNetworkAgentModeBrokenPodNetworkHasItsSandboxRecreated is for the
// agent network mode only, where nodelet CHECKs pod networks; in the
// runtime mode the runtime owns them, and make test leaves it out there.
func TestNetworkAgentModeBrokenPodNetworkHasItsSandboxRecreated(t *testing.T) {
	t.Parallel()
	if !f.Env.agentMode() {
		t.Skip("nodelet CHECKs pod networks in the agent network mode; in the runtime mode the runtime owns them")
	}
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "victim").withShell("cat /sys/class/net/eth0/iflink; exec sleep 3600").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	before := f.runtimeSandboxes(t, pod.UID)
	logPath := filepath.Join(f.podLogDir(pod), "app", "0.log")
	var lines []string
	await.Eventually(t, 30*time.Second, "the host-side veth's index in "+logPath, await.Condition(func(ctx context.Context) (bool, error) {
		lines = readCRILog(t, logPath)
		return len(lines) >= 1, nil
	}))
	index, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	veth, err := net.InterfaceByIndex(index)
	if err != nil {
		t.Fatalf("no host interface with index %q: %v", lines[0], err)
	}
	run(t, "ip", "link", "delete", veth.Name)

	// The stack CHECKs every 5s (--cni-check-period).
	pod = f.waitForPod(t, pod, 2*time.Minute, "to run again in a new sandbox", func(p *corev1.Pod) (bool, error) {
		app := containerStatus(p, "app")
		return app != nil && app.RestartCount >= 1 && app.State.Running != nil && podReady(p), nil
	})
	after := f.runtimeSandboxes(t, pod.UID)
	var ready []string
	for _, sb := range after {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready = append(ready, sb.Id)
			for _, old := range before {
				if old.Id == sb.Id {
					t.Errorf("the broken sandbox %s is still the ready one", shortID(sb.Id))
				}
			}
		}
	}
	if len(ready) != 1 {
		t.Errorf("sandboxes after the repair: %s, want one ready", describeSandboxes(after))
	}
	await.Eventually(t, 30*time.Second, "a SandboxChanged event", await.Condition(func(ctx context.Context) (bool, error) {
		events, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=victim,reason=SandboxChanged"})
		return err == nil && len(events.Items) > 0, err
	}))
}

// TestNetworkSandboxesWhileNodeletIsDown creates and removes sandboxes
// straight through the runtime while nodelet is stopped. In the agent
// mode the shim fails an ADD at once with a clear message, never holds a
// teardown, and nodelet deletes what it was not told of once it is back;
// in the runtime mode the runtime needs no nodelet. It stops nodelet, so
// it runs alone (no t.Parallel).
func TestNetworkSandboxesWhileNodeletIsDown(t *testing.T) {
	ctx := t.Context()
	sandboxConfig := func(name string) *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "nodelet-down", Uid: fmt.Sprintf("%s-%d", name, time.Now().UnixNano())},
			Hostname: name,
			Linux: &runtimeapi.LinuxPodSandboxConfig{
				CgroupParent:    filepath.Join(f.Env.CgroupRoot, "down"),
				SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}},
			},
		}
	}
	// One sandbox made while nodelet runs, removed while it is down.
	early, err := f.Runtime.RunPodSandbox(ctx, sandboxConfig("early"), "")
	if err != nil {
		t.Fatalf("RunPodSandbox with nodelet running: %v", err)
	}
	status, err := f.Runtime.PodSandboxStatus(ctx, early, false)
	if err != nil {
		t.Fatal(err)
	}
	earlyIP := status.GetStatus().GetNetwork().GetIp()
	if earlyIP == "" {
		t.Fatalf("sandbox %s has no IP", shortID(early))
	}

	if err := f.Nodelet.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping nodelet: %v", err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			f.restartNodelet(t)
		}
	})

	started := time.Now()
	if err := f.Runtime.StopPodSandbox(ctx, early); err != nil {
		t.Fatalf("StopPodSandbox with nodelet down: %v", err)
	}
	if err := f.Runtime.RemovePodSandbox(ctx, early); err != nil {
		t.Fatalf("RemovePodSandbox with nodelet down: %v", err)
	}
	if took := time.Since(started); took > 30*time.Second {
		t.Errorf("tearing a sandbox down with nodelet down took %s", took)
	}
	allocated, err := f.allocatedIPs()
	if err != nil {
		t.Fatal(err)
	}
	switch held := allocated[earlyIP]; {
	case f.Env.agentMode() && !held:
		t.Errorf("the IPAM store no longer holds %s, though nodelet, which runs CNI, was down during the teardown", earlyIP)
	case !f.Env.agentMode() && held:
		t.Errorf("the IPAM store still holds %s after the runtime's teardown", earlyIP)
	}

	started = time.Now()
	id, err := f.Runtime.RunPodSandbox(ctx, sandboxConfig("late"), "")
	took := time.Since(started)
	switch {
	case f.Env.agentMode():
		if err == nil {
			t.Errorf("RunPodSandbox with nodelet down succeeded (sandbox %s), want the shim's failure", shortID(id))
		} else if !strings.Contains(err.Error(), "nodelet is not serving CNI") {
			t.Errorf("RunPodSandbox with nodelet down failed with %q, want it to say nodelet is not serving CNI", err)
		}
		if took > 30*time.Second {
			t.Errorf("the failed RunPodSandbox took %s, want the shim to fail at once", took)
		}
	default:
		if err != nil {
			t.Errorf("RunPodSandbox with nodelet down: %v; the runtime runs CNI without nodelet", err)
		}
	}
	if err == nil {
		if err := f.Runtime.StopPodSandbox(ctx, id); err != nil {
			t.Errorf("StopPodSandbox: %v", err)
		}
		if err := f.Runtime.RemovePodSandbox(ctx, id); err != nil {
			t.Errorf("RemovePodSandbox: %v", err)
		}
	}

	restarted = true
	f.restartNodelet(t)
	// In the agent mode nodelet learns of the removed sandbox from its
	// records, and deletes its network.
	await.Eventually(t, time.Minute, "the removed sandbox's IP "+earlyIP+" to leave the IPAM store", await.Condition(func(ctx context.Context) (bool, error) {
		allocated, err := f.allocatedIPs()
		return err == nil && !allocated[earlyIP], err
	}))
}
