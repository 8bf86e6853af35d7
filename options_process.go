package main

import (
	"github.com/spf13/pflag"

	"github.com/nodelet/nodelet/internal/timerslack"
)

// defaultTimerSlack is the slack nodelet's threads get unless told
// otherwise (see internal/timerslack).
const defaultTimerSlack = timerslack.Default

func (o *Options) bindProcessFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.TimerSlack, "timer-slack", o.TimerSlack, "How late the kernel may end nodelet's timed waits to serve them with other wakeups (its threads' timer slack); 0 leaves the kernel's (50µs). Setting it needs CAP_SYS_NICE.")
}
