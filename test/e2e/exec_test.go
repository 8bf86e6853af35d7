package e2e

// `kubectl exec`, `attach` and `port-forward` against nodelet, through
// the API server: kubectl 1.36 speaks WebSocket to the API server, which
// speaks SPDY to the node; client-go's executors check each protocol on
// its own.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// exitCode is a finished command's exit code, -1 if it did not exit.
func exitCode(err error) int {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}

func TestExec(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// A second container that has finished: nothing runs to exec in.
	p := newPod(ns, "target").withRestartPolicy(corev1.RestartPolicyNever).obj()
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "quick", Image: busyboxImage, Command: []string{"true"}})
	pod := f.createPod(t, p)
	f.waitForPod(t, pod, podStartTimeout, "to run app after quick finished", func(p *corev1.Pod) (bool, error) {
		app, quick := containerStatus(p, "app"), containerStatus(p, "quick")
		return app != nil && app.State.Running != nil && quick != nil && quick.State.Terminated != nil, nil
	})

	t.Run("runs a command and returns its output and exit code", func(t *testing.T) {
		stdout, stderr, err := f.kubectl(t.Context(), nil, "exec", "-n", ns, "target", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
		if code := exitCode(err); code != 7 {
			t.Fatalf("kubectl exec exit code %d (%v), want 7; stderr %q", code, err, stderr)
		}
		if stdout != "out\n" || !strings.Contains(stderr, "err\n") {
			t.Errorf("stdout %q, stderr %q; want out and err", stdout, stderr)
		}
	})
	t.Run("-i feeds stdin", func(t *testing.T) {
		stdout, stderr, err := f.kubectl(t.Context(), strings.NewReader("hello\nworld\n"), "exec", "-i", "-n", ns, "target", "--", "tr", "a-z", "A-Z")
		if err != nil || stdout != "HELLO\nWORLD\n" {
			t.Errorf("kubectl exec -i: %q, %v (stderr %q); want the input upper-cased", stdout, err, stderr)
		}
	})
	t.Run("-it runs in a terminal of the client's size, resized with it", func(t *testing.T) {
		master, slavePath, err := openPTY(37, 91)
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		slave, err := os.OpenFile(slavePath, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer slave.Close()
		cmd := f.kubectlCmd(t.Context(), "exec", "-it", "-n", ns, "target", "--", "sh")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		// Everything the terminal shows, until kubectl closes it.
		var screen syncBuffer
		copied := make(chan struct{})
		go func() {
			_, _ = io.Copy(&screen, master)
			close(copied)
		}()
		await.Eventually(t, 30*time.Second, "a shell prompt", await.Condition(func(context.Context) (bool, error) {
			return strings.Contains(screen.String(), "# "), nil
		}))
		if _, err := master.WriteString("tty\n"); err != nil {
			t.Fatal(err)
		}
		await.Eventually(t, 30*time.Second, "the container's tty", func(context.Context) error {
			if !regexp.MustCompile(`/dev/pts/\d+\r?\n`).MatchString(screen.String()) {
				return fmt.Errorf("the terminal shows %q", screen.String())
			}
			return nil
		})
		// kubectl sends the terminal's size on a stream of its own, which
		// may reach the container a moment after the shell has started:
		// ask until it has.
		// sizeShown asks the terminal its size until it answers want.
		sizeShown := func(what, want string) {
			t.Helper()
			await.Eventually(t, 30*time.Second, what, func(context.Context) error {
				if _, err := master.WriteString("stty size\n"); err != nil {
					return err
				}
				if !strings.Contains(screen.String(), want) {
					return fmt.Errorf("the terminal shows %q", screen.String())
				}
				return nil
			})
		}
		sizeShown("the container's terminal to have the client's size", "37 91")
		// The user resizes the window: kubectl gets SIGWINCH and sends
		// the new size, which the container's terminal takes.
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 120}); err != nil {
			t.Fatal(err)
		}
		sizeShown("the container's terminal to take the new size", "50 120")
		if _, err := master.WriteString("exit 3\n"); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		master.Close()
		<-copied
		if code := exitCode(err); code != 3 {
			t.Errorf("kubectl exec -it exit code %d (%v), want 3; the terminal showed:\n%s", code, err, screen.String())
		}
	})
	t.Run("in a container that is not running", func(t *testing.T) {
		_, stderr, err := f.kubectl(t.Context(), nil, "exec", "-n", ns, "target", "-c", "quick", "--", "true")
		if err == nil || !strings.Contains(stderr, `container not found ("quick")`) {
			t.Errorf("kubectl exec in a finished container: %v, stderr %q; want the kubelet's error", err, stderr)
		}
	})
}

// adminRESTConfig is the admin's client configuration.
func (f *Framework) adminRESTConfig(t *testing.T) *rest.Config {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", f.Env.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return config
}

func TestExecOverEachProtocol(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "target").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	config := f.adminRESTConfig(t)
	client := f.Client.(*kubernetes.Clientset)
	execURL := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("target").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Command: []string{"sh", "-c", "read line; echo got $line; echo to-stderr >&2; exit 4"},
			Stdin:   true, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec).URL()

	executors := map[string]func() (remotecommand.Executor, error){
		"SPDY": func() (remotecommand.Executor, error) { return remotecommand.NewSPDYExecutor(config, "POST", execURL) },
		"WebSocket": func() (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(config, "GET", execURL.String())
		},
	}
	for name, newExecutor := range executors {
		t.Run(name, func(t *testing.T) {
			executor, err := newExecutor()
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err = executor.StreamWithContext(t.Context(), remotecommand.StreamOptions{
				Stdin: strings.NewReader("ping\n"), Stdout: &stdout, Stderr: &stderr,
			})
			var exitErr interface{ ExitStatus() int }
			if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 4 {
				t.Errorf("exec over %s: %v, want exit status 4", name, err)
			}
			if stdout.String() != "got ping\n" || stderr.String() != "to-stderr\n" {
				t.Errorf("exec over %s: stdout %q, stderr %q", name, stdout.String(), stderr.String())
			}
		})
	}
}

func TestAttach(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	p := newPod(ns, "reader").withShell(`while read line; do echo "got: $line"; done`).obj()
	p.Spec.Containers[0].Stdin = true
	pod := f.createPod(t, p)
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	stdinReader, stdinWriter := io.Pipe()
	defer stdinWriter.Close()
	_, stdout, stderr := f.startKubectl(t, stdinReader, "attach", "-i", "-n", ns, "reader")
	// kubectl attaches, then sends what it reads; the container answers
	// on its stdout, which the attach streams back. Lines sent before the
	// attach is up are lost, so keep sending until one comes back.
	await.Eventually(t, 30*time.Second, "the container's answer through the attach", await.Condition(func(context.Context) (bool, error) {
		if _, err := fmt.Fprintln(stdinWriter, "ping"); err != nil {
			return false, fmt.Errorf("writing to kubectl attach: %w (stderr %q)", err, stderr.String())
		}
		return strings.Contains(stdout.String(), "got: ping\n"), nil
	}))
	// What came through the attach is the container's own output.
	f.waitForLogsTo(t, "hold the answer", func(out string) bool { return strings.Contains(out, "got: ping\n") }, ns, "reader")
}

func TestPortForward(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// Ready once httpd listens: a container that merely started may not
	// yet, and a forward to a port nothing listens on ends in EOF.
	pod := f.createPod(t, newPod(ns, "web").withShell(
		"mkdir -p /www && echo hello-through-port-forward > /www/index.html && exec httpd -f -p 8080 -h /www").with(func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		}
	}).obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	_, stdout, stderr := f.startKubectl(t, nil, "port-forward", "-n", ns, "--address=127.0.0.1", "pod/web", ":8080")
	var local string
	await.Eventually(t, 30*time.Second, "kubectl port-forward to listen", await.Condition(func(context.Context) (bool, error) {
		m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(stdout.String())
		if m != nil {
			local = m[1]
		}
		return m != nil, nil
	}))
	// Two requests, each its own connection through the same forward.
	for i := range 2 {
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://127.0.0.1:" + local + "/index.html")
		if err != nil {
			t.Fatalf("request %d through the port-forward: %v (kubectl: %s)", i, err, stderr.String())
		}
		body, err := io.ReadAll(bufio.NewReader(resp.Body))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != "hello-through-port-forward\n" {
			t.Errorf("request %d through the port-forward: %d %q %v", i, resp.StatusCode, body, err)
		}
	}
}
