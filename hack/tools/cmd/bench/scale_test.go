package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCountNodeRequestsAddsUpTheNodesOfEachWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	line := func(id, user, verb, resource string, at time.Duration) string {
		return `{"auditID":"` + id + `","verb":"` + verb + `","user":{"username":"` + user + `"},"objectRef":{"resource":"` + resource +
			`"},"requestReceivedTimestamp":"` + t0.Add(at).Format(time.RFC3339Nano) + `"}`
	}
	log := strings.Join([]string{
		line("1", "system:node:hollow-nodelet-000", "update", "leases", time.Second),
		line("2", "system:node:hollow-nodelet-001", "update", "leases", 2*time.Second),
		// A long-running request is logged twice under one ID.
		line("3", "system:node:hollow-nodelet-001", "watch", "pods", 3*time.Second),
		line("3", "system:node:hollow-nodelet-001", "watch", "pods", 3*time.Second),
		line("4", "system:kube-scheduler", "create", "pods/binding", 4*time.Second),
		line("5", "system:node:other", "update", "leases", 4*time.Second),
		line("6", "system:node:hollow-nodelet-000", "patch", "pods", 11*time.Second),
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	first := &scaleWindow{start: t0, end: t0.Add(10 * time.Second)}
	second := &scaleWindow{start: t0.Add(10 * time.Second), end: t0.Add(20 * time.Second)}
	if err := countNodeRequests(path, "system:node:hollow-nodelet-", []*scaleWindow{first, second}); err != nil {
		t.Fatal(err)
	}
	if first.Requests.Total != 3 || first.Requests.ByKey["update leases"] != 2 || first.Requests.ByKey["watch pods"] != 1 || first.NodeUsers != 2 {
		t.Errorf("first window: %+v from %d nodes, want 2 lease updates and 1 pod watch from 2", first.Requests, first.NodeUsers)
	}
	if second.Requests.Total != 1 || second.Requests.ByKey["patch pods"] != 1 || second.NodeUsers != 1 {
		t.Errorf("second window: %+v from %d nodes, want 1 pod patch from 1", second.Requests, second.NodeUsers)
	}
}

// What the hollow nodes leave where they like goes when they stop; what
// was there before they started stays.
func TestAgentProcsStopRemovesWhatTheyLeft(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "hollow-kubelet.old")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	var procs agentProcs
	if err := procs.leaveNothing(filepath.Join(dir, "hollow-kubelet.*"), filepath.Join(dir, "kubelet_remote_*.sock")); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(dir, "made")
	script := fmt.Sprintf("mkdir %[1]s/hollow-kubelet.new && touch %[1]s/hollow-kubelet.new/f %[1]s/kubelet_remote_1.sock %[1]s/other && touch %[2]s && exec sleep 60", dir, made)
	if err := procs.start(filepath.Join(dir, "log"), nil, "sh", "-c", script); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(made); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the process left nothing in 30s")
		}
	}
	procs.stop(10 * time.Second)

	for _, gone := range []string{"hollow-kubelet.new", "kubelet_remote_1.sock"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left after stop: %v", gone, err)
		}
	}
	for _, kept := range []string{"hollow-kubelet.old", "other"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s, there before or matching no pattern, is gone: %v", kept, err)
		}
	}
}
