package network

// The shim and the agent's socket server together, with the shim built
// from cmd/nodelet-cni.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/network/cnishim"
)

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
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
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
	await.Eventually(t, 10*time.Second, "the agent's socket to answer", func(ctx context.Context) error {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", n.opts.Socket)
		if err != nil {
			return err
		}
		return conn.Close()
	})

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
