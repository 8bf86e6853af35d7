// Package await holds the one way nodelet's tests wait for something to
// happen: poll a check until it passes or a deadline passes, and then say
// what was awaited and why the check last failed. Tests never sleep in
// place of a wait.
package await

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Minimum and maximum poll intervals: a check runs about a hundred times
// within its timeout, never more often than every 10ms (checks that talk to
// an API server would load a busy machine) nor less often than every 250ms
// (a wait should not end much later than its condition).
const (
	minInterval = 10 * time.Millisecond
	maxInterval = 250 * time.Millisecond
)

// ErrNotYet is what a check returns when it has no better reason: the
// condition does not hold yet.
var ErrNotYet = errors.New("the condition does not hold yet")

// TB is the part of testing.TB Eventually uses.
type TB interface {
	Helper()
	Context() context.Context
	Fatalf(format string, args ...any)
}

// Eventually calls check until it returns nil, and fails the test if
// timeout passes first, naming what it awaited and check's last error.
// check runs on the test's goroutine, so it may fail the test itself when
// it sees something that must never happen; its context ends with the
// test or at the deadline.
func Eventually(t TB, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	if err := Poll(t.Context(), timeout, check); err != nil {
		t.Fatalf("waiting %s for %s: %v", timeout, what, err)
	}
}

// Poll is Eventually returning the error, for waits whose failure message
// says more than check's last error (for example a pod's last state). The
// error wraps context.DeadlineExceeded (or ctx's error) and names check's
// last error.
func Poll(ctx context.Context, timeout time.Duration, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(interval(timeout))
	defer ticker.Stop()
	var last error
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		// A check cut short by the deadline says nothing new: keep the
		// reason it gave before.
		if last == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last: %w", ctx.Err(), last)
		case <-ticker.C:
		}
	}
}

// Condition turns a check of the form "done, or an error" into one for
// Eventually and Poll: not done without an error is ErrNotYet.
func Condition(cond func(ctx context.Context) (bool, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		done, err := cond(ctx)
		switch {
		case err != nil:
			return err
		case !done:
			return ErrNotYet
		}
		return nil
	}
}

func interval(timeout time.Duration) time.Duration {
	return min(max(timeout/100, minInterval), maxInterval)
}

// Receive waits for a value from ch and returns it, and fails the test if
// timeout passes first, naming what it awaited.
func Receive[T any](t TB, timeout time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waiting %s for %s: nothing came", timeout, what)
	case <-t.Context().Done():
		t.Fatalf("waiting %s for %s: %v", timeout, what, t.Context().Err())
	}
	var zero T
	return zero
}
