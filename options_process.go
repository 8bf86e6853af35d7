package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/nodelet/nodelet/internal/util/timerslack"
)

// defaultTimerSlack is the slack nodelet's threads get unless told
// otherwise (see internal/timerslack).
const defaultTimerSlack = timerslack.Default

// defaultGCPercent lets nodelet's heap grow to three times what is live
// before the Go runtime collects it, where Go's default is twice. nodelet's
// live heap is small (tens of MiB for a full node) and most of what it
// allocates lives for one reconcile, so collecting half as often costs about
// ten MiB of resident memory and saves about a tenth of its CPU in a burst of
// pod starts (see "What made it fast").
const defaultGCPercent = 200

func (o *Options) bindProcessFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.TimerSlack, "timer-slack", o.TimerSlack, "How late the kernel may end nodelet's timed waits to serve them with other wakeups (its threads' timer slack); 0 leaves the kernel's (50µs). Setting it needs CAP_SYS_NICE.")
	fs.IntVar(&o.GCPercent, "gc-percent", o.GCPercent, "How much nodelet's heap may grow, in percent of what is live after a collection, before the Go runtime collects again; 0 leaves the Go runtime's (GOGC, or 100).")
}

// validateProcess checks the options that tune nodelet's own process.
func (o *Options) validateProcess() error {
	if o.TimerSlack < 0 {
		return fmt.Errorf("--timer-slack %v: want 0 (the kernel's) or more", o.TimerSlack)
	}
	if o.GCPercent < 0 {
		// A negative percent turns the collector off: the heap would grow
		// until the node ran out of memory.
		return fmt.Errorf("--gc-percent %d: want 0 (the Go runtime's) or more", o.GCPercent)
	}
	return nil
}
