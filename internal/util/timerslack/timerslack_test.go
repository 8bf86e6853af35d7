package timerslack

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// The test widens the slack of its own process's threads, through the
// real /proc files (root, or CAP_SYS_NICE, as nodelet runs). The threads
// keep it until the test binary ends.
func TestEveryThreadHoldsTheSlackAndThreadsStartedLaterInheritIt(t *testing.T) {
	const slack = 7 * time.Millisecond
	before, err := Of()
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(slack); err != nil {
		t.Fatal(err)
	}
	assertAll(t, slack)

	// Each goroutine locked to its thread holds that thread until it
	// ends, so the runtime has to start new ones.
	release := make(chan struct{})
	var started, done sync.WaitGroup
	for range len(before) + 8 {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	after := assertAll(t, slack)
	close(release)
	done.Wait()
	if len(after) <= len(before) {
		t.Fatalf("the process has %d threads after locking more goroutines than it had threads (%d): the test started none", len(after), len(before))
	}
}

func TestSetRefusesNoSlack(t *testing.T) {
	if err := Set(0); err == nil {
		t.Fatal("Set(0) = nil, want an error: 0 in the files is the kernel's default, not no slack")
	}
}

func assertAll(t *testing.T, want time.Duration) map[string]time.Duration {
	t.Helper()
	slacks, err := Of()
	if err != nil {
		t.Fatal(err)
	}
	for tid, have := range slacks {
		if have != want {
			t.Errorf("thread %s has a timer slack of %v, want %v", tid, have, want)
		}
	}
	return slacks
}
