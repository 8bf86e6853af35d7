package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Caps on what the report prints of one test: enough to say why it failed
// (a violation with the pod states around it runs to a few dozen lines),
// short enough that fifty failures still fit on a screen or two.
const (
	maxLinesPerTest = 40
	maxLineLength   = 400
	maxStrayLines   = 30
)

// summary is what a CI run's end shows of its test runs.
type summary struct {
	// Slowest are the slowest top-level tests, slowest first.
	Slowest []entry
	// Skips are every skipped test, with what it said.
	Skips []entry
	// Flaky failed and then passed when run again.
	Flaky []entry
	// Failed failed, and failed again if they were run again.
	Failed []entry
	// Unfinished started and never ended: their run was stopped.
	Unfinished []entry
	// Broken are runs whose packages failed outside any test (a build
	// failure, TestMain, a panic after the tests) or whose stream ended
	// before they did.
	Broken []entry
}

// counts are how many tests (subtests among them) passed, failed and
// were skipped in a CI run: a flaky test counts as passed, a test that
// never finished as failed, and a package that failed outside its tests
// as one failure.
type counts struct{ Passed, Failed, Skipped int }

func countTests(runs []*run) counts {
	var c counts
	s := summarize(runs, 0)
	flaky := map[[3]string]bool{}
	for _, e := range s.Flaky {
		flaky[[3]string{e.Run, e.Package, e.Test}] = true
	}
	for _, r := range runs {
		if r.Retry != "" {
			continue
		}
		for _, res := range r.Results {
			top := res.Test
			if i := strings.Index(top, "/"); i >= 0 {
				top = top[:i]
			}
			switch {
			case res.Test == "":
			case res.Outcome == "pass":
				c.Passed++
			case res.Outcome == "skip":
				c.Skipped++
			case res.Outcome == "fail" && flaky[[3]string{r.Name, res.Package, top}]:
				c.Passed++
			default:
				c.Failed++
			}
		}
	}
	c.Failed += len(s.Broken)
	return c
}

// entry is one line of the report and what it says under it.
type entry struct {
	Run     string
	Package string
	Test    string
	Elapsed time.Duration
	Lines   []string
}

// summarize reads the runs of a CI run (each phase's, and the retries of
// their failures) into its report. Pure: the runs are all it reads.
func summarize(runs []*run, slowest int) summary {
	var s summary
	retries := map[string]*run{}
	for _, r := range runs {
		if r.Retry != "" {
			retries[r.Retry] = r
		}
	}
	for _, r := range runs {
		if r.Retry != "" {
			continue
		}
		retry := retries[r.Name]
		ended := map[string]bool{}
		for _, res := range r.Results {
			switch {
			case res.Test == "":
				continue
			case res.Outcome == "skip":
				s.Skips = append(s.Skips, entry{Run: r.Name, Package: res.Package, Test: res.Test, Lines: orNone(res.Output)})
			case res.Outcome == "":
				if !hasUnfinishedSubtest(r, res) {
					s.Unfinished = append(s.Unfinished, entry{Run: r.Name, Package: res.Package, Test: res.Test, Lines: unfinishedLines(res.Output)})
				}
			}
			if res.Outcome != "" {
				ended[res.Package] = true
			}
			if !res.topLevel() {
				continue
			}
			if res.Outcome != "" {
				s.Slowest = append(s.Slowest, entry{Run: r.Name, Package: res.Package, Test: res.Test, Elapsed: res.Elapsed})
			}
			if res.Outcome != "fail" {
				continue
			}
			e := entry{Run: r.Name, Package: res.Package, Test: res.Test, Elapsed: res.Elapsed, Lines: failureLines(r, res)}
			if again := retry.find(res.Package, res.Test); again != nil && again.Outcome == "pass" {
				s.Flaky = append(s.Flaky, e)
				continue
			}
			if retry != nil {
				e.Lines = append(e.Lines, "(run again: it failed again)")
			}
			s.Failed = append(s.Failed, e)
		}
		s.Broken = append(s.Broken, brokenPackages(r, ended, retry)...)
	}
	sort.SliceStable(s.Slowest, func(i, j int) bool { return s.Slowest[i].Elapsed > s.Slowest[j].Elapsed })
	if len(s.Slowest) > slowest {
		s.Slowest = s.Slowest[:slowest]
	}
	return s
}

func (r *run) find(pkg, test string) *result {
	if r == nil {
		return nil
	}
	for _, res := range r.Results {
		if res.Package == pkg && res.Test == test {
			return res
		}
	}
	return nil
}

// unfinishedLines is what a test that never ended last said before go
// test's timeout panic, and the panic's own head (which tests were still
// running, for how long), without the goroutine dump after it.
func unfinishedLines(output []string) []string {
	for i, line := range output {
		if !strings.HasPrefix(line, "panic: test timed out") {
			continue
		}
		lines := tail(output[:i], 10)
		for _, after := range output[i:] {
			if strings.HasPrefix(after, "goroutine ") {
				break
			}
			lines = append(lines, after)
		}
		return lines
	}
	return orNone(tail(output, 10))
}

func hasUnfinishedSubtest(r *run, parent *result) bool {
	for _, res := range r.Results {
		if res.Package == parent.Package && strings.HasPrefix(res.Test, parent.Test+"/") && res.Outcome == "" {
			return true
		}
	}
	return false
}

// failureLines is what a failed top-level test and its failed subtests
// said, each subtest's lines under its name.
func failureLines(r *run, top *result) []string {
	lines := append([]string(nil), top.Output...)
	for _, res := range r.Results {
		if res.Package != top.Package || !strings.HasPrefix(res.Test, top.Test+"/") || res.Outcome != "fail" || len(res.Output) == 0 {
			continue
		}
		lines = append(lines, res.Test+":")
		lines = append(lines, res.Output...)
	}
	return orNone(lines)
}

// brokenPackages are the packages of a run that failed, or never ended,
// with no failed or unfinished test to show why: what the package itself
// and go test printed is the reason. A package whose retry passed is not
// broken.
func brokenPackages(r *run, ended map[string]bool, retry *run) []entry {
	var broken []entry
	for _, res := range r.Results {
		if res.Test != "" || (res.Outcome != "fail" && res.Outcome != "") {
			continue
		}
		if again := retry.find(res.Package, ""); again != nil && again.Outcome == "pass" {
			continue
		}
		if res.Outcome == "" && !ended[res.Package] && len(res.Output) == 0 && !anyTestIn(r, res.Package) {
			// Started, said nothing and ran nothing: go test was
			// stopped before this package's binary ran.
			broken = append(broken, entry{Run: r.Name, Package: res.Package, Lines: []string{"(never ran: the run was stopped first)"}})
			continue
		}
		if failedOrUnfinishedTestIn(r, res.Package) {
			continue
		}
		lines := tail(res.Output, maxStrayLines)
		if res.Outcome == "" {
			lines = append(lines, "(did not finish: the run was stopped)")
		}
		broken = append(broken, entry{Run: r.Name, Package: res.Package, Lines: orNone(lines)})
	}
	if len(r.Stray) > 0 && (len(broken) > 0 || len(r.Results) == 0) {
		broken = append(broken, entry{Run: r.Name, Package: "(go test's own output)", Lines: tail(r.Stray, maxStrayLines)})
	}
	return broken
}

func anyTestIn(r *run, pkg string) bool {
	for _, res := range r.Results {
		if res.Package == pkg && res.Test != "" {
			return true
		}
	}
	return false
}

func failedOrUnfinishedTestIn(r *run, pkg string) bool {
	for _, res := range r.Results {
		if res.Package == pkg && res.Test != "" && (res.Outcome == "fail" || res.Outcome == "") {
			return true
		}
	}
	return false
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return append([]string{fmt.Sprintf("(... %d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return lines
}

func orNone(lines []string) []string {
	if len(lines) == 0 {
		return []string{"(it said nothing)"}
	}
	return lines
}

// render writes the report, leaving out the sections with nothing in
// them.
func render(w io.Writer, s summary, module string) {
	short := func(pkg string) string {
		if pkg == module {
			return "."
		}
		return strings.TrimPrefix(pkg, module+"/")
	}
	if len(s.Slowest) > 0 {
		fmt.Fprintf(w, "the %d slowest tests:\n", len(s.Slowest))
	}
	for _, e := range s.Slowest {
		fmt.Fprintf(w, "  %8.1fs  %-14s %s %s\n", e.Elapsed.Seconds(), e.Run, short(e.Package), e.Test)
	}
	section := func(title string, entries []entry, withLines bool) {
		if len(entries) == 0 {
			return
		}
		fmt.Fprintf(w, "%s (%d):\n", title, len(entries))
		for _, e := range entries {
			name := short(e.Package)
			if e.Test != "" {
				name += " " + e.Test
			}
			fmt.Fprintf(w, "  %-14s %s\n", e.Run, name)
			if !withLines {
				continue
			}
			lines := e.Lines
			if len(lines) > maxLinesPerTest {
				lines = append(lines[:maxLinesPerTest:maxLinesPerTest], fmt.Sprintf("(... %d more lines in the run's log)", len(e.Lines)-maxLinesPerTest))
			}
			for _, line := range lines {
				fmt.Fprintf(w, "      %s\n", cut(strings.TrimSpace(line)))
			}
		}
	}
	section("skipped tests, with what they said", s.Skips, true)
	section("FLAKY tests: failed, then passed when run again; their first failure", s.Flaky, true)
	section("FAILED tests, with what they said", s.Failed, true)
	section("tests that never finished (their run was stopped), with their last lines", s.Unfinished, true)
	section("FAILED outside any test", s.Broken, true)
}

func cut(line string) string {
	if len(line) > maxLineLength {
		return line[:maxLineLength] + " [...]"
	}
	return line
}

// retryPattern is the -run pattern of a run's failed top-level tests, per
// package, and how many they are. ok is false when the run failed in a
// way no rerun by name can repeat (a package broken outside its tests, a
// test that never ended).
func retryPattern(r *run) (patterns map[string]string, count int, ok bool) {
	failed := map[string][]string{}
	ended := map[string]bool{}
	for _, res := range r.Results {
		if res.Test != "" && res.Outcome != "" {
			ended[res.Package] = true
		}
		if res.Test != "" && res.Outcome == "" {
			return nil, 0, false
		}
		if res.topLevel() && res.Outcome == "fail" {
			failed[res.Package] = append(failed[res.Package], regexp.QuoteMeta(res.Test))
			count++
		}
	}
	if len(brokenPackages(r, ended, nil)) > 0 {
		return nil, 0, false
	}
	patterns = map[string]string{}
	for pkg, tests := range failed {
		patterns[pkg] = "^(" + strings.Join(tests, "|") + ")$"
	}
	return patterns, count, true
}
