package network

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodelet/nodelet/network/cnishim"
)

func TestInstallShim(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "built-shim")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := ShimOptions{BinaryPath: binary, RuntimeBinDir: filepath.Join(dir, "bin"), RuntimeConfDir: filepath.Join(dir, "net.d"), NetworkName: "pods", Socket: "/var/lib/nodelet/cni/agent.sock"}
	if err := InstallShim(opts); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(opts.RuntimeBinDir, cnishim.PluginType))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("installed shim: %v, %v; want an executable", info, err)
	}
	conf := readFile(t, filepath.Join(opts.RuntimeConfDir, ShimConfigFile))
	want := `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"nodelet-cni","socket":"/var/lib/nodelet/cni/agent.sock"}]}`
	if diff := cmp.Diff(decode(t, want), decode(t, conf)); diff != "" {
		t.Errorf("shim conflist mismatch (-want +got):\n%s", diff)
	}
	if ready, _ := Status(opts.RuntimeConfDir); !ready {
		t.Errorf("the runtime's folder has no configuration after the install")
	}
	removed, err := RemoveShimConfig(opts.RuntimeConfDir)
	if err != nil || !removed {
		t.Fatalf("RemoveShimConfig() = %v, %v; want true, nil", removed, err)
	}
	if names := dirNames(t, opts.RuntimeConfDir); len(names) != 0 {
		t.Errorf("the runtime's folder holds %v after the removal", names)
	}
}
