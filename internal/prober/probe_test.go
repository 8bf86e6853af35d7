package prober

// Each probe handler against a real server on the loopback (HTTP through
// net/http/httptest, TCP through a listener, gRPC through an in-process
// grpc.health.v1 server) and exec probes against a fake runner, with the
// kubelet's messages.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/action"
)

// serverAddr splits an httptest server's address into host and port.
func serverAddr(t *testing.T, server *httptest.Server) (string, int32) {
	t.Helper()
	u, err := url.Parse(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), int32(port)
}

func TestHTTPProbe(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "kube-probe/1.36" || r.Header.Get("X-Probe") != "yes" {
			http.Error(w, "unexpected headers", http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/moved-here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/moved-away", func(w http.ResponseWriter, r *http.Request) {
		// Another host: 127.0.0.1 and localhost are not the same name.
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1), http.StatusFound)
	})
	server := httptest.NewServer(mux)
	defer server.Close()
	host, port := serverAddr(t, server)
	m := NewManager(Options{})
	defer m.Stop()

	cases := map[string]struct {
		path        string
		port        int32
		wantOutcome outcome
		wantOutput  string
	}{
		"200 with the agent's headers": {path: "/ok", port: port, wantOutcome: outcomeSuccess, wantOutput: "fine"},
		"404":                          {path: "/missing", port: port, wantOutcome: outcomeFailure, wantOutput: "HTTP probe failed with statuscode: 404"},
		"a redirect on the same host is followed": {path: "/moved-here", port: port, wantOutcome: outcomeSuccess, wantOutput: "fine"},
		"a redirect to another host is not":       {path: "/moved-away", port: port, wantOutcome: outcomeWarning, wantOutput: "Probe terminated redirects, Response body: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.Probe{TimeoutSeconds: 5, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: host, Port: intstr.FromInt32(tc.port), Path: tc.path,
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}},
			}}}
			got, output, err := m.runProbe(context.Background(), spec, "", &corev1.Container{}, kubecontainer.ContainerID{})
			if err != nil {
				t.Fatalf("runProbe() error = %v", err)
			}
			if got != tc.wantOutcome || !strings.HasPrefix(output, tc.wantOutput) {
				t.Errorf("runProbe() = %s %q, want %s %q", got, output, tc.wantOutcome, tc.wantOutput)
			}
		})
	}

	t.Run("nothing listening", func(t *testing.T) {
		closed := freePort(t)
		spec := &corev1.Probe{TimeoutSeconds: 5, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(closed)}}}
		got, output, err := m.runProbe(context.Background(), spec, "127.0.0.1", &corev1.Container{}, kubecontainer.ContainerID{})
		if err != nil || got != outcomeFailure || !strings.Contains(output, "connect: connection refused") {
			t.Errorf("runProbe() = %s %q %v, want a failure saying the connection was refused", got, output, err)
		}
	})
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return int32(port)
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	m := NewManager(Options{})
	defer m.Stop()
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "svc", ContainerPort: int32(l.Addr().(*net.TCPAddr).Port)}}}
	spec := &corev1.Probe{TimeoutSeconds: 5, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("svc")}}}
	if got, output, err := m.runProbe(context.Background(), spec, "127.0.0.1", container, kubecontainer.ContainerID{}); got != outcomeSuccess || err != nil {
		t.Errorf("runProbe() on a listening port = %s %q %v, want success", got, output, err)
	}
	closed := freePort(t)
	spec.TCPSocket.Port = intstr.FromInt32(closed)
	got, output, err := m.runProbe(context.Background(), spec, "127.0.0.1", container, kubecontainer.ContainerID{})
	if want := fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", closed); got != outcomeFailure || output != want || err != nil {
		t.Errorf("runProbe() on a closed port = %s %q %v, want failure %q", got, output, err, want)
	}
	spec.TCPSocket.Port = intstr.FromString("nope")
	if got, _, err := m.runProbe(context.Background(), spec, "127.0.0.1", container, kubecontainer.ContainerID{}); got != outcomeUnknown || err == nil {
		t.Errorf("runProbe() on an unknown port name = %s %v, want unknown with an error", got, err)
	}
}

func TestGRPCProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthServer := health.NewServer()
	healthServer.SetServingStatus("sick", healthpb.HealthCheckResponse_NOT_SERVING)
	server := grpc.NewServer()
	healthpb.RegisterHealthServer(server, healthServer)
	go func() { _ = server.Serve(l) }()
	defer server.Stop()

	bare, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	noHealth := grpc.NewServer()
	go func() { _ = noHealth.Serve(bare) }()
	defer noHealth.Stop()

	port := func(l net.Listener) int32 { return int32(l.Addr().(*net.TCPAddr).Port) }
	m := NewManager(Options{})
	defer m.Stop()
	cases := map[string]struct {
		port        int32
		service     *string
		timeout     int32
		wantOutcome outcome
		wantOutput  string
	}{
		"serving":                         {port: port(l), wantOutcome: outcomeSuccess, wantOutput: "service healthy"},
		"a service that is not serving":   {port: port(l), service: ptrTo("sick"), wantOutcome: outcomeFailure, wantOutput: `service unhealthy (responded with "NOT_SERVING")`},
		"a server without the health API": {port: port(bare), wantOutcome: outcomeFailure, wantOutput: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health)"},
		"nothing listening":               {port: freePort(t), timeout: 1, wantOutcome: outcomeFailure, wantOutput: "timeout: failed to connect service"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 10
			}
			spec := &corev1.Probe{TimeoutSeconds: timeout, ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: tc.port, Service: tc.service}}}
			got, output, err := m.runProbe(context.Background(), spec, "127.0.0.1", &corev1.Container{}, kubecontainer.ContainerID{})
			if err != nil || got != tc.wantOutcome || !strings.HasPrefix(output, tc.wantOutput) {
				t.Errorf("runProbe() = %s %q %v, want %s %q", got, output, err, tc.wantOutcome, tc.wantOutput)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

type fixedRunner struct {
	output []byte
	err    error
	cmd    []string
}

func (r *fixedRunner) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	r.cmd = cmd
	return r.output, nil, r.err
}

func TestExecProbe(t *testing.T) {
	cases := map[string]struct {
		err         error
		wantOutcome outcome
		wantOutput  string
		wantErr     bool
	}{
		"exit 0":          {wantOutcome: outcomeSuccess, wantOutput: "out"},
		"a non-zero exit": {err: exitOne, wantOutcome: outcomeFailure, wantOutput: "out"},
		"a timeout": {err: fmt.Errorf("%w: %q timed out after 1s", action.ErrCommandTimedOut, "cat /ready"),
			wantOutcome: outcomeFailure, wantOutput: `command timed out: "cat /ready" timed out after 1s`},
		"no run at all": {err: errors.New("container is not running"), wantOutcome: outcomeUnknown, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runner := &fixedRunner{output: []byte("out"), err: tc.err}
			m := NewManager(Options{Runner: runner})
			defer m.Stop()
			container := &corev1.Container{Env: []corev1.EnvVar{{Name: "FILE", Value: "/ready"}}}
			spec := &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "$(FILE)"}}}}
			got, output, err := m.runProbe(context.Background(), spec, "", container, kubecontainer.ContainerID{ID: "c1"})
			if got != tc.wantOutcome || output != tc.wantOutput || (err != nil) != tc.wantErr {
				t.Errorf("runProbe() = %s %q %v, want %s %q (error: %v)", got, output, err, tc.wantOutcome, tc.wantOutput, tc.wantErr)
			}
			if strings.Join(runner.cmd, " ") != "cat /ready" {
				t.Errorf("ran %q, want the env expanded: cat /ready", runner.cmd)
			}
		})
	}
}

func TestProbeRecordsTheKubeletsEvents(t *testing.T) {
	cases := map[string]struct {
		probeType probeType
		err       error
		want      kubecontainer.ProbeResult
		wantEvent string
	}{
		"success":  {probeType: readiness, want: kubecontainer.ProbeSuccess},
		"failure":  {probeType: readiness, err: exitOne, want: kubecontainer.ProbeFailure, wantEvent: "Warning Unhealthy Readiness probe failed: out"},
		"an error": {probeType: startup, err: errors.New("no such container"), want: kubecontainer.ProbeFailure, wantEvent: "Warning Unhealthy Startup probe errored and resulted in unknown state: no such container"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(10)
			m := NewManager(Options{Runner: &fixedRunner{output: []byte("out"), err: tc.err}, Recorder: recorder})
			defer m.Stop()
			pod := probedPod()
			spec := exec()
			got, _ := m.probe(context.Background(), tc.probeType, spec, pod, &corev1.PodStatus{}, &pod.Spec.Containers[0], kubecontainer.ContainerID{ID: "c1"})
			if got != tc.want {
				t.Errorf("probe() = %s, want %s", got, tc.want)
			}
			var events []string
			for len(recorder.Events) > 0 {
				events = append(events, <-recorder.Events)
			}
			if tc.wantEvent == "" && len(events) > 0 || tc.wantEvent != "" && (len(events) != 1 || events[0] != tc.wantEvent) {
				t.Errorf("events = %q, want %q", events, tc.wantEvent)
			}
		})
	}
}
