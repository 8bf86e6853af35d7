package main

// Tests of nodelet's start with a bad configuration file and of the root
// dir lock: plain files in t.TempDir(), no cluster. The start-up test runs
// this test binary as nodelet (TestMain calls main when asked to). The
// settings' own tests are package options'.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runAsNodelet, set in the environment, makes the test binary run main
// with the arguments after "--".
const runAsNodelet = "NODELET_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsNodelet) == "1" {
		for i, arg := range os.Args {
			if arg == "--" {
				os.Args = append([]string{"nodelet"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const configHeader = "apiVersion: config.nodelet.dev/v1alpha1\nkind: NodeletConfiguration\n"

func writeConfig(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodelet.yaml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadConfigFileStopsNodeletWithOneLine runs nodelet's main with bad
// configuration files: it must exit with code 2 and one line naming the
// problem, before it reaches for a cluster or a runtime.
func TestBadConfigFileStopsNodeletWithOneLine(t *testing.T) {
	tests := map[string]struct {
		file     string
		wantLine string // after "nodelet: config file <path>: "
	}{
		"an unknown field":   {configHeader + "maxPodz: 42\n", `unknown field "maxPodz"`},
		"a wrong type":       {configHeader + "maxPods: many\n", `field "maxPods": got string, want int32`},
		"no apiVersion":      {"kind: NodeletConfiguration\nmaxPods: 42\n", `missing apiVersion, want "config.nodelet.dev/v1alpha1"`},
		"the kubelet's kind": {"apiVersion: config.nodelet.dev/v1alpha1\nkind: KubeletConfiguration\n", `kind "KubeletConfiguration" is not supported, want "NodeletConfiguration"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.file)
			cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "--config", path, "--root-dir", t.TempDir())
			cmd.Env = append(os.Environ(), runAsNodelet+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
				t.Fatalf("nodelet exited with %v, want exit code 2; stderr:\n%s", err, stderr.String())
			}
			want := "nodelet: config file " + path + ": " + tc.wantLine + "\n"
			if stderr.String() != want {
				t.Errorf("stderr:\n%q\nwant exactly:\n%q", stderr.String(), want)
			}
		})
	}
}

func TestRootDirLockKeepsASecondNodeletOut(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockRootDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockRootDir(dir); err == nil || !strings.Contains(err.Error(), "another nodelet") {
		t.Fatalf("second lock: err = %v, want another nodelet holding it", err)
	}
	unlock()
	unlockAgain, err := lockRootDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlockAgain()
}
