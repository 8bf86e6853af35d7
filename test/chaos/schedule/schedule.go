// Package schedule plans a chaos run's faults: which kind comes next,
// after what pause, held for how long.
//
// Kinds come out of a bag: each round holds every kind once, in an order
// the seed draws. A uniform draw of each fault's kind left whole kinds
// out of a short run (seed 1's two-minute gate never SIGKILLed nodelet);
// a bag cannot, once a round fits in the run. So that one does, a run
// too short for a round at full size has its pauses and holds shortened
// (Plan's scale), down to their minima; and the first round is planned
// whole even in a run too short for those, to overrun rather than lose a
// kind. Plan is pure, the seed and the durations in and the steps out, so
// a test shows that every kind fires, for every seed, within the gate's
// two minutes.
package schedule

import (
	"math/rand/v2"
	"time"
)

// The kinds of faults, as the run's figure counts them.
const (
	NodeletKilled       = "nodelet SIGKILL"
	ContainerdRestarted = "containerd restart"
	CRIFaults           = "CRI faults"
	APIServerStopped    = "API server stopped"
	CNIFailing          = "CNI plugins failing"
	DiskFilled          = "disk filled"
)

// Names are the kinds' names in the order Kinds lists them, the figure's.
var Names = []string{NodeletKilled, ContainerdRestarted, CRIFaults, APIServerStopped, CNIFailing, DiskFilled}

// Range is a span of durations, both ends included.
type Range struct {
	Min, Max time.Duration
}

// scaled keeps the minimum and shortens the span above it to the part
// scale says (rounded down, so that a round planned at its longest never
// takes longer than fit reckoned).
func (r Range) scaled(scale float64) Range {
	return Range{Min: r.Min, Max: r.Min + time.Duration(scale*float64(r.Max-r.Min))}
}

// draw is a duration of the range in whole milliseconds, as the trace and
// the figure print them.
func (r Range) draw(rng *rand.Rand) time.Duration {
	return r.Min + time.Duration(rng.Int64N(int64((r.Max-r.Min)/time.Millisecond)+1))*time.Millisecond
}

// Kind is a kind of fault and how long one lasts.
type Kind struct {
	Name string
	// Hold is how long a fault of the kind lasts at full size.
	Hold Range
	// Allowance is what undoing it may take beyond Hold on a loaded
	// machine: a run's plan counts it, so that the next fault is not
	// planned to begin before this one is over.
	Allowance time.Duration
}

// Pauses are the pauses between faults at full size, during which the
// churn goes on with nothing failing.
var Pauses = Range{Min: 4 * time.Second, Max: 12 * time.Second}

// Kinds are the chaos run's faults; the API server is stopped for at
// most apiStopMax (at least 3 s).
func Kinds(apiStopMax time.Duration) []Kind {
	return []Kind{
		// Down for Hold; the kill is waited for, the start is not.
		{Name: NodeletKilled, Hold: Range{Max: 3 * time.Second}, Allowance: 2 * time.Second},
		// Down for Hold; containerd must exit on SIGTERM first and, once
		// started again, answer a CRI call.
		{Name: ContainerdRestarted, Hold: Range{Max: 3 * time.Second}, Allowance: 10 * time.Second},
		{Name: CRIFaults, Hold: Range{Min: 5 * time.Second, Max: 15 * time.Second}, Allowance: time.Second},
		{Name: APIServerStopped, Hold: Range{Min: 3 * time.Second, Max: max(apiStopMax, 3*time.Second)}, Allowance: time.Second},
		// Hold covers both the plugins failing and the hang of a call
		// that began just before they were set right.
		{Name: CNIFailing, Hold: Range{Min: 5 * time.Second, Max: 40 * time.Second}, Allowance: 2 * time.Second},
		// At least the eviction manager's period (10 s), so that one of
		// its readings sees the disk full.
		{Name: DiskFilled, Hold: Range{Min: 10 * time.Second, Max: 40 * time.Second}, Allowance: 2 * time.Second},
	}
}

// Step is one fault of the plan.
type Step struct {
	Kind string
	// Round counts the rounds of the bag from 0; the first is whole
	// whatever the run's length.
	Round int
	// Pause is the time between the end of the step before and this
	// fault.
	Pause time.Duration
	// Hold is how long the fault lasts.
	Hold time.Duration
	// Start is when the fault begins at the latest, from the start of the
	// run (every fault before it taking its whole Allowance), and End when
	// it is over at the latest: Hold and its kind's Allowance later.
	Start, End time.Duration
}

// Schedule is a run's plan.
type Schedule struct {
	// Scale is the part of each range's span above its minimum that the
	// run has room for: 1 is full size, 0 the minima alone.
	Scale float64
	Steps []Step
}

// Plan draws the faults of a run of the given length from seed: rounds of
// the bag of kinds, each fault after a pause, the first round whole.
// Pauses and holds are scaled by fit's scale. The faults of later rounds
// are planned for as long as one could still be over before the run
// ends, were the faults before it undone as soon as their holds ended;
// the injector injects one only if, by the clock, it will be over before
// the deadline at the latest (Start to End).
func Plan(seed uint64, run time.Duration, pauses Range, kinds []Kind) Schedule {
	scale := fit(run, pauses, kinds)
	pauses = pauses.scaled(scale)
	rng := rand.New(rand.NewPCG(seed, 3))
	s := Schedule{Scale: scale}
	// at is when the last fault is over at the latest, soonest when it
	// may be.
	var at, soonest time.Duration
	for round := 0; len(kinds) > 0; round++ {
		roundStart := at
		for _, i := range rng.Perm(len(kinds)) {
			kind := kinds[i]
			step := Step{Kind: kind.Name, Round: round, Pause: pauses.draw(rng), Hold: kind.Hold.scaled(scale).draw(rng)}
			step.Start = at + step.Pause
			step.End = step.Start + step.Hold + kind.Allowance
			if round > 0 && soonest+step.Pause+step.Hold+kind.Allowance > run {
				return s
			}
			s.Steps = append(s.Steps, step)
			at, soonest = step.End, soonest+step.Pause+step.Hold
		}
		// Rounds that take no time would never reach the run's end.
		if at == roundStart {
			break
		}
	}
	return s
}

// fit is the scale at which a round at its longest (every pause and hold
// at its scaled maximum, every allowance) takes no longer than run: 1
// when the ranges fit at full size, 0 when not even their minima do (the
// first round then overruns the run).
func fit(run time.Duration, pauses Range, kinds []Kind) float64 {
	n := time.Duration(len(kinds))
	fixed, span := n*pauses.Min, n*(pauses.Max-pauses.Min)
	for _, k := range kinds {
		fixed += k.Hold.Min + k.Allowance
		span += k.Hold.Max - k.Hold.Min
	}
	if span <= 0 {
		return 1
	}
	return min(1, max(0, float64(run-fixed)/float64(span)))
}
