package e2e

// Who may open a stream on nodelet's port: exec, attach, port-forward and
// run are a create on nodes/proxy over SPDY (POST) and WebSocket (GET)
// alike, so a user who may only get nodes/proxy, as reading pods or
// metrics through the node proxy needs, runs nothing in the node's
// containers. (The kubelet takes a WebSocket GET as get.) The port is
// called directly, as in node_api_test.go: through the API server, its
// own create check on pods/exec would refuse first and hide the node's.

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	streamprotocol "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// responseCodes keeps the status codes of the responses a client got.
type responseCodes struct {
	mu    sync.Mutex
	codes []int
}

func (s *responseCodes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			s.mu.Lock()
			s.codes = append(s.codes, resp.StatusCode)
			s.mu.Unlock()
		}
		return resp, err
	})
}

func (s *responseCodes) seen() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.codes...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// nodeRESTConfig is a client configuration for nodelet's port with a
// bearer token, the responses' status codes kept in codes. nodelet's
// serving certificate is not checked, as the API server does not check
// it.
func (f *Framework) nodeRESTConfig(token string, codes *responseCodes) *rest.Config {
	return &rest.Config{
		Host:            "https://127.0.0.1:" + f.Env.NodeletPort,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		WrapTransport:   codes.wrap,
	}
}

func TestNodeAPIExecNeedsCreate(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "target").obj())
	onProxy := func(verb string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{verb}}
	}
	reader := f.serviceAccountToken(t, ns, "reader", onProxy("get"))
	runner := f.serviceAccountToken(t, ns, "runner", onProxy("create"))
	readerName, runnerName := "system:serviceaccount:"+ns+":reader", "system:serviceaccount:"+ns+":runner"
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// RBAC sees a new binding a moment late, and nodelet would remember an
	// early refusal for 30 seconds: ask once the API server allows each
	// user what it was granted, so that a refusal is the verb's alone.
	f.waitForNodeVerb(t, readerName, "get", "proxy")
	f.waitForNodeVerb(t, runnerName, "create", "proxy")
	// The reader's grant is in force: it reads the node's pods through
	// nodes/proxy.
	if code, body, err := f.nodeAPI(t.Context(), "/pods", nil, reader); err != nil || code != http.StatusOK {
		t.Fatalf("GET /pods as a user who may get nodes/proxy: %d %.200q %v, want 200", code, body, err)
	}

	execURL := &url.URL{
		Scheme: "https", Host: "127.0.0.1:" + f.Env.NodeletPort, Path: "/exec/" + ns + "/target/app",
		RawQuery: url.Values{"command": {"sh", "-c", "echo out; echo err >&2"}, "output": {"1"}, "error": {"1"}}.Encode(),
	}
	// kubectl's executors, but for the WebSocket protocol: nodelet relays
	// the stream to the runtime's streaming server, which speaks WebSocket
	// up to v4 (v5 is the API server's, translated to SPDY on its way to
	// the node).
	executors := map[string]func(*rest.Config) (remotecommand.Executor, error){
		"SPDY": func(c *rest.Config) (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(c, http.MethodPost, execURL)
		},
		"WebSocket": func(c *rest.Config) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutorForProtocols(c, http.MethodGet, execURL.String(),
				streamprotocol.StreamProtocolV5Name, streamprotocol.StreamProtocolV4Name)
		},
	}
	exec := func(t *testing.T, protocol, token string) (stdout, stderr string, codes []int, err error) {
		t.Helper()
		recorder := &responseCodes{}
		executor, err := executors[protocol](f.nodeRESTConfig(token, recorder))
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err = executor.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		return out.String(), errOut.String(), recorder.seen(), err
	}
	forbidden := fmt.Sprintf("Forbidden (user=%s, verb=create, resource=nodes, subresource(s)=[proxy])", readerName)

	for protocol := range executors {
		t.Run(protocol+": refused with only get nodes/proxy", func(t *testing.T) {
			_, _, codes, err := exec(t, protocol, reader)
			if err == nil || !strings.Contains(err.Error(), forbidden) {
				t.Fatalf("exec over %s as a user who may only get nodes/proxy: %v, want %q", protocol, err, forbidden)
			}
			// The SPDY upgrade is an HTTP request whose answer the client
			// sees; the WebSocket dialer answers with the status in its
			// error instead.
			if protocol == "SPDY" && (len(codes) != 1 || codes[0] != http.StatusForbidden) {
				t.Errorf("exec over SPDY as a user who may only get nodes/proxy answered %v, want [403]", codes)
			}
			if protocol == "WebSocket" && !strings.Contains(err.Error(), "403 Forbidden") {
				t.Errorf("exec over WebSocket as a user who may only get nodes/proxy: %v, want 403 Forbidden", err)
			}
		})
		t.Run(protocol+": runs with create nodes/proxy", func(t *testing.T) {
			stdout, stderr, codes, err := exec(t, protocol, runner)
			if err != nil || stdout != "out\n" || stderr != "err\n" {
				t.Errorf("exec over %s as a user who may create nodes/proxy: %v (answers %v), stdout %q, stderr %q; want out and err", protocol, err, codes, stdout, stderr)
			}
		})
	}
	// The other streams: the same refusal, before anything is opened.
	t.Run("attach, port-forward and run: refused with only get nodes/proxy", func(t *testing.T) {
		for _, path := range []string{
			"/attach/" + ns + "/target/app?output=1",
			"/portForward/" + ns + "/target?port=80",
			"/run/" + ns + "/target/app?cmd=true",
		} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				code, body, err := f.nodeAPIRequest(t.Context(), method, path, nil, reader)
				if err != nil || code != http.StatusForbidden || strings.TrimSpace(string(body)) != forbidden {
					t.Errorf("%s %s as a user who may only get nodes/proxy: %d %.200q %v, want 403 %q", method, path, code, body, err, forbidden)
				}
			}
		}
	})
}
