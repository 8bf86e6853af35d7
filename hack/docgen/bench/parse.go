package main

import (
	"bufio"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// table is a table of figures, rendered as Markdown.
type table struct {
	header []string
	rows   [][]string
}

func (t table) markdown(b *strings.Builder) {
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(t.header)
	rule := make([]string, len(t.header))
	for i := range rule {
		rule[i] = "---"
	}
	line(rule)
	for _, r := range t.rows {
		line(r)
	}
}

// block is a run of non-blank lines of a results file.
type block []string

// blocks splits text into its runs of non-blank lines, each line without
// its trailing spaces (a Markdown line break in the bench's files).
func blocks(text string) []block {
	var out []block
	var cur block
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// isMarkdownTable reports whether every line of b is a Markdown table row.
func (b block) isMarkdownTable() bool {
	for _, l := range b {
		if !strings.HasPrefix(l, "|") {
			return false
		}
	}
	return len(b) >= 2
}

// markdownTable reads a Markdown table: its header, its rule, its rows.
func markdownTable(b block) (table, error) {
	cells := func(line string) []string {
		line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
		parts := strings.Split(line, " | ")
		for i, p := range parts {
			parts[i] = strings.TrimSpace(p)
		}
		return parts
	}
	t := table{header: cells(b[0])}
	for _, c := range cells(b[1]) {
		if strings.Trim(c, "-: ") != "" {
			return table{}, fmt.Errorf("the line after a table's header is not its rule: %q", b[1])
		}
	}
	for _, l := range b[2:] {
		row := cells(l)
		if len(row) != len(t.header) {
			return table{}, fmt.Errorf("a row of %d cells under a header of %d: %q", len(row), len(t.header), l)
		}
		t.rows = append(t.rows, row)
	}
	return t, nil
}

// columnGap separates the columns of a text table, as the bench's
// tabwriter pads them (two spaces at least).
var columnGap = regexp.MustCompile(`\S {2,}`)

// isTextTableLine reports whether a line of a text table: cells apart by
// two spaces or more. A caption has none.
func isTextTableLine(line string) bool { return columnGap.MatchString(strings.TrimSpace(line)) }

// textTable reads a table the bench aligned with text/tabwriter: the
// header names the columns, and each column starts where its name does
// (counted in runes, as tabwriter counts), so an empty cell reads empty.
func textTable(lines []string) (table, error) {
	if len(lines) < 2 {
		return table{}, errors.New("a text table needs a header and a row")
	}
	header := []rune(lines[0])
	var starts []int
	for i, r := range header {
		if r != ' ' && (i == 0 || header[i-1] == ' ' && i >= 2 && header[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	cut := func(line string) ([]string, error) {
		runes := []rune(line)
		cells := make([]string, len(starts))
		for i, s := range starts {
			end := len(runes)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(runes))
			}
			if s > len(runes) {
				continue
			}
			if s > 0 && runes[s-1] != ' ' {
				return nil, fmt.Errorf("a cell runs into column %q: %q", strings.TrimSpace(string(header[s:])), line)
			}
			cells[i] = strings.TrimSpace(string(runes[s:end]))
		}
		return cells, nil
	}
	t := table{}
	var err error
	if t.header, err = cut(lines[0]); err != nil {
		return table{}, err
	}
	for _, l := range lines[1:] {
		row, err := cut(l)
		if err != nil {
			return table{}, err
		}
		t.rows = append(t.rows, row)
	}
	return t, nil
}

// captioned is a table with the line that says what it holds, if any.
type captioned struct {
	caption string
	table   table
}

// textTables reads the blocks of a text report after its first (its
// facts): each a table, with a caption line before it or none.
func textTables(bs []block) ([]captioned, error) {
	var out []captioned
	for _, b := range bs {
		var c captioned
		lines := []string(b)
		if !isTextTableLine(lines[0]) {
			c.caption, lines = lines[0], lines[1:]
		}
		t, err := textTable(lines)
		if err != nil {
			return nil, err
		}
		c.table = t
		out = append(out, c)
	}
	return out, nil
}

// sandboxFigure is one network mode's figures of BenchmarkSandboxCreation.
type sandboxFigure struct {
	mode        string
	sandboxes   int
	median, p99 time.Duration
}

// sandboxLine is the benchmark's log line of one run: Go's benchmark runs
// it with 1 sandbox first, then with the count asked for.
var sandboxLine = regexp.MustCompile(`(\S+) network mode: (\d+) sandboxes, median (\S+), p99 (\S+)`)

// sandboxFigures reads network.txt's figures: for each network mode, in
// the order the file has them, the run with the most sandboxes.
func sandboxFigures(text string) ([]sandboxFigure, error) {
	var out []sandboxFigure
	for _, m := range sandboxLine.FindAllStringSubmatch(text, -1) {
		f := sandboxFigure{mode: m[1]}
		if _, err := fmt.Sscan(m[2], &f.sandboxes); err != nil {
			return nil, fmt.Errorf("sandboxes %q: %w", m[2], err)
		}
		var err error
		if f.median, err = time.ParseDuration(m[3]); err != nil {
			return nil, err
		}
		if f.p99, err = time.ParseDuration(m[4]); err != nil {
			return nil, err
		}
		i := slices.IndexFunc(out, func(o sandboxFigure) bool { return o.mode == f.mode })
		switch {
		case i < 0:
			out = append(out, f)
		case f.sandboxes > out[i].sandboxes:
			out[i] = f
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no line of the form \"MODE network mode: N sandboxes, median D, p99 D\"")
	}
	return out, nil
}

// milliseconds prints a duration in whole milliseconds.
func milliseconds(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}
