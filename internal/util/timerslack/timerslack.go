// Package timerslack widens the timer slack of the process's threads: how
// late the kernel may end a thread's timed wait so as to serve it together
// with other wakeups (prctl's PR_SET_TIMERSLACK; 50µs by default).
//
// nodelet waits for events and wakes often, briefly. The Go runtime's
// monitor thread (sysmon) then polls every 20µs to 10ms, and each of its
// wakeups costs the process a context switch; on a virtual machine, where
// arming a timer and switching are dear, it was about a quarter of nodelet's CPU
// while a burst of pods started, and none of it shows in a Go profile.
// With a slack of milliseconds those polls and the other threads' timed
// waits fold into far fewer wakeups.
package timerslack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Default is 1% of the shortest period nodelet keeps (the PLEG's relist, a
// second): a timer that much late changes nothing a user can see, and it
// lets the kernel fold most of the process's wakeups together.
const Default = 10 * time.Millisecond

// taskDir lists the process's threads. A thread's slack is not in its
// folder there but in /proc/<thread ID>, which is the thread's own view.
const taskDir = "/proc/self/task"

func slackFile(tid string) string { return filepath.Join("/proc", tid, "timerslack_ns") }

// maxPasses bounds Set's walks over the threads: the runtime may start a
// thread during a walk from one the walk has not reached yet.
const maxPasses = 5

// Set gives every thread of the process the slack d, which must be
// positive (the files' 0 is the kernel's default). A thread started later
// inherits the slack of the thread that starts it, so once every thread
// holds d, every later one does too. Writing another thread's slack needs
// CAP_SYS_NICE.
func Set(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("timer slack %v: want a positive duration", d)
	}
	for range maxPasses {
		wrote, err := setAll(d)
		if err != nil || !wrote {
			return err
		}
	}
	return fmt.Errorf("threads were still starting without a timer slack of %v after %d passes", d, maxPasses)
}

// setAll writes d to every thread's slack that differs, and says whether
// it wrote any.
func setAll(d time.Duration) (bool, error) {
	slacks, err := Of()
	if err != nil {
		return false, err
	}
	want := []byte(strconv.FormatInt(d.Nanoseconds(), 10))
	wrote := false
	for tid, have := range slacks {
		if have == d {
			continue
		}
		if err := os.WriteFile(slackFile(tid), want, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return wrote, fmt.Errorf("setting the timer slack of thread %s: %w", tid, err)
		}
		wrote = true
	}
	return wrote, nil
}

// Of returns the slack of every thread of the process, by thread ID.
func Of() (map[string]time.Duration, error) {
	tids, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, fmt.Errorf("listing the process's threads: %w", err)
	}
	slacks := map[string]time.Duration{}
	for _, tid := range tids {
		have, err := os.ReadFile(slackFile(tid.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			return nil, fmt.Errorf("reading the timer slack of thread %s: %w", tid.Name(), err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(have)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("timer slack of thread %s: %w", tid.Name(), err)
		}
		slacks[tid.Name()] = time.Duration(ns)
	}
	return slacks, nil
}
