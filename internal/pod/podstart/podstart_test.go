package podstart

// Pure tests of a start's breakdown: marks in, steps and durations out.

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBreakdown(t *testing.T) {
	created := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return created.Add(time.Duration(ms) * time.Millisecond) }
	tests := map[string]struct {
		marks       []Mark
		wantSteps   []string
		wantTook    []time.Duration
		wantTotal   time.Duration
		wantSlowest string
	}{
		"steps in the order they ended, each after the one before": {
			marks: []Mark{
				{Step: StepSeen, At: at(300)},
				{Step: StepSandboxCreated, At: at(900)},
				{Step: StepVolumesReady, At: at(400)},
				{Step: StepImageReady, Container: "app", At: at(2900)},
				{Step: StepContainerStarted, Container: "app", At: at(3000)},
			},
			wantSteps:   []string{"seen", "volumes_ready", "sandbox_created", "image_ready/app", "container_started/app"},
			wantTook:    []time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second, 100 * time.Millisecond},
			wantTotal:   3 * time.Second,
			wantSlowest: "image_ready/app",
		},
		"a step marked again keeps its first mark": {
			marks: []Mark{
				{Step: StepSeen, At: at(100)},
				{Step: StepSandboxCreated, At: at(500)},
				{Step: StepSeen, At: at(700)},
			},
			wantSteps:   []string{"seen", "sandbox_created"},
			wantTook:    []time.Duration{100 * time.Millisecond, 400 * time.Millisecond},
			wantTotal:   500 * time.Millisecond,
			wantSlowest: "sandbox_created",
		},
		"each container's step is its own": {
			marks: []Mark{
				{Step: StepContainerStarted, Container: "a", At: at(100)},
				{Step: StepContainerStarted, Container: "b", At: at(250)},
			},
			wantSteps:   []string{"container_started/a", "container_started/b"},
			wantTook:    []time.Duration{100 * time.Millisecond, 150 * time.Millisecond},
			wantTotal:   250 * time.Millisecond,
			wantSlowest: "container_started/b",
		},
		"a mark before the creation counts as at it": {
			marks: []Mark{
				{Step: StepSeen, At: at(-200)},
				{Step: StepAdmitted, At: at(50)},
			},
			wantSteps:   []string{"seen", "admitted"},
			wantTook:    []time.Duration{0, 50 * time.Millisecond},
			wantTotal:   50 * time.Millisecond,
			wantSlowest: "admitted",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			trace := &Trace{Created: created}
			for _, m := range tc.marks {
				trace.Mark(m.Step, m.Container, m.At)
			}
			b := trace.Breakdown()
			var steps []string
			var took []time.Duration
			var sum time.Duration
			for _, p := range b.Phases {
				steps = append(steps, p.Name())
				took = append(took, p.Took)
				sum += p.Took
			}
			if diff := cmp.Diff(tc.wantSteps, steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTook, took); diff != "" {
				t.Errorf("durations (-want +got):\n%s", diff)
			}
			if b.Total != tc.wantTotal || sum != b.Total {
				t.Errorf("total %s, steps add up to %s; want both %s", b.Total, sum, tc.wantTotal)
			}
			if slowest, _ := b.Slowest(); slowest.Name() != tc.wantSlowest {
				t.Errorf("slowest step %q, want %q", slowest.Name(), tc.wantSlowest)
			}
		})
	}
}

func TestBreakdownString(t *testing.T) {
	created := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	trace := &Trace{Created: created}
	trace.Mark(StepSeen, "", created.Add(120*time.Millisecond))
	trace.Mark(StepImageReady, "app", created.Add(1500*time.Millisecond))
	if got, want := trace.Breakdown().String(), "seen=120ms image_ready/app=1.38s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if _, ok := (Breakdown{}).Slowest(); ok {
		t.Error("an empty breakdown has a slowest step")
	}
}

func TestMarkStepReachesTheContextsMarker(t *testing.T) {
	var got []string
	ctx := WithMarker(context.Background(), func(step Step, container string) {
		got = append(got, Mark{Step: step, Container: container}.Name())
	})
	MarkStep(ctx, StepImageReady, "app")
	MarkStep(ctx, StepReady, "")
	// A context without a marker takes marks and does nothing.
	MarkStep(context.Background(), StepSeen, "")
	if diff := cmp.Diff([]string{"image_ready/app", "ready"}, got); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
}
