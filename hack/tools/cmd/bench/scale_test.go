package main

import (
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
