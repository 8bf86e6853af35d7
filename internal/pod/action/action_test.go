package action

// Pure tests of the request a probe or hook makes and of how a command's
// outcome is read, plus Sleep against the real clock (milliseconds).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilexec "k8s.io/utils/exec"
)

func TestNewHTTPGetRequest(t *testing.T) {
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	cases := map[string]struct {
		action      corev1.HTTPGetAction
		wantURL     string
		wantHeaders http.Header
		wantHost    string
	}{
		"defaults: http, the pod's IP, the agent's user agent": {
			action:      corev1.HTTPGetAction{Port: intstr.FromInt32(80), Path: "/healthz"},
			wantURL:     "http://10.0.0.5:80/healthz",
			wantHeaders: http.Header{"User-Agent": {"kube-probe/1.36"}, "Accept": {"*/*"}},
		},
		"a named port, a host, https and a query": {
			action:      corev1.HTTPGetAction{Scheme: corev1.URISchemeHTTPS, Host: "example.test", Port: intstr.FromString("http"), Path: "/ready?full=1"},
			wantURL:     "https://example.test:8080/ready?full=1",
			wantHeaders: http.Header{"User-Agent": {"kube-probe/1.36"}, "Accept": {"*/*"}},
		},
		"headers of the pod's own win, an empty Accept drops it, Host sets the host": {
			action: corev1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []corev1.HTTPHeader{
				{Name: "User-Agent", Value: "mine"}, {Name: "Accept", Value: ""}, {Name: "Host", Value: "svc.local"}, {Name: "X-A", Value: "1"}, {Name: "X-A", Value: "2"},
			}},
			wantURL:     "http://10.0.0.5:80",
			wantHeaders: http.Header{"User-Agent": {"mine"}, "Host": {"svc.local"}, "X-A": {"1", "2"}},
			wantHost:    "svc.local",
		},
		"an IPv6 pod IP is bracketed": {
			action:      corev1.HTTPGetAction{Port: intstr.FromInt32(80)},
			wantURL:     "http://[fd00::5]:80",
			wantHeaders: http.Header{"User-Agent": {"kube-probe/1.36"}, "Accept": {"*/*"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			podIP := "10.0.0.5"
			if name == "an IPv6 pod IP is bracketed" {
				podIP = "fd00::5"
			}
			req, err := NewHTTPGetRequest(context.Background(), &tc.action, container, podIP, "probe")
			if err != nil {
				t.Fatalf("NewHTTPGetRequest() error = %v", err)
			}
			if got := req.URL.String(); got != tc.wantURL {
				t.Errorf("URL = %q, want %q", got, tc.wantURL)
			}
			if diff := cmp.Diff(tc.wantHeaders, req.Header); diff != "" {
				t.Errorf("headers mismatch (-want +got):\n%s", diff)
			}
			if req.Host != tc.wantHost {
				t.Errorf("Host = %q, want %q", req.Host, tc.wantHost)
			}
		})
	}
}

func TestResolvePort(t *testing.T) {
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	cases := map[string]struct {
		port    intstr.IntOrString
		want    int
		wantErr string
	}{
		"a number":                      {port: intstr.FromInt32(9000), want: 9000},
		"a name of the container's":     {port: intstr.FromString("http"), want: 8080},
		"digits given as a string":      {port: intstr.FromString("9001"), want: 9001},
		"an unknown name":               {port: intstr.FromString("grpc"), want: -1, wantErr: "port grpc not found"},
		"a number out of range":         {port: intstr.FromInt32(70000), want: 70000, wantErr: "invalid port number: 70000"},
		"zero is no port":               {port: intstr.FromInt32(0), want: 0, wantErr: "invalid port number: 0"},
		"an IntOrString without a kind": {port: intstr.IntOrString{Type: 7}, want: -1, wantErr: "intOrString had no kind"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ResolvePort(tc.port, container)
			if got != tc.want {
				t.Errorf("ResolvePort() = %d, want %d", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ResolvePort() error = %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ResolvePort() error = %v, want one holding %q", err, tc.wantErr)
			}
		})
	}
}

func TestCommandOutcome(t *testing.T) {
	cases := map[string]struct {
		err          error
		wantExited   bool
		wantCode     int
		wantTimedOut bool
	}{
		"success":            {err: nil, wantExited: true},
		"a non-zero exit":    {err: utilexec.CodeExitError{Err: errors.New("exited with 3"), Code: 3}, wantExited: true, wantCode: 3},
		"a wrapped exit":     {err: fmt.Errorf("exec: %w", utilexec.CodeExitError{Err: errors.New("x"), Code: 1}), wantExited: true, wantCode: 1},
		"a timeout":          {err: fmt.Errorf("%w: %q timed out after 1s", ErrCommandTimedOut, "sleep 5"), wantTimedOut: true},
		"not run at all":     {err: errors.New("container not running")},
		"an exit of zero ok": {err: utilexec.CodeExitError{Err: errors.New("odd"), Code: 0}, wantExited: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			exited, code, timedOut := CommandOutcome(tc.err)
			if exited != tc.wantExited || code != tc.wantCode || timedOut != tc.wantTimedOut {
				t.Errorf("CommandOutcome() = (%v, %d, %v), want (%v, %d, %v)", exited, code, timedOut, tc.wantExited, tc.wantCode, tc.wantTimedOut)
			}
		})
	}
}

type fakeRunner struct {
	stdout, stderr []byte
	err            error
	gotCmd         []string
	gotTimeout     time.Duration
}

func (r *fakeRunner) ExecSync(_ context.Context, _ string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r.gotCmd, r.gotTimeout = cmd, timeout
	return r.stdout, r.stderr, r.err
}

func TestRunCommandReturnsStdoutThenStderr(t *testing.T) {
	runner := &fakeRunner{stdout: []byte("out\n"), stderr: []byte("err\n")}
	got, err := RunCommand(context.Background(), runner, "c1", []string{"true"}, time.Second)
	if err != nil || string(got) != "out\nerr\n" {
		t.Errorf("RunCommand() = %q, %v, want \"out\\nerr\\n\"", got, err)
	}
	if runner.gotTimeout != time.Second || runner.gotCmd[0] != "true" {
		t.Errorf("ran %v with timeout %s", runner.gotCmd, runner.gotTimeout)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), 10*time.Millisecond); err != nil {
		t.Errorf("Sleep() = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err == nil || err.Error() != "container terminated before sleep hook finished" {
		t.Errorf("Sleep() with an ended context = %v, want the kubelet's error", err)
	}
}
