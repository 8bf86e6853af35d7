package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFindStartStepsReadsTheLastLineOfThePod(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"info","msg":"Syncing pod","pod":{"name":"p1","namespace":"bench"}}`,
		`{"level":"info","msg":"Pod started","pod":{"name":"p1","namespace":"bench"},"total":"1s","steps":"seen=100ms sandbox_created=600ms image_ready/a=10ms image_ready/b=20ms status_written=270ms"}`,
		`{"level":"info","msg":"Pod started","pod":{"name":"p2","namespace":"bench"},"total":"2s","steps":"seen=2s"}`,
		`not json "Pod started"`,
	}, "\n")
	told, found, err := findStartSteps([]byte(log), "bench", "p1")
	if err != nil || !found {
		t.Fatalf("findStartSteps() = found %v, err %v", found, err)
	}
	steps, order := told.Steps, told.Order
	want := map[string]float64{"seen": 0.1, "sandbox_created": 0.6, "image_ready": 0.03, "status_written": 0.27}
	if diff := cmp.Diff(want, steps, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"seen", "sandbox_created", "image_ready", "status_written"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if _, found, _ := findStartSteps([]byte(log), "other", "p1"); found {
		t.Error("found a start of a pod in another namespace")
	}
	if _, _, err := findStartSteps([]byte(`{"msg":"Pod started","pod":{"name":"x","namespace":"n"},"steps":"seen=soon"}`), "n", "x"); err == nil {
		t.Error("a step that is not a duration was taken")
	}
}

func TestSeenCountsFromTheCreateRequest(t *testing.T) {
	log := `{"level":"info","ts":"2026-11-27T06:11:30.845Z","msg":"Pod started","pod":{"name":"p1","namespace":"bench"},"total":"845ms","steps":"seen=229ms sandbox_created=203ms container_started/a=60ms container_started/b=40ms status_written=28ms"}`
	told, found, err := findStartSteps([]byte(log), "bench", "p1")
	if err != nil || !found {
		t.Fatalf("findStartSteps() = found %v, err %v", found, err)
	}
	// The request went out 400ms before the line: the other steps took
	// 331ms of it.
	request := time.Date(2026, 11, 27, 6, 11, 30, 445_000_000, time.UTC)
	told.seenSinceRequest(request)
	if got := told.Steps["seen"]; got < 0.0689 || got > 0.0691 {
		t.Errorf("seen = %v, want 0.069", got)
	}
	// A request after the line (clocks apart) leaves seen as told.
	told.Steps["seen"] = 0.229
	told.seenSinceRequest(request.Add(time.Second))
	if got := told.Steps["seen"]; got != 0.229 {
		t.Errorf("seen = %v after an impossible request time, want 0.229 as told", got)
	}
}

func TestBreakdownPrintsTheMedianOfEachStep(t *testing.T) {
	results := &Results{Agents: map[string]*AgentResults{
		"nodelet": {Single: []PodRun{
			{Steps: map[string]float64{"seen": 0.1, "sandbox_created": 0.5}, StepOrder: []string{"seen", "sandbox_created"}},
			{Steps: map[string]float64{"seen": 0.3, "sandbox_created": 0.7, "ready": 0.1}, StepOrder: []string{"seen", "sandbox_created", "ready"}},
			{Steps: map[string]float64{"seen": 0.2, "sandbox_created": 0.6}, StepOrder: []string{"seen", "sandbox_created"}},
		}},
		"kubelet": {Single: []PodRun{{ReadySeconds: 1}}},
	}}
	steps, medians := medianBreakdown(results.Agents["nodelet"].Single)
	if diff := cmp.Diff([]string{"seen", "sandbox_created", "ready"}, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{0.2, 0.6, 0}, medians, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("medians (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	writeBreakdown(&text, results, false)
	if !strings.Contains(text.String(), "where nodelet's single-pod start goes") || strings.Contains(text.String(), "kubelet's") {
		t.Errorf("breakdown text:\n%s", text.String())
	}
	var md bytes.Buffer
	writeBreakdown(&md, results, true)
	if !strings.Contains(md.String(), "| sandbox_created | 0.600 |") {
		t.Errorf("breakdown markdown:\n%s", md.String())
	}
}
