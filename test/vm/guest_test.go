package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// guest is a booted guest of hack/vm.sh, driven over ssh.
type guest struct {
	name string
}

// vmScript runs hack/vm.sh with args.
func vmScript(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, filepath.Join(cluster.repoRoot, "hack", "vm.sh"), args...)
}

// bootGuest boots guest name with hack/vm.sh's defaults.
func bootGuest(t *testing.T, name string) *guest {
	t.Helper()
	return bootGuestWith(t, name, nil)
}

// bootGuestWith boots guest name from the cached image on a fresh layer,
// so that every test starts from the same host, with env (hack/vm.sh's
// VM_* settings) added to this process's; its qemu is killed when the
// test ends (nothing of the guest is kept), its units' journal logged
// first if the test failed.
func bootGuestWith(t *testing.T, name string, env []string) *guest {
	t.Helper()
	up := vmScript(t.Context(), "up", name)
	up.Env = append(os.Environ(), env...)
	out, err := up.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/vm.sh up %s: %v\n%s", name, err, out)
	}
	t.Logf("guest %s booted:\n%s", name, lastLines(string(out), 2))
	g := &guest{name: name}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if t.Failed() {
			journal, err := g.output(ctx, "journalctl --no-pager -o short-precise -u nodelet -u containerd -u kubelet | tail -n 300")
			if err != nil {
				status, _ := vmScript(ctx, "status", name).CombinedOutput()
				t.Logf("guest %s does not answer (%v): %s\nqemu:\n%s", name, err, journal, status)
			} else {
				t.Logf("guest %s's journal (nodelet, containerd, kubelet), last 300 lines:\n%s", name, journal)
			}
		}
		if out, err := vmScript(ctx, "kill", name).CombinedOutput(); err != nil {
			t.Errorf("hack/vm.sh kill %s: %v\n%s", name, err, out)
		}
	})
	return g
}

// output runs a bash script in the guest as root and returns what it
// printed (stdout and stderr).
func (g *guest) output(ctx context.Context, script string) (string, error) {
	cmd := vmScript(ctx, "ssh", g.name, "bash -euo pipefail -s")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// run runs a bash script in the guest and fails the test if it fails.
func (g *guest) run(t *testing.T, script string) string {
	t.Helper()
	return g.runContext(t.Context(), t, script)
}

// runContext is run with a context of its own: in a cleanup, where the
// test's context is done.
func (g *guest) runContext(ctx context.Context, t *testing.T, script string) string {
	t.Helper()
	out, err := g.output(ctx, script)
	if err != nil {
		t.Fatalf("in guest %s: %v\n$ %s\n%s", g.name, err, script, out)
	}
	return strings.TrimSpace(out)
}

// copy puts a host file into the guest.
func (g *guest) copy(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := vmScript(t.Context(), "copy", g.name, src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copying %s into guest %s: %v\n%s", src, g.name, err, out)
	}
}

// bootID is the guest kernel's boot ID, new at each boot.
func (g *guest) bootID(t *testing.T) string {
	t.Helper()
	return g.run(t, "cat /proc/sys/kernel/random/boot_id")
}

// reboot reboots the guest with systemd and waits until it answers again
// from its next boot.
func (g *guest) reboot(t *testing.T) {
	t.Helper()
	before := g.bootID(t)
	// The connection may drop before ssh reads the answer.
	_, _ = g.output(t.Context(), "systemctl reboot")
	await.Eventually(t, 5*time.Minute, "guest "+g.name+" to boot again", func(ctx context.Context) error {
		id, err := g.output(ctx, "cat /proc/sys/kernel/random/boot_id")
		if err != nil {
			return fmt.Errorf("no answer: %w", err)
		}
		if strings.TrimSpace(id) == before {
			return fmt.Errorf("still boot %s", before)
		}
		return nil
	})
}

// readFile is a file of the guest, trimmed.
func (g *guest) readFile(t *testing.T, path string) string {
	t.Helper()
	return g.run(t, "cat "+shellQuote(path))
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
