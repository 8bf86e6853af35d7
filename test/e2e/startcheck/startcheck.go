// Package startcheck holds nodelet's account of a pod's start (its "Pod
// started" log line) against the same start as the API server saw it. It
// is the e2e start breakdown test's judgement, kept pure so that what
// fails it can be shown without a stack.
package startcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodelet/nodelet/internal/pod/podstart"
)

// Step is one step of the line: its name and how long it took after the
// step before, rounded to the millisecond as nodelet logs it.
type Step struct {
	Name string
	Took time.Duration
}

// Told is a start as nodelet told it: from the pod's creation to the end
// of its last step, and the steps.
type Told struct {
	Total time.Duration
	Steps []Step
}

// Parse reads the line's total and steps ("seen=412ms admitted=0s ...").
func Parse(total, steps string) (Told, error) {
	t, err := time.ParseDuration(total)
	if err != nil {
		return Told{}, fmt.Errorf("total %q: %w", total, err)
	}
	told := Told{Total: t}
	for _, field := range strings.Fields(steps) {
		name, took, ok := strings.Cut(field, "=")
		d, err := time.ParseDuration(took)
		if !ok || err != nil {
			return Told{}, fmt.Errorf("step %q of %q is not name=duration", field, steps)
		}
		told.Steps = append(told.Steps, Step{Name: name, Took: d})
	}
	return told, nil
}

// Seen is the status patch that made the pod Ready as the API server's
// audit log has it, on the node's clock, counted from the pod's creation:
// when the server received it, and when it answered it (the
// ResponseComplete stamp, taken once its handling was done and before
// the answer left).
type Seen struct {
	Received, Answered time.Duration
}

// Problems says, each in a sentence, where told does not account for the
// start the API server saw; none when it does. want are the steps the
// start must have, in the order they happen.
//
// No bound depends on how fast or busy the machine is: the steps' sum is
// arithmetic, the rest the order of events on one clock, each loose only
// by nodelet's rounding to the millisecond. The steps add up to the total: none is
// left out of the line or counted twice. The start ends with its status
// written, and that step holds the API server's handling of the patch
// making the pod Ready: nodelet found the pod Ready (the end of ready)
// before the server received that patch, and its breakdown ends no
// earlier than the server's answer. A start counted from before the
// creation ends ready too late; one counted from after it, or ended
// before the answer came back (its last step left out, or taken as the
// request was sent), ends too early.
//
// What is not bounded is how long after the server's answer the
// breakdown ends: the answer crossing the loopback and nodelet's reader
// getting a CPU, which no start, slow or fast, has any share of. It is
// the machine's: in the runs this check was written from it took under
// 4 ms for most pods, but 14 and 21 ms for the first pod of a run on two
// cores busy with a build, or with two CPU-bound loops beside the stack;
// there a message between two sleeping processes over loopback took over
// 30 ms once in a thousand tries, and up to 850 ms with a build running
// as well. A bound that holds there says nothing of nodelet's accounting:
// that time is a figure to measure on a quiet machine, as benchmarks do,
// and the e2e test logs it.
func Problems(told Told, seen Seen, want []string) []string {
	var problems []string
	// Each step and the total are rounded to the millisecond on their
	// own: the steps add up to the total within half a millisecond each,
	// and the total's half.
	var sum time.Duration
	var names []string
	for _, s := range told.Steps {
		sum += s.Took
		names = append(names, s.Name)
	}
	if diff := (sum - told.Total).Abs(); diff > time.Duration(len(told.Steps)+1)*time.Millisecond/2 {
		problems = append(problems, fmt.Sprintf("the steps add up to %s, not to the total %s: a step is left out or counted twice", sum, told.Total))
	}

	last := -1
	for _, w := range want {
		i := slices.Index(names, w)
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("no step %s", w))
		case i < last:
			problems = append(problems, fmt.Sprintf("step %s comes before %s", w, names[last]))
		default:
			last = i
		}
	}
	if n := len(names); n > 0 && names[n-1] != string(podstart.StepStatusWritten) {
		problems = append(problems, fmt.Sprintf("the last step is %s, not %s: a start ends when the API server holds the Ready status", names[n-1], podstart.StepStatusWritten))
	}

	// The end of ready is the total less the steps after it, each
	// rounded.
	if i := slices.Index(names, string(podstart.StepReady)); i >= 0 {
		readyEnd, rounding := told.Total, time.Millisecond/2
		for _, s := range told.Steps[i+1:] {
			readyEnd -= s.Took
			rounding += time.Millisecond / 2
		}
		if readyEnd > seen.Received+rounding {
			problems = append(problems, fmt.Sprintf("ready ends %s after the creation, after the API server received the Ready patch (%s): the pod was found Ready after its status was sent, or the start is counted from before the creation", readyEnd, seen.Received))
		}
	}
	// The answer leaves after the stamp: it is the Pod in protobuf,
	// which nodelet's client asks for (2.6 KB for the e2e test's pods),
	// under the 4 KiB the HTTP/2 server buffers before it sends anything,
	// so it is sent once the handler chain, whose audit filter takes the
	// stamp on its way out, has returned.
	if told.Total < seen.Answered-time.Millisecond/2 {
		problems = append(problems, fmt.Sprintf("the breakdown ends %s after the creation, before the API server answered the Ready patch (%s): a step at the end is left out, or the start is counted from after the creation", told.Total, seen.Answered))
	}
	return problems
}
