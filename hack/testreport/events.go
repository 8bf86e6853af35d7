package main

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is what one test (or, with an empty Test, one package) did in one
// run.
type result struct {
	Package string
	Test    string
	// Outcome is pass, fail or skip; empty when the stream ended before
	// the test did (the run was killed or ran out of time).
	Outcome string
	Elapsed time.Duration
	// Output is what the test said, without go test's own framing
	// (=== RUN, --- PASS and the like).
	Output []string
}

// topLevel tells a test from its subtests.
func (r *result) topLevel() bool { return r.Test != "" && !strings.Contains(r.Test, "/") }

// run is one go test invocation's stream: a phase's, or its retry's.
type run struct {
	Name string
	// Retry names the run this one ran again the failures of.
	Retry string
	// Results in the order the tests started; packages' own results
	// (Test == "") among them.
	Results []*result
	// Stray holds the lines that were not test2json events: what go
	// test printed of its own (a build failure before Go 1.24, a
	// signal).
	Stray []string
}

// parseRun reads one stream. A line that is not an event is kept as
// stray output, never an error: a killed run ends mid-line.
func parseRun(name string, r io.Reader) (*run, error) {
	out := &run{Name: name}
	byKey := map[[2]string]*result{}
	get := func(pkg, test string) *result {
		key := [2]string{pkg, test}
		if res, ok := byKey[key]; ok {
			return res
		}
		res := &result{Package: pkg, Test: test}
		byKey[key] = res
		out.Results = append(out.Results, res)
		return res
	}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		var ev event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
			if strings.TrimSpace(line) != "" {
				out.Stray = append(out.Stray, line)
			}
			continue
		}
		switch ev.Action {
		case "start", "run":
			get(ev.Package, ev.Test)
		case "output", "build-output":
			res := get(ev.Package, ev.Test)
			if text := strings.TrimRight(ev.Output, "\n"); !isFraming(text) {
				res.Output = append(res.Output, text)
			}
		case "pass", "fail", "skip":
			res := get(ev.Package, ev.Test)
			res.Outcome = ev.Action
			res.Elapsed = time.Duration(ev.Elapsed * float64(time.Second))
		}
	}
	return out, scanner.Err()
}

// isFraming tells go test -v's own lines, which say nothing the events do
// not, from what a test printed.
func isFraming(line string) bool {
	trimmed := strings.TrimSpace(line)
	switch trimmed {
	case "", "PASS", "FAIL":
		return true
	}
	for _, prefix := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME ", "--- PASS: ", "--- FAIL: ", "--- SKIP: "} {
		if strings.HasPrefix(trimmed, prefix) {
			return true
		}
	}
	for _, prefix := range []string{"FAIL\t", "ok  \t", "?   \t"} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
