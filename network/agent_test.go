package network

// The agent is tested with the real CNI plugins (bridge, host-local,
// loopback, portmap, bandwidth from Debian's containernetworking-plugins in
// /usr/lib/cni), on network namespaces the tests create: one stands for
// the node (the plugins run in it, so the bridge, the iptables rules and
// the qdiscs never touch the machine's own network), one for each pod
// sandbox. They need root; without it, or without the plugins, they skip
// saying why. The shim and the agent's socket server are tested together
// in TestShimAndAgentTogether, with the shim built from cmd/nodelet-cni.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/network/cnishim"
)

const pluginDir = "/usr/lib/cni"

func requireRootAndPlugins(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates network namespaces and runs the CNI plugins in them (CI runs the unit tests as root)")
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback", "portmap", "bandwidth"} {
		if _, err := os.Stat(filepath.Join(pluginDir, plugin)); err != nil {
			t.Skipf("the CNI plugins are not installed in %s (Debian package containernetworking-plugins): %v", pluginDir, err)
		}
	}
	for _, tool := range []string{"nsenter", "ip", "tc", "iptables-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
}

// newNetNS creates a network namespace, bind-mounted at a file in a
// temporary folder, and removes it when the test ends.
func newNetNS(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "netns")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		// The thread is left locked, so it ends with the goroutine, and
		// its namespace with it once unmounted.
		goruntime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		errc <- unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "none", unix.MS_BIND, "")
	}()
	if err := <-errc; err != nil {
		t.Fatalf("creating a network namespace: %v", err)
	}
	t.Cleanup(func() { removeNetNS(path) })
	return path
}

func removeNetNS(path string) {
	_ = unix.Unmount(path, unix.MNT_DETACH)
	_ = os.Remove(path)
}

// nsExec runs the plugins inside the test's node namespace.
type nsExec struct {
	invoke.Exec
	netns string
}

func (e nsExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		// A child process inherits the namespace of the thread that
		// starts it; the locked thread is thrown away afterwards.
		goruntime.LockOSThread()
		fd, err := unix.Open(e.netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{nil, err}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			done <- result{nil, err}
			return
		}
		out, err := e.Exec.ExecPlugin(ctx, pluginPath, stdin, environ)
		done <- result{out, err}
	}()
	r := <-done
	return r.out, r.err
}

// inNS runs a command in a network namespace and returns its output.
func inNS(t *testing.T, netns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + netns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v in %s: %v\n%s", args, netns, err, out)
	}
	return string(out)
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// testNet is one agent with its node namespace and configuration.
type testNet struct {
	agent    *Agent
	opts     AgentOptions
	hostNS   string
	bridge   string
	ipamDir  string
	pod      *corev1.Pod
	mu       sync.Mutex
	sandbox  map[string]SandboxState
	brokenCh chan PodRef
}

// newTestNet sets up an agent whose configuration is the node's conflist
// for podCIDRs with the loopback plugin in front.
func newTestNet(t *testing.T, podCIDRs ...string) *testNet {
	t.Helper()
	dir := t.TempDir()
	n := &testNet{
		hostNS:   newNetNS(t),
		bridge:   "nlt" + randomSuffix(t),
		ipamDir:  filepath.Join(dir, "ipam"),
		sandbox:  map[string]SandboxState{},
		brokenCh: make(chan PodRef, 10),
	}
	conf, err := RenderConflist(ConfigOptions{NetworkName: "testnet", Bridge: n.bridge, PodCIDRs: podCIDRs, IPAMDataDir: n.ipamDir})
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(conf, &list); err != nil {
		t.Fatal(err)
	}
	list["plugins"] = append([]any{map[string]any{"type": "loopback"}}, list["plugins"].([]any)...)
	conf, _ = json.Marshal(list)
	confDir := filepath.Join(dir, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-testnet.conflist"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	n.opts = AgentOptions{
		ConfDir:  confDir,
		BinDir:   pluginDir,
		StateDir: filepath.Join(dir, "state"),
		Socket:   filepath.Join(dir, "agent.sock"),
		PodCIDRs: func() []string { return podCIDRs },
		Pod: func(_ context.Context, namespace, name string) (*corev1.Pod, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.pod != nil && n.pod.Namespace == namespace && n.pod.Name == name {
				return n.pod.DeepCopy(), nil
			}
			return nil, nil
		},
		Sandboxes: func(context.Context) (map[string]SandboxState, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			out := map[string]SandboxState{}
			for id, state := range n.sandbox {
				out[id] = state
			}
			return out, nil
		},
		OnBroken: func(pod PodRef) { n.brokenCh <- pod },
		Log:      testr.New(t),
		Exec:     nsExec{Exec: &invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}, PluginDecoder: version.PluginDecoder{}}, netns: n.hostNS},
	}
	n.agent = n.newAgent(t)
	return n
}

// newAgent starts another agent on the same state, as a restarted nodelet.
func (n *testNet) newAgent(t *testing.T) *Agent {
	t.Helper()
	agent, err := NewAgent(n.opts)
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

func (n *testNet) setSandbox(id string, state SandboxState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sandbox[id] = state
}

// request is a call as the shim forwards it, for a sandbox of pod ns/name.
func request(command, containerID, netns string) cnishim.Request {
	return cnishim.Request{
		Command:     command,
		ContainerID: containerID,
		NetNS:       netns,
		IfName:      "eth0",
		Args:        "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=" + containerID + ";K8S_POD_UID=uid-1",
		Config:      json.RawMessage(`{"cniVersion":"1.0.0","name":"shim","type":"nodelet-cni","socket":"/unused"}`),
	}
}

func mustAdd(t *testing.T, a *Agent, req cnishim.Request) *current.Result {
	t.Helper()
	resp := a.Handle(context.Background(), req)
	if resp.Error != nil {
		t.Fatalf("ADD of %s: %v", req.ContainerID, resp.Error)
	}
	result, err := current.NewResultFromResult(mustDecodeResult(t, resp.Result))
	if err != nil {
		t.Fatal(err)
	}
	return result
}

func mustDecodeResult(t *testing.T, data []byte) types.Result {
	t.Helper()
	result, err := current.NewResult(data)
	if err != nil {
		t.Fatalf("decoding result %s: %v", data, err)
	}
	return result
}

func mustHandle(t *testing.T, a *Agent, req cnishim.Request) {
	t.Helper()
	if resp := a.Handle(context.Background(), req); resp.Error != nil {
		t.Fatalf("%s of %s: %v", req.Command, req.ContainerID, resp.Error)
	}
}

// allocated lists the addresses host-local holds in its store.
func (n *testNet) allocated(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(n.ipamDir, "testnet"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			ips = append(ips, e.Name())
		}
	}
	return ips
}

// hostVeth is the host side of the sandbox's interface in a result.
func hostVeth(t *testing.T, result *current.Result, bridge string) string {
	t.Helper()
	for _, iface := range result.Interfaces {
		if iface.Sandbox == "" && iface.Name != bridge {
			return iface.Name
		}
	}
	t.Fatalf("no host-side interface in result %v", result)
	return ""
}

func callLog(t *testing.T, n *testNet, containerID string) []string {
	t.Helper()
	data, err := os.ReadFile(CallLogPath(n.opts.StateDir, containerID))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		calls = append(calls, strings.Join(fields[1:], " "))
	}
	return calls
}

// waitBaselined waits for the CHECKs that follow an ADD.
func waitBaselined(t *testing.T, a *Agent, containerID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		att, ok := a.get(attachmentKey{containerID, "eth0"})
		if ok && att.record.Baselined {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugins were not CHECKed within 30s of the ADD of %s", containerID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAgentAddCheckDelWithRealPlugins(t *testing.T) {
	requireRootAndPlugins(t)
	n := newTestNet(t, "10.123.1.0/24")
	n.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1", Annotations: map[string]string{AnnotationIngressBandwidth: "1M"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
		}}},
	}
	sandbox := newNetNS(t)
	const id = "sandbox-a"
	if err := n.agent.Status(context.Background()); err != nil {
		t.Fatalf("Status() = %v, want a usable configuration", err)
	}

	result := mustAdd(t, n.agent, request("ADD", id, sandbox))
	n.setSandbox(id, SandboxReady)
	ips, known := n.agent.PodIPs(id)
	if !known || len(ips) != 1 || !strings.HasPrefix(ips[0], "10.123.1.") {
		t.Fatalf("PodIPs() = %v, %v; want one address in 10.123.1.0/24", ips, known)
	}
	if got := inNS(t, sandbox, "ip", "-o", "-4", "addr", "show", "dev", "eth0"); !strings.Contains(got, ips[0]+"/24") {
		t.Errorf("eth0 in the sandbox has %q, want %s", got, ips[0])
	}
	if got := inNS(t, sandbox, "ip", "-o", "link", "show", "dev", "lo"); !strings.Contains(got, "UP") {
		t.Errorf("the loopback plugin did not bring lo up: %q", got)
	}
	if diff := slices.Compare(n.allocated(t), ips); diff != 0 {
		t.Errorf("host-local holds %v, want %v", n.allocated(t), ips)
	}

	t.Run("CNI_ARGS and the pod's capabilities reach the plugins", func(t *testing.T) {
		rec := n.agent.attachments[attachmentKey{id, "eth0"}].record
		wantArgs := [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "web"}, {"K8S_POD_INFRA_CONTAINER_ID", id}, {"K8S_POD_UID", "uid-1"}}
		if !slices.Equal(rec.Args, wantArgs) {
			t.Errorf("CNI_ARGS = %v, want %v", rec.Args, wantArgs)
		}
		nat := inNS(t, n.hostNS, "iptables-save", "-t", "nat")
		if !strings.Contains(nat, "--dport 8080") || !strings.Contains(nat, "--to-destination "+ips[0]+":80") {
			t.Errorf("no DNAT of host port 8080 to %s:80 in the node's nat table:\n%s", ips[0], nat)
		}
		qdisc := inNS(t, n.hostNS, "tc", "qdisc", "show", "dev", hostVeth(t, result, n.bridge))
		if !strings.Contains(qdisc, "tbf") || !strings.Contains(qdisc, "rate 1Mbit") {
			t.Errorf("host-side veth qdiscs = %q, want a tbf at 1Mbit for the ingress-bandwidth annotation", qdisc)
		}
	})

	t.Run("a second ADD answers from the cache without running a plugin", func(t *testing.T) {
		again := mustAdd(t, n.agent, request("ADD", id, sandbox))
		if again.IPs[0].Address.String() != result.IPs[0].Address.String() {
			t.Errorf("second ADD gave %v, want %v", again.IPs, result.IPs)
		}
		want := []string{"ADD loopback", "ADD bridge", "ADD portmap", "ADD bandwidth"}
		var got []string
		for _, call := range callLog(t, n, id) {
			if strings.HasPrefix(call, "ADD ") {
				got = append(got, call)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("plugin calls = %v, want each ADD once: %v", got, want)
		}
	})

	waitBaselined(t, n.agent, id)
	t.Run("CHECK passes on a sound network", func(t *testing.T) {
		mustHandle(t, n.agent, request("CHECK", id, sandbox))
	})

	t.Run("a veth deleted by hand fails the periodic CHECK and withdraws the IPs", func(t *testing.T) {
		inNS(t, n.hostNS, "ip", "link", "delete", hostVeth(t, result, n.bridge))
		n.agent.checkAll(context.Background())
		select {
		case pod := <-n.brokenCh:
			if pod != (PodRef{Namespace: "ns", Name: "web", UID: "uid-1"}) {
				t.Errorf("OnBroken(%v), want ns/web uid-1", pod)
			}
		default:
			t.Fatal("the broken network was not reported")
		}
		if ips, known := n.agent.PodIPs(id); !known || len(ips) != 0 {
			t.Errorf("PodIPs() = %v, %v after a failed CHECK; want none, known", ips, known)
		}
	})

	t.Run("DEL releases everything and is idempotent", func(t *testing.T) {
		mustHandle(t, n.agent, request("DEL", id, sandbox))
		if got := n.allocated(t); len(got) != 0 {
			t.Errorf("host-local still holds %v after DEL", got)
		}
		if nat := inNS(t, n.hostNS, "iptables-save", "-t", "nat"); strings.Contains(nat, "--dport 8080") {
			t.Errorf("the host port's DNAT is still there after DEL:\n%s", nat)
		}
		if _, known := n.agent.PodIPs(id); known {
			t.Errorf("PodIPs() still knows the sandbox after DEL")
		}
		mustHandle(t, n.agent, request("DEL", id, sandbox))
		if entries, _ := os.ReadDir(n.opts.recordDir()); len(entries) != 0 {
			t.Errorf("records left after DEL: %v", entries)
		}
	})
}

func TestAgentDelAfterTheNamespaceIsGone(t *testing.T) {
	requireRootAndPlugins(t)
	n := newTestNet(t, "10.123.2.0/24")
	sandbox := newNetNS(t)
	mustAdd(t, n.agent, request("ADD", "sandbox-b", sandbox))
	removeNetNS(sandbox)

	mustHandle(t, n.agent, request("DEL", "sandbox-b", sandbox))
	if got := n.allocated(t); len(got) != 0 {
		t.Errorf("host-local still holds %v after DEL", got)
	}
	if links := inNS(t, n.hostNS, "ip", "-o", "link", "show", "master", n.bridge); strings.TrimSpace(links) != "" {
		t.Errorf("veths left on the bridge: %s", links)
	}
}

func TestAgentDualStackFromTheIPRangesCapability(t *testing.T) {
	requireRootAndPlugins(t)
	n := newTestNet(t, "10.123.3.0/24", "fd00:123:3::/64")
	// host-local with no ranges of its own: it allocates from the pod
	// CIDRs nodelet passes as the ipRanges capability.
	conf := `{"cniVersion":"1.0.0","name":"testnet","plugins":[
	  {"type":"bridge","bridge":"` + n.bridge + `","isGateway":true,"capabilities":{"ipRanges":true},
	   "ipam":{"type":"host-local","routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"}],"dataDir":"` + n.ipamDir + `"}}]}`
	if err := os.WriteFile(filepath.Join(n.opts.ConfDir, "10-testnet.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	sandbox := newNetNS(t)
	mustAdd(t, n.agent, request("ADD", "sandbox-c", sandbox))
	ips, _ := n.agent.PodIPs("sandbox-c")
	if len(ips) != 2 || !strings.HasPrefix(ips[0], "10.123.3.") || !strings.HasPrefix(ips[1], "fd00:123:3:") {
		t.Fatalf("PodIPs() = %v, want an address of 10.123.3.0/24 then one of fd00:123:3::/64", ips)
	}
	if got := inNS(t, sandbox, "ip", "-o", "-6", "addr", "show", "dev", "eth0", "scope", "global"); !strings.Contains(got, ips[1]) {
		t.Errorf("eth0 has no %s: %q", ips[1], got)
	}
	mustHandle(t, n.agent, request("DEL", "sandbox-c", sandbox))
}

func TestAgentRestartKeepsAttachmentsAndCollectsTheGone(t *testing.T) {
	requireRootAndPlugins(t)
	n := newTestNet(t, "10.123.4.0/24")
	live, broken, gone := newNetNS(t), newNetNS(t), newNetNS(t)
	mustAdd(t, n.agent, request("ADD", "live", live))
	brokenResult := mustAdd(t, n.agent, request("ADD", "broken", broken))
	mustAdd(t, n.agent, request("ADD", "gone", gone))
	liveIPs, _ := n.agent.PodIPs("live")
	brokenIPs, _ := n.agent.PodIPs("broken")
	waitBaselined(t, n.agent, "live")
	waitBaselined(t, n.agent, "broken")

	// nodelet stops; meanwhile the runtime removes sandbox gone without
	// reaching it, and someone deletes sandbox broken's veth.
	removeNetNS(gone)
	inNS(t, n.hostNS, "ip", "link", "delete", hostVeth(t, brokenResult, n.bridge))
	n.setSandbox("live", SandboxReady)
	n.setSandbox("broken", SandboxReady)
	restarted := n.newAgent(t)

	if ips, known := restarted.PodIPs("live"); !known || !slices.Equal(ips, liveIPs) {
		t.Errorf("after a restart PodIPs(live) = %v, %v; want %v from the cache", ips, known, liveIPs)
	}
	restarted.garbageCollect(context.Background())
	want := append(append([]string(nil), liveIPs...), brokenIPs...)
	slices.Sort(want)
	if got := n.allocated(t); !slices.Equal(got, want) {
		t.Errorf("host-local holds %v after garbage collection, want only the ready sandboxes' %v", got, want)
	}
	if _, known := restarted.PodIPs("gone"); known {
		t.Errorf("the removed sandbox's attachment is still known")
	}

	// The CHECK after the restart finds the broken one, and only it.
	restarted.checkAll(context.Background())
	if reported := len(n.brokenCh); reported != 1 {
		t.Fatalf("%d networks reported broken after the restart, want 1", reported)
	}
	<-n.brokenCh
	if ips, known := restarted.PodIPs("broken"); !known || len(ips) != 0 {
		t.Errorf("PodIPs(broken) = %v, %v; want none, known", ips, known)
	}
	if ips, _ := restarted.PodIPs("live"); !slices.Equal(ips, liveIPs) {
		t.Errorf("PodIPs(live) = %v, want %v", ips, liveIPs)
	}
}

func TestAgentCollectsAnAddCutShort(t *testing.T) {
	requireRootAndPlugins(t)
	n := newTestNet(t, "10.123.5.0/24")
	// A list whose last plugin fails: the bridge has allocated an address
	// when the ADD fails, as when nodelet dies in the middle of one.
	conf := `{"cniVersion":"1.0.0","name":"testnet","plugins":[
	  {"type":"bridge","bridge":"` + n.bridge + `","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.123.5.0/24"}]],"dataDir":"` + n.ipamDir + `"}},
	  {"type":"tuning","sysctl":{"net.no.such.sysctl":"1"}}]}`
	if err := os.WriteFile(filepath.Join(n.opts.ConfDir, "10-testnet.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pluginDir, "tuning")); err != nil {
		t.Skipf("the tuning plugin is not installed: %v", err)
	}
	sandbox := newNetNS(t)
	resp := n.agent.Handle(context.Background(), request("ADD", "cut", sandbox))
	if resp.Error == nil {
		t.Fatal("ADD succeeded, want the tuning plugin's failure")
	}
	if got := n.allocated(t); len(got) != 1 {
		t.Fatalf("host-local holds %v after the failed ADD, want the bridge's one address", got)
	}
	removeNetNS(sandbox) // the runtime removes a failed sandbox's namespace
	n.newAgent(t).garbageCollect(context.Background())
	if got := n.allocated(t); len(got) != 0 {
		t.Errorf("host-local still holds %v after garbage collection", got)
	}
}

func TestAgentNotReadyWithoutConfiguration(t *testing.T) {
	dir := t.TempDir()
	agent, err := NewAgent(AgentOptions{ConfDir: filepath.Join(dir, "net.d"), BinDir: dir, StateDir: filepath.Join(dir, "state"), Socket: filepath.Join(dir, "s")})
	if err != nil {
		t.Fatal(err)
	}
	err = agent.Status(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no CNI configuration file in "+filepath.Join(dir, "net.d")) {
		t.Errorf("Status() = %v, want no configuration file", err)
	}
	resp := agent.Handle(context.Background(), request("ADD", "x", "/proc/self/ns/net"))
	if resp.Error == nil || resp.Error.Code != types.ErrTryAgainLater || !strings.Contains(resp.Error.Error(), "not ready") {
		t.Errorf("ADD answered %+v, want try again later: not ready", resp.Error)
	}

	// A configuration naming a plugin that is not there is not usable.
	if err := os.MkdirAll(filepath.Join(dir, "net.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"no-such-plugin"}]}`
	if err := os.WriteFile(filepath.Join(dir, "net.d", "10-x.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := agent.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "no-such-plugin") {
		t.Errorf("Status() = %v, want the missing plugin named", err)
	}
}

func TestIsStale(t *testing.T) {
	tests := map[string]struct {
		added, netns bool
		sandbox      SandboxState
		age          time.Duration
		want         bool
	}{
		"a ready sandbox's attachment stays":                                 {added: true, netns: true, sandbox: SandboxReady, want: false},
		"a stopped sandbox's attachment goes":                                {added: true, netns: true, sandbox: SandboxNotReady, want: true},
		"an ADD cut short goes":                                              {added: false, netns: true, sandbox: SandboxAbsent, want: true},
		"an attachment whose namespace is gone goes":                         {added: true, netns: false, sandbox: SandboxAbsent, want: true},
		"an unlisted sandbox with its namespace may still be being created":  {added: true, netns: true, sandbox: SandboxAbsent, age: time.Minute, want: false},
		"an unlisted sandbox with its namespace goes after the grace period": {added: true, netns: true, sandbox: SandboxAbsent, age: 3 * time.Minute, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := isStale(tc.added, tc.netns, tc.sandbox, tc.age); got != tc.want {
				t.Errorf("isStale() = %v, want %v", got, tc.want)
			}
		})
	}
}

// buildShim builds cmd/nodelet-cni into a temporary folder.
func buildShim(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), cnishim.PluginType)
	out, err := exec.Command("go", "build", "-o", bin, "github.com/nodelet/nodelet/cmd/nodelet-cni").CombinedOutput()
	if err != nil {
		t.Fatalf("building the shim: %v\n%s", err, out)
	}
	return bin
}

// runShim runs the shim binary as a runtime would.
func runShim(t *testing.T, bin, command, containerID, netns, socket string) (stdout string, exitCode int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"CNI_COMMAND="+command, "CNI_CONTAINERID="+containerID, "CNI_NETNS="+netns, "CNI_IFNAME=eth0",
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=uid-1", "CNI_PATH=/nowhere")
	conf, _ := RenderShimConfig("shimnet", socket)
	var list struct {
		Plugins []map[string]any `json:"plugins"`
	}
	_ = json.Unmarshal(conf, &list)
	plugin := list.Plugins[0]
	plugin["cniVersion"], plugin["name"] = "1.0.0", "shimnet"
	stdin, _ := json.Marshal(plugin)
	cmd.Stdin = strings.NewReader(string(stdin))
	var out strings.Builder
	cmd.Stdout = &out
	started := time.Now()
	err := cmd.Run()
	took = time.Since(started)
	if exitErr, ok := err.(*exec.ExitError); ok {
		return out.String(), exitErr.ExitCode(), took
	}
	if err != nil {
		t.Fatalf("running the shim: %v", err)
	}
	return out.String(), 0, took
}

func TestShimAndAgentTogether(t *testing.T) {
	requireRootAndPlugins(t)
	shim := buildShim(t)
	n := newTestNet(t, "10.123.6.0/24")
	sandbox := newNetNS(t)

	t.Run("without nodelet, ADD fails at once saying so and DEL succeeds", func(t *testing.T) {
		out, code, took := runShim(t, shim, "ADD", "s1", sandbox, n.opts.Socket)
		var cniErr types.Error
		if code == 0 || json.Unmarshal([]byte(out), &cniErr) != nil || cniErr.Code != types.ErrTryAgainLater || !strings.Contains(cniErr.Msg, "nodelet is not serving CNI") {
			t.Errorf("ADD without nodelet: exit %d, stdout %q; want a CNI error 11 saying nodelet is not serving", code, out)
		}
		if took > 5*time.Second {
			t.Errorf("ADD without nodelet took %s, want it to fail within the dial timeout", took)
		}
		if _, code, took := runShim(t, shim, "DEL", "s1", sandbox, n.opts.Socket); code != 0 || took > 5*time.Second {
			t.Errorf("DEL without nodelet: exit %d after %s, want success at once", code, took)
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- n.agent.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("agent stopped with %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if conn, err := net.Dial("unix", n.opts.Socket); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent's socket does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}

	t.Run("ADD, CHECK and DEL go through the shim to the real plugins", func(t *testing.T) {
		out, code, _ := runShim(t, shim, "ADD", "s1", sandbox, n.opts.Socket)
		if code != 0 {
			t.Fatalf("ADD through the shim: exit %d: %s", code, out)
		}
		result, err := current.NewResultFromResult(mustDecodeResult(t, []byte(out)))
		if err != nil || len(result.IPs) != 1 || !strings.Contains(out, `"cniVersion":"1.0.0"`) {
			t.Fatalf("ADD through the shim answered %s (%v), want a 1.0.0 result with one address", out, err)
		}
		n.setSandbox("s1", SandboxReady)
		if got := inNS(t, sandbox, "ip", "-o", "-4", "addr", "show", "dev", "eth0"); !strings.Contains(got, result.IPs[0].Address.IP.String()) {
			t.Errorf("eth0 has %q, want %s", got, result.IPs[0].Address.IP)
		}
		if out, code, _ := runShim(t, shim, "CHECK", "s1", sandbox, n.opts.Socket); code != 0 {
			t.Errorf("CHECK through the shim: exit %d: %s", code, out)
		}
		if out, code, _ := runShim(t, shim, "DEL", "s1", sandbox, n.opts.Socket); code != 0 {
			t.Errorf("DEL through the shim: exit %d: %s", code, out)
		}
		if got := n.allocated(t); len(got) != 0 {
			t.Errorf("host-local holds %v after DEL through the shim", got)
		}
	})

	t.Run("VERSION is answered by the shim itself", func(t *testing.T) {
		out, code, _ := runShim(t, shim, "VERSION", "", "", n.opts.Socket)
		if code != 0 || !strings.Contains(out, `"1.0.0"`) {
			t.Errorf("VERSION: exit %d: %s", code, out)
		}
	})
}

func TestInstallShim(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "built-shim")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := ShimOptions{BinaryPath: binary, RuntimeBinDir: filepath.Join(dir, "bin"), RuntimeConfDir: filepath.Join(dir, "net.d"), NetworkName: "pods", Socket: "/var/lib/nodelet/cni/agent.sock"}
	if err := InstallShim(opts); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(opts.RuntimeBinDir, cnishim.PluginType))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("installed shim: %v, %v; want an executable", info, err)
	}
	conf := readFile(t, filepath.Join(opts.RuntimeConfDir, ShimConfigFile))
	want := `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"nodelet-cni","socket":"/var/lib/nodelet/cni/agent.sock"}]}`
	if diff := cmp.Diff(decode(t, want), decode(t, conf)); diff != "" {
		t.Errorf("shim conflist mismatch (-want +got):\n%s", diff)
	}
	if ready, _ := Status(opts.RuntimeConfDir); !ready {
		t.Errorf("the runtime's folder has no configuration after the install")
	}
	removed, err := RemoveShimConfig(opts.RuntimeConfDir)
	if err != nil || !removed {
		t.Fatalf("RemoveShimConfig() = %v, %v; want true, nil", removed, err)
	}
	if names := dirNames(t, opts.RuntimeConfDir); len(names) != 0 {
		t.Errorf("the runtime's folder holds %v after the removal", names)
	}
}
