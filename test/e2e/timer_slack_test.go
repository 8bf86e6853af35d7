package e2e

// nodelet on the real stack runs with --timer-slack's default: set on
// its threads at its start and inherited by every thread the Go runtime
// starts after, so none of them keeps the kernel's 50µs.

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestEveryNodeletThreadHasTheDefaultTimerSlack(t *testing.T) {
	const want = "10000000" // 10ms, in nanoseconds
	pid := f.Nodelet.PID()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("listing nodelet's threads: %v", err)
	}
	if len(tasks) < 2 {
		t.Fatalf("nodelet (PID %d) has %d threads; a Go program has more", pid, len(tasks))
	}
	for _, task := range tasks {
		slack, err := os.ReadFile(fmt.Sprintf("/proc/%s/timerslack_ns", task.Name()))
		if os.IsNotExist(err) {
			continue // the thread ended
		}
		if err != nil {
			t.Fatalf("reading the timer slack of nodelet's thread %s: %v", task.Name(), err)
		}
		if got := strings.TrimSpace(string(slack)); got != want {
			t.Errorf("nodelet's thread %s has a timer slack of %s ns, want %s", task.Name(), got, want)
		}
	}
}
