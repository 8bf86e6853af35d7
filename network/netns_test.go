package network

// The agent is tested with the real CNI plugins (bridge, host-local,
// loopback, portmap, bandwidth from Debian's containernetworking-plugins in
// /usr/lib/cni), on network namespaces the tests create: one stands for
// the node (the plugins run in it, so the bridge, the iptables rules and
// the qdiscs never touch the machine's own network), one for each pod
// sandbox. They need root, the plugins and the tools they run (package
// internal/prereq says what happens without them).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/containernetworking/cni/pkg/invoke"
	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

const pluginDir = "/usr/lib/cni"

func requireRootAndPlugins(t *testing.T) {
	t.Helper()
	prereq.Root(t, "it creates network namespaces and runs the CNI plugins in them")
	prereq.CNIPlugins(t, pluginDir, "bridge", "host-local", "loopback", "portmap", "bandwidth")
	prereq.Tools(t, "nsenter", "ip", "tc")
	prereq.Iptables(t)
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
