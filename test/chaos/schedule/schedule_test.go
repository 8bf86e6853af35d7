package schedule

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seeds is how many seeds each case plans: the gate's seed is one of
// them, and a draw that leaves a kind out now and then is caught.
const seeds = 2000

// firedBy is the kinds of the faults over by the given time, sorted.
func firedBy(s Schedule, by time.Duration) []string {
	var kinds []string
	for _, step := range s.Steps {
		if step.End <= by {
			kinds = append(kinds, step.Kind)
		}
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

func TestPlanFiresEveryKind(t *testing.T) {
	every := slices.Sorted(slices.Values(Names))
	tests := map[string]struct {
		run, apiStopMax time.Duration
		// wantAllBy is when every kind has fired at the latest.
		wantAllBy time.Duration
	}{
		"the gate's two minutes, the API server stopped up to 20 s": {
			run: 2 * time.Minute, apiStopMax: 20 * time.Second, wantAllBy: 2 * time.Minute,
		},
		"a minute and a half, the spans shortened more": {
			run: 90 * time.Second, apiStopMax: 20 * time.Second, wantAllBy: 90 * time.Second,
		},
		"a long run at full size": {
			run: 30 * time.Minute, apiStopMax: time.Minute, wantAllBy: 30 * time.Minute,
		},
		// Pauses 6 × 4 s, holds 0+0+5+3+5+10 s, allowances 18 s.
		"a run too short for the minima overruns by the first round, whole": {
			run: 20 * time.Second, apiStopMax: 20 * time.Second, wantAllBy: 65 * time.Second,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= seeds; seed++ {
				s := Plan(seed, tc.run, Pauses, Kinds(tc.apiStopMax))
				if diff := cmp.Diff(every, firedBy(s, tc.wantAllBy)); diff != "" {
					t.Fatalf("seed %d: the kinds fired by %s (-every kind +fired):\n%s\nplan: %+v", seed, tc.wantAllBy, diff, s.Steps)
				}
			}
		})
	}
}

// TestPlanKeepsItsShape checks, over many seeds and run lengths, what
// the injector relies on: each round holds every kind once, one fault
// follows another with its pause, each pause and hold is in its scaled
// range, and no fault after the first round is planned that could not be
// over before the run ends.
func TestPlanKeepsItsShape(t *testing.T) {
	for _, run := range []time.Duration{20 * time.Second, 2 * time.Minute, 5 * time.Minute} {
		kinds := Kinds(20 * time.Second)
		for seed := uint64(1); seed <= seeds; seed++ {
			s := Plan(seed, run, Pauses, kinds)
			pauses := Pauses.scaled(s.Scale)
			rounds := map[int][]string{}
			var end, soonest time.Duration
			for i, step := range s.Steps {
				kind := kinds[slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == step.Kind })]
				hold := kind.Hold.scaled(s.Scale)
				switch {
				case step.Start != end+step.Pause || step.End != step.Start+step.Hold+kind.Allowance:
					t.Fatalf("run %s seed %d: step %d %+v does not follow the one before, over at %s", run, seed, i, step, end)
				case step.Pause < pauses.Min || step.Pause > pauses.Max:
					t.Fatalf("run %s seed %d: step %d's pause %s is out of %v", run, seed, i, step.Pause, pauses)
				case step.Hold < hold.Min || step.Hold > hold.Max:
					t.Fatalf("run %s seed %d: step %d's hold %s is out of %v", run, seed, i, step.Hold, hold)
				case step.Round > 0 && soonest+step.Pause+step.Hold+kind.Allowance > run:
					t.Fatalf("run %s seed %d: step %d of round %d cannot be over before the run ends", run, seed, i, step.Round)
				}
				end, soonest = step.End, soonest+step.Pause+step.Hold
				rounds[step.Round] = append(rounds[step.Round], step.Kind)
			}
			for round, got := range rounds {
				slices.Sort(got)
				want := slices.Sorted(slices.Values(Names))
				if round > 0 && round == len(rounds)-1 {
					// The run's end may cut the last round short: it
					// holds each of its kinds once all the same.
					want = slices.Compact(slices.Clone(got))
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("run %s seed %d: round %d's kinds (-want +got):\n%s", run, seed, round, diff)
				}
			}
		}
	}
}

func TestPlanIsAFunctionOfItsSeed(t *testing.T) {
	kinds := Kinds(20 * time.Second)
	first := Plan(1, 2*time.Minute, Pauses, kinds)
	if diff := cmp.Diff(first, Plan(1, 2*time.Minute, Pauses, kinds)); diff != "" {
		t.Errorf("seed 1 planned twice (-first +second):\n%s", diff)
	}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 100; seed++ {
		var order []string
		for _, step := range Plan(seed, 2*time.Minute, Pauses, kinds).Steps[:len(kinds)] {
			order = append(order, step.Kind)
		}
		orders[strings.Join(order, ",")] = true
	}
	// 720 orders of six kinds: a hundred seeds drawing few of them would
	// be a bag that is not shuffled.
	if len(orders) < 50 {
		t.Errorf("100 seeds drew %d orders of the first round, want at least 50", len(orders))
	}
}

func TestFit(t *testing.T) {
	kinds := Kinds(20 * time.Second)
	// The kinds' minima and allowances with six pauses at 4 s: 65 s; the
	// spans above them: six pauses of 8 s and 3+3+10+17+35+30 s of holds,
	// 146 s.
	tests := map[string]struct {
		run  time.Duration
		want float64
	}{
		"the gate's two minutes shorten every span": {run: 2 * time.Minute, want: 55.0 / 146},
		"a round at full size fits exactly":         {run: 211 * time.Second, want: 1},
		"a long run is at full size":                {run: 30 * time.Minute, want: 1},
		"the minima alone fit exactly":              {run: 65 * time.Second, want: 0},
		"shorter than the minima":                   {run: 20 * time.Second, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fit(tc.run, Pauses, kinds)); diff != "" {
				t.Errorf("fit(%s) (-want +got):\n%s", tc.run, diff)
			}
		})
	}
}

func TestKindsAreNamedInOrder(t *testing.T) {
	var names []string
	for _, k := range Kinds(20 * time.Second) {
		names = append(names, k.Name)
	}
	if diff := cmp.Diff(Names, names); diff != "" {
		t.Errorf("Kinds() names (-Names +Kinds):\n%s", diff)
	}
}
