package startcheck

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var want = []string{"seen", "admitted", "volumes_ready", "env_ready", "sandbox_turn", "sandbox_created",
	"image_ready/app", "container_created/app", "container_started/app", "ready", "status_written"}

// wholeStart is a start as nodelet tells it, 980 ms long, and the API
// server's stamps of its Ready patch: received 2 ms after the pod was
// found Ready, answered 8 ms later, the answer read 4 ms after that.
// Each case changes one of the three.
func wholeStart() (string, string, Seen) {
	return "980ms",
		"seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
			"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=14ms",
		Seen{Received: 968 * time.Millisecond, Answered: 976 * time.Millisecond}
}

// later moves the server's stamps by d, as a start longer by d would.
func later(d time.Duration) func(*Seen) {
	return func(s *Seen) { s.Received, s.Answered = s.Received+d, s.Answered+d }
}

func TestProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		total, steps string
		seen         func(*Seen)
		wantProblems []string
	}{
		"a whole start has none": {},
		"a start whose answer began to arrive within rounding before the stamp has none": {
			seen: func(s *Seen) { s.Answered = 980*time.Millisecond + 400*time.Microsecond },
		},
		"a step left out of the line is missing from the sum and by name": {
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=14ms",
			wantProblems: []string{
				"the steps add up to 592ms, not to the total 980ms: a step is left out or counted twice",
				"no step sandbox_created",
			},
		},
		"a step of no time left out of the line is missing by name": {
			steps: "seen=412ms volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=14ms",
			wantProblems: []string{"no step admitted"},
		},
		"a step counted twice is over the total": {
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms container_started/app=70ms ready=2ms status_written=14ms",
			wantProblems: []string{"the steps add up to 1.05s, not to the total 980ms: a step is left out or counted twice"},
		},
		"steps rounded each to the millisecond may be half a millisecond each off the total": {
			total: "986ms",
			seen:  later(6 * time.Millisecond),
		},
		"steps further off the total than their rounding are not the whole start": {
			total:        "987ms",
			seen:         later(7 * time.Millisecond),
			wantProblems: []string{"the steps add up to 980ms, not to the total 987ms: a step is left out or counted twice"},
		},
		"a start ended when the pod was found Ready, without its status written, ends before the answer": {
			total: "966ms",
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms",
			wantProblems: []string{
				"no step status_written",
				"the last step is ready, not status_written: a start ends when the API server holds the Ready status",
				"the breakdown ends 966ms after the creation, before the API server answered the Ready patch (976ms): a step at the end is left out, or the start is counted from after the creation",
			},
		},
		"a start counted from the first reconcile, not the creation, ends before the answer": {
			total: "568ms",
			steps: "seen=0s admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=14ms",
			wantProblems: []string{
				"the breakdown ends 568ms after the creation, before the API server answered the Ready patch (976ms): a step at the end is left out, or the start is counted from after the creation",
			},
		},
		"a start counted from a second before the creation is found Ready after its status was received": {
			total: "1.98s",
			steps: "seen=1.412s admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=14ms",
			wantProblems: []string{
				"ready ends 1.966s after the creation, after the API server received the Ready patch (968ms): the pod was found Ready after its status was sent, or the start is counted from before the creation",
			},
		},
		"ready marked after the status was sent is after the server received it": {
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=12ms status_written=4ms",
			wantProblems: []string{
				"ready ends 976ms after the creation, after the API server received the Ready patch (968ms): the pod was found Ready after its status was sent, or the start is counted from before the creation",
			},
		},
		"a container started before its image was ready is out of order": {
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"container_created/app=61ms container_started/app=70ms image_ready/app=9ms ready=2ms status_written=14ms",
			wantProblems: []string{
				"step container_created/app comes before image_ready/app",
				"step container_started/app comes before image_ready/app",
			},
		},
		"a start ended as its status was sent, before the answer, ends too early": {
			total: "967ms",
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=1ms",
			wantProblems: []string{
				"the breakdown ends 967ms after the creation, before the API server answered the Ready patch (976ms): a step at the end is left out, or the start is counted from after the creation",
			},
		},
		"an answer that took long to reach a busy node is not nodelet's accounting: none": {
			total: "1.02s",
			steps: "seen=412ms admitted=0s volumes_ready=21ms env_ready=3ms sandbox_turn=0s sandbox_created=388ms " +
				"image_ready/app=9ms container_created/app=61ms container_started/app=70ms ready=2ms status_written=54ms",
		},
	} {
		t.Run(name, func(t *testing.T) {
			total, steps, seen := wholeStart()
			if tc.total != "" {
				total = tc.total
			}
			if tc.steps != "" {
				steps = tc.steps
			}
			if tc.seen != nil {
				tc.seen(&seen)
			}
			told, err := Parse(total, steps)
			if err != nil {
				t.Fatalf("Parse(%q, %q): %v", total, steps, err)
			}
			if diff := cmp.Diff(tc.wantProblems, Problems(told, seen, want)); diff != "" {
				t.Errorf("Problems() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		total, steps string
		want         Told
		wantErr      bool
	}{
		"a line's steps in their order": {
			total: "85ms", steps: "seen=60ms image_ready/app=0s status_written=25ms",
			want: Told{Total: 85 * time.Millisecond, Steps: []Step{
				{Name: "seen", Took: 60 * time.Millisecond},
				{Name: "image_ready/app"},
				{Name: "status_written", Took: 25 * time.Millisecond},
			}},
		},
		"a total that is not a duration": {total: "soon", steps: "seen=1ms", wantErr: true},
		"a step that is not a duration":  {total: "1ms", steps: "seen=soon", wantErr: true},
		"a step without its time":        {total: "1ms", steps: "seen", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.total, tc.steps)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q, %q) error = %v, want error %v", tc.total, tc.steps, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse() (-want +got):\n%s", diff)
			}
		})
	}
}
