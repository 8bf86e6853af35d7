package await

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeT records how a wait failed instead of failing the test running it.
type fakeT struct {
	ctx    context.Context
	failed string
}

func (f *fakeT) Helper()                  {}
func (f *fakeT) Context() context.Context { return f.ctx }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestEventuallyReturnsOnceTheCheckPasses(t *testing.T) {
	calls := 0
	ft := &fakeT{ctx: t.Context()}
	Eventually(ft, 10*time.Second, "the third call", func(context.Context) error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if ft.failed != "" {
		t.Errorf("Eventually failed the test: %s", ft.failed)
	}
	if calls != 3 {
		t.Errorf("check ran %d times, want 3 (until it passed)", calls)
	}
}

func TestEventuallyNamesWhatItAwaitedAndTheLastError(t *testing.T) {
	calls := 0
	ft := &fakeT{ctx: t.Context()}
	Eventually(ft, 50*time.Millisecond, "the pod to be Running", func(context.Context) error {
		calls++
		return fmt.Errorf("phase is Pending (call %d)", calls)
	})
	want := fmt.Sprintf("waiting 50ms for the pod to be Running: context deadline exceeded; last: phase is Pending (call %d)", calls)
	if ft.failed != want {
		t.Errorf("failure = %q, want %q", ft.failed, want)
	}
	if calls < 2 {
		t.Errorf("check ran %d times within its timeout, want it polled", calls)
	}
}

func TestPollKeepsTheReasonWhenTheDeadlineCutsACheckShort(t *testing.T) {
	first := true
	err := Poll(t.Context(), 50*time.Millisecond, func(ctx context.Context) error {
		if first {
			first = false
			return errors.New("not listening")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasSuffix(err.Error(), "last: not listening") {
		t.Errorf("Poll() = %v, want the deadline and the last real reason", err)
	}
}

func TestPollEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := Poll(ctx, time.Hour, Condition(func(context.Context) (bool, error) { return false, nil }))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotYet) {
		t.Errorf("Poll() = %v, want context.Canceled and ErrNotYet", err)
	}
}

func TestCondition(t *testing.T) {
	boom := errors.New("boom")
	cases := map[string]struct {
		done bool
		err  error
		want error
	}{
		"done":                    {done: true},
		"not done":                {want: ErrNotYet},
		"an error wins over done": {done: true, err: boom, want: boom},
		"an error is the reason":  {err: boom, want: boom},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Condition(func(context.Context) (bool, error) { return tc.done, tc.err })(t.Context())
			if !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("Condition() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{
		100 * time.Millisecond: minInterval,
		5 * time.Second:        50 * time.Millisecond,
		2 * time.Minute:        maxInterval,
	} {
		if got := interval(timeout); got != want {
			t.Errorf("interval(%s) = %s, want %s", timeout, got, want)
		}
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	ft := &fakeT{ctx: t.Context()}
	if got := Receive(ft, 10*time.Second, "a seven", ch); got != 7 || ft.failed != "" {
		t.Errorf("Receive() = %d, failure %q; want 7 and no failure", got, ft.failed)
	}
	Receive(ft, 20*time.Millisecond, "a second value", ch)
	if want := "waiting 20ms for a second value: nothing came"; ft.failed != want {
		t.Errorf("failure = %q, want %q", ft.failed, want)
	}
}
