package e2e

// Helpers of the node API tests: kubectl run as the admin, a client of
// nodelet's HTTPS port, restarting nodelet with other flags, and a
// pseudo-terminal for `kubectl exec -it`.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// kubectl runs the stack's kubectl as the admin and returns its stdout
// and stderr.
func (f *Framework) kubectl(ctx context.Context, stdin io.Reader, args ...string) (string, string, error) {
	cmd := f.kubectlCmd(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// mustKubectl is kubectl failing the test when kubectl fails.
func (f *Framework) mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := f.kubectl(t.Context(), nil, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

func (f *Framework) kubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	kubectl := f.Env.Kubectl
	if kubectl == "" {
		kubectl = "kubectl"
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + f.Env.AdminKubeconfig}, args...)...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// syncBuffer collects a running command's output for the test to read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startKubectl starts a long-running kubectl (logs -f, attach,
// port-forward) and stops it when the test ends.
func (f *Framework) startKubectl(t *testing.T, stdin io.Reader, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := f.kubectlCmd(ctx, args...)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return cmd, stdout, stderr
}

// nodeAPI sends a request straight to nodelet's HTTPS port, with a client
// certificate, a bearer token, or neither. nodelet's serving certificate
// is not checked, as the API server does not check it.
func (f *Framework) nodeAPI(ctx context.Context, path string, cert *tls.Certificate, token string) (int, []byte, error) {
	return f.nodeAPIRequest(ctx, http.MethodGet, path, cert, token)
}

// nodeAPIRequest is nodeAPI with any method.
func (f *Framework) nodeAPIRequest(ctx context.Context, method, path string, cert *tls.Certificate, token string) (int, []byte, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, method, "https://127.0.0.1:"+f.Env.NodeletPort+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// kubeletClientCert is the API server's client certificate towards nodes,
// as metrics-server would hold one of its own.
func (f *Framework) kubeletClientCert(t *testing.T) *tls.Certificate {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.Env.KubeletClientCert, f.Env.KubeletClientKey)
	if err != nil {
		t.Fatalf("loading the kubelet client certificate: %v", err)
	}
	return &cert
}

// servedCertificate is the certificate nodelet's port presents, or the
// handshake's error.
func (f *Framework) servedCertificate(ctx context.Context) (*x509.Certificate, error) {
	dialer := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := dialer.DialContext(ctx, "tcp", "127.0.0.1:"+f.Env.NodeletPort)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

// waitForNodeAPI waits until nodelet's HTTPS port takes connections.
func (f *Framework) waitForNodeAPI(ctx context.Context, timeout time.Duration) error {
	var dialer net.Dialer
	err := await.Poll(ctx, timeout, await.Condition(func(ctx context.Context) (bool, error) {
		conn, err := dialer.DialContext(ctx, "tcp", "127.0.0.1:"+f.Env.NodeletPort)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	}))
	if err != nil {
		return fmt.Errorf("nodelet's port %s takes no connection: %w", f.Env.NodeletPort, err)
	}
	return nil
}

// processRSS is a process's resident memory in bytes, from /proc.
func processRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("parsing VmRSS %q: %w", rest, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// openPTY opens a pseudo-terminal of rows×cols and returns its master and
// the path of its slave.
func openPTY(rows, cols uint16) (*os.File, string, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, "", err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, "", fmt.Errorf("unlocking the pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, "", fmt.Errorf("naming the pty: %w", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		master.Close()
		return nil, "", fmt.Errorf("sizing the pty: %w", err)
	}
	return master, fmt.Sprintf("/dev/pts/%d", n), nil
}
