package main

// Tests of option parsing and the root dir lock: plain files in
// t.TempDir(), no cluster.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseOptionsFlagsWinOverTheConfigFile(t *testing.T) {
	config := filepath.Join(t.TempDir(), "nodelet.yaml")
	data := "nodeName: from-file\nmaxPods: 42\nrelistPeriod: 2s\nrootDir: /from/file\n"
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := parseOptions([]string{"--config", config, "--node-name=from-flag"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.NodeName != "from-flag" {
		t.Errorf("NodeName = %q, want the flag's", opts.NodeName)
	}
	if opts.MaxPods != 42 || opts.RelistPeriod.Duration != 2*time.Second || opts.RootDir != "/from/file" {
		t.Errorf("file settings not applied: maxPods %d, relistPeriod %s, rootDir %q", opts.MaxPods, opts.RelistPeriod.Duration, opts.RootDir)
	}
	if opts.ConcurrentReconciles != defaultOptions().ConcurrentReconciles {
		t.Errorf("ConcurrentReconciles = %d, want the default", opts.ConcurrentReconciles)
	}
}

func TestParseOptionsClusterDNS(t *testing.T) {
	config := filepath.Join(t.TempDir(), "nodelet.yaml")
	if err := os.WriteFile(config, []byte("clusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := parseOptions([]string{"--config", config}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fromFile.ClusterDNS, ","); got != "10.96.0.10" || fromFile.ClusterDomain != "cluster.local" {
		t.Errorf("from the file: clusterDNS %q, clusterDomain %q", got, fromFile.ClusterDomain)
	}
	fromFlags, err := parseOptions([]string{"--config", config, "--cluster-dns=10.97.0.10,fd00::10", "--cluster-domain=example.internal"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fromFlags.ClusterDNS, ","); got != "10.97.0.10,fd00::10" || fromFlags.ClusterDomain != "example.internal" {
		t.Errorf("from the flags: clusterDNS %q, clusterDomain %q", got, fromFlags.ClusterDomain)
	}
}

func TestParseOptionsRejectsBadInput(t *testing.T) {
	config := filepath.Join(t.TempDir(), "nodelet.yaml")
	if err := os.WriteFile(config, []byte("noSuchSetting: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"an unknown setting in the config file": {"--config", config},
		"a missing config file":                 {"--config", config + ".missing"},
		"no concurrency":                        {"--concurrent-reconciles=0"},
		"a negative relist period":              {"--relist-period=-1s"},
		"an unknown flag":                       {"--no-such-flag"},
		"no port":                               {"--port=0"},
		"a certificate without its key":         {"--tls-cert-file=/x.crt"},
		"an unknown authorization mode":         {"--authorization-mode=RBAC"},
		"a log size that is not a quantity":     {"--container-log-max-size=big"},
		"a single log file":                     {"--container-log-max-files=1"},
		"a cluster DNS that is not an IP":       {"--cluster-dns=10.96.0.10,kube-dns"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parseOptions(args, nil); err == nil {
				t.Errorf("parseOptions(%v) succeeded, want an error", args)
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
