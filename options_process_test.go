package main

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
	} {
		opts, err := parseOptions(append(c.args, "--node-name=n"), nil)
		if err != nil || opts.TimerSlack != c.want {
			t.Errorf("parseOptions(%v): timer slack %v, %v; want %v", c.args, opts.TimerSlack, err, c.want)
		}
	}
	if _, err := parseOptions([]string{"--node-name=n", "--timer-slack=-1ms"}, nil); err == nil {
		t.Error("--timer-slack=-1ms was taken, want an error")
	}
}

func TestGCPercentFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 200},
		{[]string{"--gc-percent=100"}, 100},
		{[]string{"--gc-percent=0"}, 0},
	} {
		opts, err := parseOptions(append(c.args, "--node-name=n"), nil)
		if err != nil || opts.GCPercent != c.want {
			t.Errorf("parseOptions(%v): GC percent %d, %v; want %d", c.args, opts.GCPercent, err, c.want)
		}
	}
	if _, err := parseOptions([]string{"--node-name=n", "--gc-percent=-1"}, nil); err == nil {
		t.Error("--gc-percent=-1 was taken, want an error")
	}
}
