package network

// The agent's calls with the real plugins, on the network namespaces of
// netns_test.go; its garbage collection is tested in agent_gc_test.go, the
// shim and the agent's socket together in agent_server_test.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/network/cnishim"
)

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
	await.Eventually(t, 30*time.Second, "the plugins' CHECKs after the ADD of "+containerID, await.Condition(func(context.Context) (bool, error) {
		att, ok := a.get(attachmentKey{containerID, "eth0"})
		return ok && att.record.Baselined, nil
	}))
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
	// The namespace's end takes its veth pair with it, but the kernel
	// tears a namespace down in the background, later under load.
	await.Eventually(t, 30*time.Second, "the namespace's veth to leave the bridge", await.Condition(func(ctx context.Context) (bool, error) {
		if links := inNS(t, n.hostNS, "ip", "-o", "link", "show", "master", n.bridge); strings.TrimSpace(links) != "" {
			return false, fmt.Errorf("veths left on the bridge: %s", links)
		}
		return true, nil
	}))
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
