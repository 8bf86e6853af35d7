package prereq

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records a skip or a failure and, like the real ones, ends the
// goroutine, so that a check runs on exactly as it would in a test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// check runs fn against a fakeTB in a goroutine of its own, which a skip
// or a failure ends.
func check(t *testing.T, fn func(testing.TB)) *fakeTB {
	t.Helper()
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

// outcome is what a check did: "ran", "skipped: ..." or "failed: ...".
func (f *fakeTB) outcome() string {
	switch {
	case f.failed != "":
		return "failed: " + f.failed
	case f.skipped != "":
		return "skipped: " + f.skipped
	}
	return "ran"
}

func TestMissingFollowsTheVariable(t *testing.T) {
	tests := map[string]struct {
		value string
		want  string
	}{
		"unset, it skips":          {value: "", want: "skipped: the widget is not installed"},
		"0, it skips":              {value: "0", want: "skipped: the widget is not installed"},
		"1, it fails":              {value: "1", want: "failed: the widget is not installed; NODELET_TEST_REQUIRE_ALL=1 says this machine has it"},
		"a misspelt value, fails":  {value: "true", want: `failed: NODELET_TEST_REQUIRE_ALL="true": want 1 (a missing prerequisite fails the test) or unset (it skips); the test needs: the widget is not installed`},
		"yes is not 1 either, too": {value: "yes", want: `failed: NODELET_TEST_REQUIRE_ALL="yes": want 1`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv(RequireAllEnv, tc.value)
			got := check(t, func(tb testing.TB) { Missing(tb, "the %s is not installed", "widget") }).outcome()
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("Missing() %s, want %s", got, tc.want)
			}
		})
	}
}

// The checks' own outcomes, in both modes: what is there runs, what is
// not skips or fails with a message saying how to get it.
func TestChecks(t *testing.T) {
	plugins := t.TempDir()
	writeFile(t, filepath.Join(plugins, "bridge"), 0o755)
	writeFile(t, filepath.Join(plugins, "host-local"), 0o644)
	if err := os.Mkdir(filepath.Join(plugins, "loopback"), 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := t.TempDir()
	writeFile(t, filepath.Join(onPath, "losetup"), 0o755)
	writeFile(t, filepath.Join(onPath, "iptables"), 0o755)

	tests := map[string]struct {
		path  string // PATH, when the check looks there
		check func(testing.TB)
		want  string // the outcome unless NODELET_TEST_REQUIRE_ALL=1
	}{
		"a tool on PATH": {
			path:  onPath,
			check: func(tb testing.TB) { Tools(tb, "losetup") },
			want:  "ran",
		},
		"a tool not on PATH, with its Debian package": {
			path:  t.TempDir(),
			check: func(tb testing.TB) { Tools(tb, "losetup") },
			want:  "skipped: losetup is not on PATH: install Debian package mount (hack/install-deps.sh does)",
		},
		"a tool of no known package": {
			path:  t.TempDir(),
			check: func(tb testing.TB) { Tools(tb, "nodelet-no-such-tool") },
			want:  "skipped: nodelet-no-such-tool is not on PATH: install it",
		},
		"the second of two tools missing": {
			path:  onPath,
			check: func(tb testing.TB) { Tools(tb, "losetup", "tc") },
			want:  "skipped: tc is not on PATH: install Debian package iproute2",
		},
		"iptables without iptables-save": {
			path:  onPath,
			check: Iptables,
			want:  "skipped: iptables-save is not on PATH: install Debian package iptables",
		},
		"an installed CNI plugin": {
			check: func(tb testing.TB) { CNIPlugins(tb, plugins, "bridge") },
			want:  "ran",
		},
		"a CNI plugin not installed": {
			check: func(tb testing.TB) { CNIPlugins(tb, plugins, "bridge", "portmap") },
			want:  "skipped: the CNI plugin portmap is not installed in " + plugins + " (stat " + filepath.Join(plugins, "portmap") + ": no such file or directory): install Debian package containernetworking-plugins",
		},
		"a CNI plugin that is not executable": {
			check: func(tb testing.TB) { CNIPlugins(tb, plugins, "host-local") },
			want:  "skipped: the CNI plugin host-local is not installed in " + plugins + " (not an executable file)",
		},
		"a CNI plugin that is a folder": {
			check: func(tb testing.TB) { CNIPlugins(tb, plugins, "loopback") },
			want:  "skipped: the CNI plugin loopback is not installed in " + plugins + " (not an executable file)",
		},
	}
	for name, tc := range tests {
		for _, requireAll := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, required %t", name, requireAll), func(t *testing.T) {
				if tc.path != "" {
					t.Setenv("PATH", tc.path)
				}
				want := tc.want
				t.Setenv(RequireAllEnv, "")
				if requireAll {
					t.Setenv(RequireAllEnv, "1")
					want = strings.Replace(want, "skipped: ", "failed: ", 1)
				}
				if got := check(t, tc.check).outcome(); !strings.HasPrefix(got, want) {
					t.Errorf("got %s\nwant %s", got, want)
				}
			})
		}
	}
}

// Root and LoopDevice depend on who runs the tests. As root, LoopDevice
// goes on to look for the loop driver, pointed here at a file of the
// test's own.
func TestRootAndLoopDevice(t *testing.T) {
	t.Setenv(RequireAllEnv, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "losetup"), 0o755)
	t.Setenv("PATH", dir)
	saved := loopControl
	loopControl = filepath.Join(dir, "loop-control")
	t.Cleanup(func() { loopControl = saved })

	root := os.Geteuid() == 0
	wantRoot := "ran"
	wantLoop := "skipped: no loop devices here (stat " + loopControl + ": no such file or directory): load the loop module"
	if !root {
		wantRoot = "skipped: needs root (it mounts things): run the tests as root"
		wantLoop = "skipped: needs root (it attaches a file to a loop device)"
	}
	if got := check(t, func(tb testing.TB) { Root(tb, "it mounts things") }).outcome(); !strings.HasPrefix(got, wantRoot) {
		t.Errorf("Root() %s, want %s", got, wantRoot)
	}
	if got := check(t, LoopDevice).outcome(); !strings.HasPrefix(got, wantLoop) {
		t.Errorf("LoopDevice() without the loop driver %s, want %s", got, wantLoop)
	}
	if root {
		writeFile(t, loopControl, 0o600)
		if got := check(t, LoopDevice).outcome(); got != "ran" {
			t.Errorf("LoopDevice() with the loop driver %s, want ran", got)
		}
	}
}

// The fake above stands for testing.T; this runs a real one, in a child
// process, to see that go test reports it skipped or failed.
func TestMissingInARealTest(t *testing.T) {
	for value, want := range map[string]string{
		"":  "--- SKIP: TestMissingChild",
		"1": "--- FAIL: TestMissingChild",
	} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMissingChild$", "-test.v")
		cmd.Env = append(os.Environ(), "PREREQ_TEST_CHILD=1", RequireAllEnv+"="+value)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "the widget is not installed") {
			t.Errorf("with %s=%q the child said:\n%s\nwant %q and the reason", RequireAllEnv, value, out, want)
		}
	}
}

// TestMissingChild is TestMissingInARealTest's child; run any other way it
// has nothing to do.
func TestMissingChild(t *testing.T) {
	if os.Getenv("PREREQ_TEST_CHILD") != "1" {
		return
	}
	Missing(t, "the widget is not installed")
	t.Error("Missing() returned")
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}
