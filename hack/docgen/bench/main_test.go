package main

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRenderCommittedResults renders the repository's own results: every
// file reads, every section is there, and the page is the same twice.
func TestRenderCommittedResults(t *testing.T) {
	results := os.DirFS("../../../bench/results")
	first, err := render(results, "bench/results")
	if err != nil {
		t.Fatal(err)
	}
	second, err := render(results, "bench/results")
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Error("two renderings of the same results differ")
	}
	for _, want := range []string{
		"## nodelet beside the kubelet: `make bench`",
		"## Sandbox creation in each network mode: `make bench-network`",
		"## What each node costs the control plane: `make bench-scale`",
		"| workload | figure | unit | nodelet | kubelet |",
		"| figure | unit | nodelet | kubelet | ratio |",
		"- machine: ",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestRenderWithoutResultsFails(t *testing.T) {
	if _, err := render(fstest.MapFS{}, "bench/results"); err == nil {
		t.Error("a folder without results rendered a page")
	}
}

func TestTextTableReadsEmptyCells(t *testing.T) {
	got, err := textTable([]string{
		"figure                   unit   nodelet  kubelet",
		"nodes started → Ready    s      4.04     31.2",
		"watch csidrivers         /pod            0.013",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := table{
		header: []string{"figure", "unit", "nodelet", "kubelet"},
		rows: [][]string{
			{"nodes started → Ready", "s", "4.04", "31.2"},
			{"watch csidrivers", "/pod", "", "0.013"},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(table{})); diff != "" {
		t.Errorf("textTable (-want +got):\n%s", diff)
	}
}

func TestTextTableRefusesMisalignedRows(t *testing.T) {
	_, err := textTable([]string{
		"figure  unit  nodelet",
		"a figure too long  s  1",
	})
	if err == nil {
		t.Error("a row whose cell runs into the next column was read")
	}
}

func TestTextTablesTakeCaptions(t *testing.T) {
	got, err := textTables(blocks("caption: by request\nrequest  unit\nget pods  /pod\n\nfigure  unit\nidle    /min\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].caption != "caption: by request" || got[1].caption != "" {
		t.Errorf("captions %+v", got)
	}
}

func TestSandboxFiguresTakeEachModesLargestRun(t *testing.T) {
	got, err := sandboxFigures(`header
    x_test.go:58: runtime network mode: 1 sandboxes, median 254ms, p99 254ms
    x_test.go:58: runtime network mode: 50 sandboxes, median 138.4ms, p99 173.7ms
    x_test.go:58: agent network mode: 1 sandboxes, median 366ms, p99 366ms
    x_test.go:58: agent network mode: 50 sandboxes, median 203.3ms, p99 401.5ms
`)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	want := []sandboxFigure{
		{mode: "runtime", sandboxes: 50, median: ms(138.4), p99: ms(173.7)},
		{mode: "agent", sandboxes: 50, median: ms(203.3), p99: ms(401.5)},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(sandboxFigure{})); diff != "" {
		t.Errorf("sandboxFigures (-want +got):\n%s", diff)
	}
	if got := milliseconds(ms(173.7)); got != "174 ms" {
		t.Errorf("milliseconds = %q, want 174 ms", got)
	}
}

func TestMarkdownTableRefusesRaggedRows(t *testing.T) {
	if _, err := markdownTable(block{"| a | b |", "| --- | --- |", "| 1 |"}); err == nil {
		t.Error("a row of one cell under two columns was read")
	}
}
