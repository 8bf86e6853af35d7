package network

// RenderConflist is tested as a pure function. EnsureConfig runs against real
// files in t.TempDir(), with stand-in plugins (shell scripts answering the
// CNI VERSION command) or, in TestEnsureConfigWithInstalledPlugins, the real
// CNI plugins in /usr/lib/cni.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

func TestRenderConflist(t *testing.T) {
	tests := map[string]struct {
		opts    ConfigOptions
		want    string
		wantErr string
	}{
		"a single IPv4 pod CIDR gives one range and an IPv4 default route": {
			opts: ConfigOptions{NetworkName: "pods", Bridge: "br-pods", PodCIDRs: []string{"10.244.1.0/24"}, IPAMDataDir: "/var/lib/nodelet/ipam"},
			want: `{
			  "cniVersion": "1.0.0",
			  "name": "pods",
			  "plugins": [
			    {"type": "bridge", "bridge": "br-pods", "isGateway": true, "ipMasq": true, "hairpinMode": true,
			     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.1.0/24"}]],
			              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "/var/lib/nodelet/ipam"}},
			    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
			    {"type": "bandwidth", "capabilities": {"bandwidth": true}}
			  ]
			}`,
		},
		"dual stack gives a range and a default route per family": {
			opts: ConfigOptions{PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}},
			want: `{
			  "cniVersion": "1.0.0",
			  "name": "nodelet",
			  "plugins": [
			    {"type": "bridge", "bridge": "nodelet0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
			     "ipam": {"type": "host-local",
			              "ranges": [[{"subnet": "10.244.1.0/24"}], [{"subnet": "fd00:10:244:1::/64"}]],
			              "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}},
			    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
			    {"type": "bandwidth", "capabilities": {"bandwidth": true}}
			  ]
			}`,
		},
		"host bits in a pod CIDR are dropped, as host-local refuses them": {
			opts: ConfigOptions{PodCIDRs: []string{"10.244.1.7/24"}},
			want: `{
			  "cniVersion": "1.0.0",
			  "name": "nodelet",
			  "plugins": [
			    {"type": "bridge", "bridge": "nodelet0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
			     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.1.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
			    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
			    {"type": "bandwidth", "capabilities": {"bandwidth": true}}
			  ]
			}`,
		},
		"no pod CIDR is an error": {
			opts:    ConfigOptions{},
			wantErr: "no pod CIDR",
		},
		"a malformed pod CIDR is an error naming it": {
			opts:    ConfigOptions{PodCIDRs: []string{"10.244.1.0"}},
			wantErr: `pod CIDR "10.244.1.0"`,
		},
		"two pod CIDRs of one family are an error": {
			opts:    ConfigOptions{PodCIDRs: []string{"10.244.1.0/24", "10.245.1.0/24"}},
			wantErr: "more than one pod CIDR",
		},
		"a bridge name longer than an interface name can be is an error": {
			opts:    ConfigOptions{Bridge: "a-very-long-bridge", PodCIDRs: []string{"10.244.1.0/24"}},
			wantErr: "longer than 15 characters",
		},
		"a network name that is a path is an error": {
			opts:    ConfigOptions{NetworkName: "../pods", PodCIDRs: []string{"10.244.1.0/24"}},
			wantErr: "cannot name a file",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := RenderConflist(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RenderConflist() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("RenderConflist() error = %v", err)
			}
			if diff := cmp.Diff(decode(t, tc.want), decode(t, string(got))); diff != "" {
				t.Errorf("RenderConflist() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v
}

// fakePlugins writes stand-in CNI plugins into a new folder: each answers
// VERSION with the given spec versions.
func fakePlugins(t *testing.T, versions string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		script := "#!/bin/sh\necho '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":" + versions + "}'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var allPlugins = []string{"bridge", "host-local", "portmap", "bandwidth"}

func TestEnsureConfig(t *testing.T) {
	ctx := context.Background()

	t.Run("writes the conflist once into an empty folder", func(t *testing.T) {
		opts := ConfigOptions{
			ConfDir:  filepath.Join(t.TempDir(), "net.d"),
			BinDir:   fakePlugins(t, `["0.4.0","1.0.0"]`, allPlugins...),
			PodCIDRs: []string{"10.244.1.0/24"},
		}
		written, err := EnsureConfig(ctx, opts)
		if err != nil || !written {
			t.Fatalf("EnsureConfig() = %v, %v; want true, nil", written, err)
		}
		want, err := RenderConflist(opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), readFile(t, filepath.Join(opts.ConfDir, "10-nodelet.conflist"))); diff != "" {
			t.Errorf("conflist mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"10-nodelet.conflist"}, dirNames(t, opts.ConfDir)); diff != "" {
			t.Errorf("the folder holds more than the conflist (-want +got):\n%s", diff)
		}

		written, err = EnsureConfig(ctx, opts)
		if err != nil || written {
			t.Fatalf("second EnsureConfig() = %v, %v; want false, nil", written, err)
		}
	})

	t.Run("leaves an existing configuration alone", func(t *testing.T) {
		confDir := t.TempDir()
		existing := filepath.Join(confDir, "05-other.conf")
		if err := os.WriteFile(existing, []byte(`{"cniVersion":"0.4.0","name":"other","type":"ptp"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		written, err := EnsureConfig(ctx, ConfigOptions{
			ConfDir:  confDir,
			BinDir:   fakePlugins(t, `["1.0.0"]`, allPlugins...),
			PodCIDRs: []string{"10.244.1.0/24"},
		})
		if err != nil || written {
			t.Fatalf("EnsureConfig() = %v, %v; want false, nil", written, err)
		}
		if diff := cmp.Diff([]string{"05-other.conf"}, dirNames(t, confDir)); diff != "" {
			t.Errorf("folder changed (-want +got):\n%s", diff)
		}
	})

	t.Run("writes nothing without a pod CIDR", func(t *testing.T) {
		confDir := t.TempDir()
		written, err := EnsureConfig(ctx, ConfigOptions{ConfDir: confDir, BinDir: t.TempDir()})
		if err != nil || written {
			t.Fatalf("EnsureConfig() = %v, %v; want false, nil", written, err)
		}
		if names := dirNames(t, confDir); len(names) != 0 {
			t.Errorf("folder holds %v, want nothing", names)
		}
	})

	t.Run("a missing plugin is an error naming it, and nothing is written", func(t *testing.T) {
		confDir := t.TempDir()
		_, err := EnsureConfig(ctx, ConfigOptions{
			ConfDir:  confDir,
			BinDir:   fakePlugins(t, `["1.0.0"]`, "bridge", "host-local", "portmap"),
			PodCIDRs: []string{"10.244.1.0/24"},
		})
		if err == nil || !strings.Contains(err.Error(), "bandwidth") {
			t.Fatalf("EnsureConfig() error = %v, want one naming bandwidth", err)
		}
		if names := dirNames(t, confDir); len(names) != 0 {
			t.Errorf("folder holds %v, want nothing", names)
		}
	})

	t.Run("a missing IPAM plugin is an error naming it", func(t *testing.T) {
		_, err := EnsureConfig(ctx, ConfigOptions{
			ConfDir:  t.TempDir(),
			BinDir:   fakePlugins(t, `["1.0.0"]`, "bridge", "portmap", "bandwidth"),
			PodCIDRs: []string{"10.244.1.0/24"},
		})
		if err == nil || !strings.Contains(err.Error(), "host-local") {
			t.Fatalf("EnsureConfig() error = %v, want one naming host-local", err)
		}
	})

	t.Run("plugins too old for the spec version are an error", func(t *testing.T) {
		_, err := EnsureConfig(ctx, ConfigOptions{
			ConfDir:  t.TempDir(),
			BinDir:   fakePlugins(t, `["0.3.1","0.4.0"]`, allPlugins...),
			PodCIDRs: []string{"10.244.1.0/24"},
		})
		if err == nil || !strings.Contains(err.Error(), `does not support config version "1.0.0"`) {
			t.Fatalf("EnsureConfig() error = %v, want one about the version", err)
		}
	})
}

// TestEnsureConfigWithInstalledPlugins needs the CNI plugins installed in
// /usr/lib/cni (Debian's containernetworking-plugins, which the CI machine
// installs before the tests).
func TestEnsureConfigWithInstalledPlugins(t *testing.T) {
	const binDir = "/usr/lib/cni"
	prereq.CNIPlugins(t, binDir, allPlugins...)
	confDir := t.TempDir()
	written, err := EnsureConfig(context.Background(), ConfigOptions{
		ConfDir:  confDir,
		BinDir:   binDir,
		PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"},
	})
	if err != nil || !written {
		t.Fatalf("EnsureConfig() = %v, %v; want true, nil", written, err)
	}
}

func TestStatus(t *testing.T) {
	dir := t.TempDir()
	if ready, msg := Status(dir); ready || !strings.Contains(msg, "no CNI configuration file") {
		t.Errorf("Status(empty folder) = %v, %q; want false and a message", ready, msg)
	}
	if err := os.WriteFile(filepath.Join(dir, "10-pods.conflist"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ready, msg := Status(dir); !ready || msg != "" {
		t.Errorf("Status(folder with a conflist) = %v, %q; want true, no message", ready, msg)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
