package main

// Tests of `nodelet-approver clean-host` on the real file system of
// t.TempDir() standing for the host's root; the mount test and the
// bridge test need root (package internal/prereq says what happens
// without it).

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

func TestParseCleanOptions(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"folders":               {args: []string{"--dir=/var/lib/nodelet", "--dir=/run/nodelet-companion/containerd", "--dir-if-empty=/run/nodelet-companion"}},
		"none":                  {args: nil, wantErr: "--dir is required"},
		"the root":              {args: []string{"--dir=/"}, wantErr: `"/": want a clean absolute path`},
		"a relative one":        {args: []string{"--dir=var/lib/nodelet"}, wantErr: "want a clean absolute path"},
		"one that is not clean": {args: []string{"--dir=/var/lib/../lib/nodelet"}, wantErr: "want a clean absolute path"},
		"on the host itself":    {args: []string{"--host-root=/", "--dir=/var/lib/nodelet"}},
		"a host root not clean": {args: []string{"--host-root=/host/", "--dir=/var/lib/nodelet"}, wantErr: "--host-root"},
		"an if-empty root":      {args: []string{"--dir=/a", "--dir-if-empty=/"}, wantErr: `"/": want a clean absolute path`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := parseCleanOptions(tc.args, flag.NewFlagSet("log", flag.ContinueOnError))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("parseCleanOptions(%q) = %v, want error %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

// TestCleanHostRemovesTheFolders: the chart's folders go with their
// files, an if-empty parent goes when nothing else is left in it and
// stays when something is, a folder not there is fine, and a symlink is
// refused, not followed, while the others are still removed.
func TestCleanHostRemovesTheFolders(t *testing.T) {
	host := t.TempDir()
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(host, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("var/lib/companion/containerd/io.containerd.content.v1.content/blob")
	write("var/lib/companion/cni/networks/net/10.0.0.2")
	write("var/log/nodelet/pods/ns_pod_uid/app/0.log")
	write("var/log/nodelet/kept-by-the-admin")
	write("elsewhere/kept")
	if err := os.Symlink(filepath.Join(host, "elsewhere"), filepath.Join(host, "var/lib/linked")); err != nil {
		t.Fatal(err)
	}
	o := cleanOptions{
		hostRoot: host,
		dirs:     []string{"/var/lib/companion/containerd", "/var/lib/companion/cni", "/var/log/nodelet/pods", "/var/lib/linked", "/run/not-there"},
		ifEmpty:  []string{"/var/lib/companion", "/var/log/nodelet"},
	}
	err := cleanHost(t.Context(), o, testr.New(t))
	if err == nil || !strings.Contains(err.Error(), "/var/lib/linked: is a symlink") {
		t.Errorf("cleanHost() = %v, want the symlink refused", err)
	}
	for _, gone := range []string{"var/lib/companion", "var/log/nodelet/pods"} {
		if _, err := os.Lstat(filepath.Join(host, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after cleanHost(): %v, want it gone", gone, err)
		}
	}
	for _, kept := range []string{"var/log/nodelet/kept-by-the-admin", "elsewhere/kept", "var/lib/linked"} {
		if _, err := os.Lstat(filepath.Join(host, kept)); err != nil {
			t.Errorf("%s after cleanHost(): %v, want it kept", kept, err)
		}
	}
}

// TestCleanHostUnmountsFirst: a tmpfs mounted in a chart's folder (a
// pod's volume) is unmounted, then the folder removed; the files in the
// tmpfs never touch the disk's.
func TestCleanHostUnmountsFirst(t *testing.T) {
	prereq.Root(t, "it mounts a tmpfs")
	host := t.TempDir()
	volume := filepath.Join(host, "var/lib/nodelet/pods/uid/volumes/kubernetes.io~empty-dir/cache")
	if err := os.MkdirAll(volume, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", volume, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(volume, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(volume, "in-memory"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cleanHost(t.Context(), cleanOptions{hostRoot: host, dirs: []string{"/var/lib/nodelet"}}, testr.New(t)); err != nil {
		t.Fatalf("cleanHost(): %v", err)
	}
	if _, err := os.Lstat(filepath.Join(host, "var/lib/nodelet")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder after cleanHost(): %v, want it gone", err)
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), host) {
		t.Errorf("a mount under %s is left after cleanHost()", host)
	}
}

// TestCleanHostDeletesTheBridge: in a network namespace of the test's
// own, a bridge made with ip(8) is deleted, and one not there is fine.
func TestCleanHostDeletesTheBridge(t *testing.T) {
	prereq.Root(t, "it makes a network namespace of its own")
	prereq.Tools(t, "ip")
	done := make(chan error)
	go func() {
		// The thread stays in its new network namespace and dies with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		if out, err := exec.Command("ip", "link", "add", "nlc-test", "type", "bridge").CombinedOutput(); err != nil {
			done <- fmt.Errorf("ip link add: %w: %s", err, out)
			return
		}
		if deleted, err := deleteLink("nlc-test"); err != nil || !deleted {
			done <- fmt.Errorf("deleteLink() = %v, %w, want the bridge deleted", deleted, err)
			return
		}
		if out, err := exec.Command("ip", "link", "show", "nlc-test").CombinedOutput(); err == nil {
			done <- fmt.Errorf("the bridge is still there: %s", out)
			return
		}
		if deleted, err := deleteLink("nlc-test"); err != nil || deleted {
			done <- fmt.Errorf("deleteLink() of no bridge = %v, %w, want nothing and no error", deleted, err)
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAckError(t *testing.T) {
	ack := func(code int32) []byte {
		b := make([]byte, unix.NLMSG_HDRLEN+4)
		binary.NativeEndian.PutUint16(b[4:6], unix.NLMSG_ERROR)
		binary.NativeEndian.PutUint32(b[unix.NLMSG_HDRLEN:], uint32(code))
		return b
	}
	if err := ackError(ack(0)); err != nil {
		t.Errorf("ackError(0) = %v, want nil", err)
	}
	if err := ackError(ack(-int32(unix.EPERM))); !errors.Is(err, unix.EPERM) {
		t.Errorf("ackError(-EPERM) = %v, want EPERM", err)
	}
	if err := ackError([]byte{1, 2}); err == nil {
		t.Error("ackError() of a short answer = nil, want an error")
	}
	req := delLinkRequest(7)
	if len(req) != unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg || binary.NativeEndian.Uint16(req[4:6]) != unix.RTM_DELLINK ||
		binary.NativeEndian.Uint32(req[unix.NLMSG_HDRLEN+4:]) != 7 {
		t.Errorf("delLinkRequest(7) = %v, want RTM_DELLINK of index 7", req)
	}
}
