package cnishim

// Run is tested in process, against a stand-in nodelet: an HTTP server on
// a unix socket in a temporary folder. The real agent behind the real
// binary is tested in package network (TestShimAndAgentTogether).

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

func env(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

func run(t *testing.T, command, socket string) (string, int) {
	t.Helper()
	var stdout, stderr strings.Builder
	config := `{"cniVersion":"1.0.0","name":"pods","type":"nodelet-cni","socket":"` + socket + `"}`
	code := Run(env(map[string]string{"CNI_COMMAND": command, "CNI_CONTAINERID": "c1", "CNI_NETNS": "/proc/1/ns/net", "CNI_IFNAME": "eth0", "CNI_ARGS": "K8S_POD_NAME=web"}),
		strings.NewReader(config), &stdout, &stderr)
	return stdout.String(), code
}

func TestRunWithoutNodelet(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "agent.sock")
	started := time.Now()
	out, code := run(t, "ADD", socket)
	var cniErr types.Error
	if code != 1 || json.Unmarshal([]byte(out), &cniErr) != nil || cniErr.Code != types.ErrTryAgainLater || !strings.Contains(cniErr.Msg, "nodelet is not serving CNI on "+socket) {
		t.Errorf("ADD: exit %d, stdout %q; want a try-again-later error naming the socket", code, out)
	}
	if out, code := run(t, "DEL", socket); code != 0 || out != "" {
		t.Errorf("DEL: exit %d, stdout %q; want success and nothing printed", code, out)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("ADD and DEL without nodelet took %s", took)
	}
}

func TestRunForwardsToNodelet(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "agent.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decoding the request: %v", err)
		}
		resp := Response{Result: json.RawMessage(`{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/24"}]}`)}
		if got.Command == "CHECK" {
			resp = Response{Error: types.NewError(types.ErrInternal, "eth0 is gone", "")}
		}
		_ = json.NewEncoder(w).Encode(resp)
	})}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	t.Cleanup(func() {
		server.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the stand-in nodelet stopped serving with %v", err)
		}
	})

	out, code := run(t, "ADD", socket)
	if code != 0 || !strings.Contains(out, "10.1.0.5/24") {
		t.Errorf("ADD: exit %d, stdout %q; want nodelet's result", code, out)
	}
	if got.Command != "ADD" || got.ContainerID != "c1" || got.NetNS != "/proc/1/ns/net" || got.IfName != "eth0" || got.Args != "K8S_POD_NAME=web" || !strings.Contains(string(got.Config), socket) {
		t.Errorf("nodelet received %+v, want the CNI variables and the configuration", got)
	}
	out, code = run(t, "CHECK", socket)
	if code != 1 || !strings.Contains(out, "eth0 is gone") {
		t.Errorf("CHECK: exit %d, stdout %q; want nodelet's error", code, out)
	}
	out, code = run(t, "VERSION", socket)
	if code != 0 || !strings.Contains(out, `"supportedVersions"`) {
		t.Errorf("VERSION: exit %d, stdout %q", code, out)
	}
}
