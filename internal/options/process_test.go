package options

import (
	"testing"
	"time"
)

func TestTimerSlackFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 10 * time.Millisecond},
		{[]string{"--timer-slack=2ms"}, 2 * time.Millisecond},
		{[]string{"--timer-slack=0"}, 0},
		// In the file, too, 0 is the kernel's, not left out.
		{[]string{"--config", writeConfig(t, configHeader+"timerSlack: 0s\n")}, 0},
	} {
		opts, err := Parse(append(c.args, "--node-name=n"), nil)
		if err != nil {
			t.Errorf("Parse(%v): %v", c.args, err)
			continue
		}
		if opts.TimerSlack.Duration != c.want {
			t.Errorf("Parse(%v): timer slack %v, want %v", c.args, opts.TimerSlack.Duration, c.want)
		}
	}
	if _, err := Parse([]string{"--node-name=n", "--timer-slack=-1ms"}, nil); err == nil {
		t.Error("--timer-slack=-1ms was taken, want an error")
	}
}

func TestGCPercentFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int32
	}{
		{nil, 200},
		{[]string{"--gc-percent=100"}, 100},
		{[]string{"--gc-percent=0"}, 0},
		{[]string{"--config", writeConfig(t, configHeader+"gcPercent: 0\n")}, 0},
	} {
		opts, err := Parse(append(c.args, "--node-name=n"), nil)
		if err != nil {
			t.Errorf("Parse(%v): %v", c.args, err)
			continue
		}
		if *opts.GCPercent != c.want {
			t.Errorf("Parse(%v): GC percent %d, want %d", c.args, *opts.GCPercent, c.want)
		}
	}
	if _, err := Parse([]string{"--node-name=n", "--gc-percent=-1"}, nil); err == nil {
		t.Error("--gc-percent=-1 was taken, want an error")
	}
}
