package main

// Tests of the built binary standing where the kubelet stands: go build
// into a temporary folder, run with the kubelet's command line. Nothing
// is started: each run ends at the command line.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func buildNodelet(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodelet")
	out, err := exec.Command("go", "build", "-ldflags", "-X main.commit=7f8550a", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("building nodelet: %v\n%s", err, out)
	}
	return bin
}

func TestBinaryAsTheKubelet(t *testing.T) {
	bin := buildNodelet(t)

	t.Run("a KubeletConfiguration with an unsupported non-default field fails to start with one line naming the field", func(t *testing.T) {
		config := filepath.Join(t.TempDir(), "config.yaml")
		data := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\n"
		if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--node-name=n", "--kubeconfig=/nonexistent", "--config="+config)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("nodelet ran (%v), want it to exit non-zero", err)
		}
		want := "nodelet: config file " + config + `: field "cpuManagerPolicy": "static" is not supported by nodelet (the kubelet's default "none" is)` + "\n"
		if stderr.String() != want {
			t.Errorf("stderr %q, want the one line %q", stderr.String(), want)
		}
	})

	t.Run("--version prints what the kubelet prints", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := "Kubernetes v1.36.3+nodelet." + baseVersion + ".7f8550a\n"; string(out) != want {
			t.Errorf("--version printed %q, want %q", out, want)
		}
	})
}
