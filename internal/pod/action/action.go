// Package action runs the actions that a container's probes and lifecycle
// hooks name: a command inside the container (through CRI ExecSync), an
// HTTP GET against the pod, a sleep. The prober (liveness, readiness and
// startup probes) and the runtime's postStart and preStop hooks both run
// them through this package, so that they address a pod, resolve a port and
// read a command's outcome the same way, as the kubelet does.
package action

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilexec "k8s.io/utils/exec"
)

// CommandRunner runs a command in a running container and waits for it;
// the runtime's ExecRunner is one over CRI. A command that exits non-zero
// is an error carrying its exit code (k8s.io/utils/exec.ExitError); one
// that runs past timeout is an error wrapping ErrCommandTimedOut. A zero
// timeout waits forever.
type CommandRunner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// ErrCommandTimedOut is what a CommandRunner's error wraps when the
// command ran past its timeout. It is action's own, not the CRI client's
// (which the runtime's ExecRunner turns into this), so that the prober
// needs no CRI client.
var ErrCommandTimedOut = errors.New("command timed out")

// RunCommand runs cmd in the container and returns its output, stdout then
// stderr (the runtime keeps them apart, so they cannot be interleaved).
func RunCommand(ctx context.Context, runner CommandRunner, containerID string, cmd []string, timeout time.Duration) ([]byte, error) {
	stdout, stderr, err := runner.ExecSync(ctx, containerID, cmd, timeout)
	return append(stdout, stderr...), err
}

// CommandOutcome classifies RunCommand's error: exited is true when the
// command ran to its end (code is then its exit code), timedOut when it ran
// past its timeout. Neither means it could not be run at all.
func CommandOutcome(err error) (exited bool, code int, timedOut bool) {
	if err == nil {
		return true, 0, false
	}
	var exitErr utilexec.ExitError
	if errors.As(err, &exitErr) {
		return true, exitErr.ExitStatus(), false
	}
	return false, 0, errors.Is(err, ErrCommandTimedOut)
}

// userAgentVersion is the Kubernetes minor version nodelet follows: probes
// and hooks identify themselves as the kubelet's do ("kube-probe/1.36"),
// so that servers that answer them specially keep doing so.
const userAgentVersion = "1.36"

// NewHTTPGetRequest builds the request an httpGet probe or hook makes:
// scheme (default http), host (default the pod's IP), port by number or by
// the name of one of the container's ports, path and headers. purpose names
// the user agent ("probe" or "lifecycle"), unless the headers set one.
func NewHTTPGetRequest(ctx context.Context, action *corev1.HTTPGetAction, container *corev1.Container, podIP, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(action.Path)
	if err != nil {
		u = &url.URL{Path: action.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for _, h := range action.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", fmt.Sprintf("kube-%s/%s", purpose, userAgentVersion))
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		// An empty Accept header asks for none at all.
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// ResolvePort turns a probe's or hook's port into a number: a number as
// it is, a name through the container's ports (or as digits when no port
// has that name).
func ResolvePort(port intstr.IntOrString, container *corev1.Container) (int, error) {
	number := -1
	switch port.Type {
	case intstr.Int:
		number = port.IntValue()
	case intstr.String:
		found := false
		for _, p := range container.Ports {
			if p.Name == port.StrVal {
				number, found = int(p.ContainerPort), true
				break
			}
		}
		if !found {
			n, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return -1, fmt.Errorf("port %s not found", port.StrVal)
			}
			number = n
		}
	default:
		return -1, fmt.Errorf("intOrString had no kind: %+v", port)
	}
	if number > 0 && number < 65536 {
		return number, nil
	}
	return number, fmt.Errorf("invalid port number: %v", number)
}

// Dialer is how probes and hooks connect: with a one-second linger, so that
// a closed probe connection does not sit in TIME_WAIT and a node probing
// many pods does not run out of ports.
func Dialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}

// NewHTTPTransport is the transport of probe and hook requests: no
// keep-alive (each probe stands alone), no proxy, no compression, and no
// certificate checks (a pod's serving certificate is the pod's business).
func NewHTTPTransport() *http.Transport {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               http.ProxyURL(nil),
		DialContext:         Dialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: -1,
	}
}

// Sleep waits for d, or fails when ctx ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-timer.C:
		return nil
	}
}
