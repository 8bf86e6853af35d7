package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A short run without bursts or idling (docs/development.md's "shorter run" with
// BENCH_FLAGS) still gets its chart: the panels with nothing to show are
// left out instead of failing the plot.
func TestChartOfARunWithoutBursts(t *testing.T) {
	results := &Results{Agents: map[string]*AgentResults{
		"nodelet": {Single: []PodRun{
			{ReadySeconds: 0.2, GoneSeconds: 0.2, Requests: &requestCounts{Total: 11}},
			{ReadySeconds: 0.3, GoneSeconds: 0.2, Requests: &requestCounts{Total: 12}},
		}},
		"kubelet": {Single: []PodRun{
			{ReadySeconds: 0.5, GoneSeconds: 1.5, Requests: &requestCounts{Total: 22}},
			{ReadySeconds: 0.6, GoneSeconds: 1.4, Requests: &requestCounts{Total: 23}},
		}},
	}}
	path := filepath.Join(t.TempDir(), "bench.png")
	if err := writeChart(path, results); err != nil {
		t.Fatalf("writeChart() = %v", err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Errorf("no chart written: %v", err)
	}
}
