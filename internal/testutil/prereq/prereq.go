// Package prereq lets a unit test state what it needs from the machine it
// runs on (root, a tool on PATH, iptables, the CNI plugins, a loop device)
// and skip, saying what is missing and how to get it, where that is absent:
// on a developer's laptop such a test is not run rather than failed.
//
// NODELET_TEST_REQUIRE_ALL=1 in the environment turns every such skip into
// a failure with the same message. hack/test.sh sets it for the unit suite:
// CI runs that suite as root on a Debian 12 machine holding the packages
// hack/install-deps.sh installs, where every prerequisite here is promised,
// so a skip there would report a broken machine, or a broken check, as a
// pass. Any other value than "" or "0" or "1" fails the test, so that a
// misspelt setting cannot quietly mean "skip".
package prereq

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireAllEnv is the environment variable that makes a missing
// prerequisite fail the test instead of skipping it.
const RequireAllEnv = "NODELET_TEST_REQUIRE_ALL"

// debianPackage names the Debian 12 package that installs a tool the tests
// run, so that a skip can say how to get it. A tool not listed is named
// without one.
var debianPackage = map[string]string{
	"ip":               "iproute2",
	"tc":               "iproute2",
	"iptables":         "iptables",
	"iptables-save":    "iptables",
	"iptables-restore": "iptables",
	"nsenter":          "util-linux",
	"unshare":          "util-linux",
	"blkid":            "util-linux",
	"losetup":          "mount",
	"mount":            "mount",
	"mkfs.ext4":        "e2fsprogs",
	"systemd-analyze":  "systemd",
}

// Missing skips the test with the message, or fails it when
// NODELET_TEST_REQUIRE_ALL=1. The message says what is missing and how to
// get it. Like t.Skipf and t.Fatalf it does not return.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	switch v := os.Getenv(RequireAllEnv); v {
	case "", "0":
		t.Skipf("%s", reason)
	case "1":
		t.Fatalf("%s; %s=1 says this machine has it", reason, RequireAllEnv)
	default:
		t.Fatalf("%s=%q: want 1 (a missing prerequisite fails the test) or unset (it skips); the test needs: %s", RequireAllEnv, v, reason)
	}
}

// Root needs the effective user to be root; why says what the test does
// that needs it.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root (%s): run the tests as root, as `make test` does", why)
	}
}

// Tools needs each tool on PATH.
func Tools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			how := "install it"
			if pkg, ok := debianPackage[tool]; ok {
				how = "install Debian package " + pkg + " (hack/install-deps.sh does)"
			}
			Missing(t, "%s is not on PATH: %s", tool, how)
		}
	}
}

// Iptables needs iptables and its save and restore commands on PATH, as
// the CNI plugins and the tests that check their rules run them.
func Iptables(t testing.TB) {
	t.Helper()
	Tools(t, "iptables", "iptables-save", "iptables-restore")
}

// CNIPlugins needs each named CNI plugin as an executable file in dir.
func CNIPlugins(t testing.TB, dir string, plugins ...string) {
	t.Helper()
	for _, plugin := range plugins {
		path := filepath.Join(dir, plugin)
		info, err := os.Stat(path)
		if err == nil && (info.IsDir() || info.Mode().Perm()&0o111 == 0) {
			err = errors.New("not an executable file")
		}
		if err != nil {
			Missing(t, "the CNI plugin %s is not installed in %s (%v): install Debian package containernetworking-plugins (hack/install-deps.sh does)", plugin, dir, err)
		}
	}
}

// loopControl is the device losetup -f asks for a free loop device; a
// variable so that the tests can point it elsewhere.
var loopControl = "/dev/loop-control"

// LoopDevice needs what attaching a file to a loop device takes: root,
// losetup, and the kernel's loop driver, which a container sees only when
// it is given the host's /dev/loop-control.
func LoopDevice(t testing.TB) {
	t.Helper()
	Root(t, "it attaches a file to a loop device")
	Tools(t, "losetup")
	if _, err := os.Stat(loopControl); err != nil {
		Missing(t, "no loop devices here (%v): load the loop module (modprobe loop), or in a container give it the host's /dev/loop-control and /dev/loop*", err)
	}
}
