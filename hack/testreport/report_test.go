package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stream builds a test2json stream from events written as
// "ACTION PACKAGE TEST [ELAPSED|OUTPUT]" (TEST "-" for the package).
func stream(t *testing.T, lines ...string) string {
	t.Helper()
	var b bytes.Buffer
	for _, line := range lines {
		fields := strings.SplitN(line, " ", 4)
		ev := map[string]any{"Action": fields[0], "Package": fields[1]}
		if fields[2] != "-" {
			ev["Test"] = fields[2]
		}
		if len(fields) == 4 {
			if fields[0] == "output" {
				ev["Output"] = fields[3] + "\n"
			} else {
				d, err := time.ParseDuration(fields[3])
				if err != nil {
					t.Fatal(err)
				}
				ev["Elapsed"] = d.Seconds()
			}
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()
}

func mustRun(t *testing.T, name, text string) *run {
	t.Helper()
	r, err := parseRun(name, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if base, ok := strings.CutSuffix(name, ".retry"); ok {
		r.Retry = base
	}
	return r
}

const pkg = module + "/volume"

func TestSummarize(t *testing.T) {
	phase := func(t *testing.T) *run {
		return mustRun(t, "unit", stream(t,
			"start "+pkg+" -",
			"run "+pkg+" TestFast",
			"output "+pkg+" TestFast === RUN   TestFast",
			"pass "+pkg+" TestFast 1s",
			"run "+pkg+" TestSlow",
			"pass "+pkg+" TestSlow 9s",
			"run "+pkg+" TestNeedsRoot",
			"output "+pkg+" TestNeedsRoot     mount_test.go:12: needs root",
			"output "+pkg+" TestNeedsRoot --- SKIP: TestNeedsRoot (0.00s)",
			"skip "+pkg+" TestNeedsRoot 0s",
			"run "+pkg+" TestTable",
			"run "+pkg+" TestTable/a_case",
			"output "+pkg+" TestTable/a_case     table_test.go:30: got 1, want 2",
			"output "+pkg+" TestTable/a_case         and a second line of the same message",
			"fail "+pkg+" TestTable/a_case 0s",
			"run "+pkg+" TestTable/another",
			"pass "+pkg+" TestTable/another 0s",
			"fail "+pkg+" TestTable 3s",
			"output "+pkg+" - FAIL",
			"fail "+pkg+" - 13s",
		))
	}
	failure := entry{Run: "unit", Package: pkg, Test: "TestTable", Elapsed: 3 * time.Second, Lines: []string{
		"TestTable/a_case:",
		"    table_test.go:30: got 1, want 2",
		"        and a second line of the same message",
	}}
	slowest := []entry{
		{Run: "unit", Package: pkg, Test: "TestSlow", Elapsed: 9 * time.Second},
		{Run: "unit", Package: pkg, Test: "TestTable", Elapsed: 3 * time.Second},
	}
	skips := []entry{{Run: "unit", Package: pkg, Test: "TestNeedsRoot", Lines: []string{"    mount_test.go:12: needs root"}}}

	tests := map[string]struct {
		runs func(t *testing.T) []*run
		want summary
	}{
		"a failure with its subtest's whole message, a skip with its reason, the slowest first": {
			runs: func(t *testing.T) []*run { return []*run{phase(t)} },
			want: summary{Slowest: slowest, Skips: skips, Failed: []entry{failure}},
		},
		"a failure that passed when run again is flaky, not failed": {
			runs: func(t *testing.T) []*run {
				return []*run{phase(t), mustRun(t, "unit.retry", stream(t,
					"run "+pkg+" TestTable", "run "+pkg+" TestTable/a_case", "pass "+pkg+" TestTable/a_case 0s",
					"pass "+pkg+" TestTable 1s", "pass "+pkg+" - 1s"))}
			},
			want: summary{Slowest: slowest, Skips: skips, Flaky: []entry{failure}},
		},
		"a failure that failed again says so": {
			runs: func(t *testing.T) []*run {
				return []*run{phase(t), mustRun(t, "unit.retry", stream(t,
					"run "+pkg+" TestTable", "fail "+pkg+" TestTable 1s", "fail "+pkg+" - 1s"))}
			},
			want: summary{Slowest: slowest, Skips: skips, Failed: []entry{{
				Run: failure.Run, Package: pkg, Test: "TestTable", Elapsed: 3 * time.Second,
				Lines: append(append([]string(nil), failure.Lines...), "(run again: it failed again)"),
			}}},
		},
		"a run stopped mid-test leaves it unfinished, with its last lines": {
			runs: func(t *testing.T) []*run {
				return []*run{mustRun(t, "e2e-runtime", stream(t,
					"start "+pkg+" -",
					"run "+pkg+" TestDone", "pass "+pkg+" TestDone 2s",
					"run "+pkg+" TestHangs", "output "+pkg+" TestHangs     hang_test.go:5: waiting for the pod",
				)+`{"Action":"output","Pack`)}
			},
			want: summary{
				Slowest:    []entry{{Run: "e2e-runtime", Package: pkg, Test: "TestDone", Elapsed: 2 * time.Second}},
				Unfinished: []entry{{Run: "e2e-runtime", Package: pkg, Test: "TestHangs", Lines: []string{"    hang_test.go:5: waiting for the pod"}}},
			},
		},
		"a test that hung until go test's timeout shows its last words and the panic's head, not the goroutines": {
			runs: func(t *testing.T) []*run {
				return []*run{mustRun(t, "e2e-agent", stream(t,
					"start "+pkg+" -",
					"run "+pkg+" TestHangs", "output "+pkg+" TestHangs     hang_test.go:5: waiting for the pod",
					"output "+pkg+" TestHangs panic: test timed out after 2m30s",
					"output "+pkg+" TestHangs \trunning tests:",
					"output "+pkg+" TestHangs \t\tTestHangs (2m29s)",
					"output "+pkg+" TestHangs goroutine 7 [select]:",
					"output "+pkg+" TestHangs main.main()",
					"fail "+pkg+" - 150s",
				))}
			},
			want: summary{Unfinished: []entry{{Run: "e2e-agent", Package: pkg, Test: "TestHangs", Lines: []string{
				"    hang_test.go:5: waiting for the pod",
				"panic: test timed out after 2m30s",
				"\trunning tests:",
				"\t\tTestHangs (2m29s)",
			}}}},
		},
		"a package that failed outside its tests shows what it printed": {
			runs: func(t *testing.T) []*run {
				return []*run{mustRun(t, "e2e-runtime", stream(t,
					"start "+pkg+" -",
					"output "+pkg+" - e2e: NODELET_E2E_ENV is not set",
					"output "+pkg+" - FAIL\t"+pkg+"\t0.01s",
					"fail "+pkg+" - 0s",
				))}
			},
			want: summary{Broken: []entry{{Run: "e2e-runtime", Package: pkg, Lines: []string{"e2e: NODELET_E2E_ENV is not set"}}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := summarize(tc.runs(t), 2)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCountTests(t *testing.T) {
	runs := []*run{
		mustRun(t, "unit", stream(t,
			"run "+pkg+" TestA", "pass "+pkg+" TestA 0s",
			"run "+pkg+" TestB", "output "+pkg+" TestB     b_test.go:1: needs root", "skip "+pkg+" TestB 0s",
			"run "+pkg+" TestFlaky", "run "+pkg+" TestFlaky/x", "fail "+pkg+" TestFlaky/x 0s", "fail "+pkg+" TestFlaky 0s",
			"run "+pkg+" TestBroken", "fail "+pkg+" TestBroken 0s",
			"fail "+pkg+" - 0s")),
		mustRun(t, "unit.retry", stream(t,
			"run "+pkg+" TestFlaky", "run "+pkg+" TestFlaky/x", "pass "+pkg+" TestFlaky/x 0s", "pass "+pkg+" TestFlaky 0s",
			"run "+pkg+" TestBroken", "fail "+pkg+" TestBroken 0s", "fail "+pkg+" - 0s")),
		mustRun(t, "e2e-agent", stream(t, "run "+pkg+" TestHang")),
	}
	want := counts{Passed: 3, Failed: 2, Skipped: 1}
	if diff := cmp.Diff(want, countTests(runs)); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestRetryPattern(t *testing.T) {
	tests := map[string]struct {
		stream string
		want   map[string]string
		wantOK bool
	}{
		"the failed top-level tests, not their subtests": {
			stream: stream(t,
				"run "+pkg+" TestA", "run "+pkg+" TestA/x", "fail "+pkg+" TestA/x 0s", "fail "+pkg+" TestA 0s",
				"run "+pkg+" TestB", "pass "+pkg+" TestB 0s",
				"run "+pkg+" TestC.Odd", "fail "+pkg+" TestC.Odd 0s",
				"fail "+pkg+" - 0s"),
			want:   map[string]string{pkg: `^(TestA|TestC\.Odd)$`},
			wantOK: true,
		},
		"a test that never ended cannot be run again by name": {
			stream: stream(t, "run "+pkg+" TestA", "fail "+pkg+" TestA 0s", "run "+pkg+" TestHang"),
		},
		"a package that failed outside its tests cannot either": {
			stream: stream(t, "output "+pkg+" - panic: boom", "fail "+pkg+" - 0s"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, _, ok := retryPattern(mustRun(t, "e2e", tc.stream))
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("patterns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFollowPrintsWhatTheTestsPrinted(t *testing.T) {
	in := stream(t, "run "+pkg+" TestA", "output "+pkg+" TestA === RUN   TestA", "output "+pkg+" TestA     a_test.go:1: hello", "pass "+pkg+" TestA 0s") +
		"# a line go test printed itself\n"
	var out bytes.Buffer
	if err := follow(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := "=== RUN   TestA\n    a_test.go:1: hello\n# a line go test printed itself\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("followed (-want +got):\n%s", diff)
	}
}
