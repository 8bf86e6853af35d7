package main

import (
	"time"

	"github.com/spf13/pflag"
)

// defaultTimerSlack is 1% of the shortest period nodelet keeps (the PLEG's
// relist, a second): a timer that much late changes nothing a user can
// see, and it lets the kernel fold most of the process's wakeups
// together (see internal/timerslack).
const defaultTimerSlack = 10 * time.Millisecond

func (o *Options) bindProcessFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.TimerSlack, "timer-slack", o.TimerSlack, "How late the kernel may end nodelet's timed waits to serve them with other wakeups (its threads' timer slack); 0 leaves the kernel's (50µs). Setting it needs CAP_SYS_NICE.")
}
