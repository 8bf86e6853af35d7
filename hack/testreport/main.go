// Command testreport reads the `go test -json` streams of a CI run and
// prints what the run's end must show: the slowest tests, every skip with
// its reason, every failure with what it said (its subtests' messages
// and multi-line messages whole, up to a cap), the tests that failed and
// then passed when run again, and the tests a stopped run left
// unfinished.
//
//	go test -json ... | tee -a DIR/PHASE.json | testreport follow
//	testreport summary [-slowest 20] DIR
//	testreport failed [-max N] DIR/PHASE.json
//	testreport counts DIR
//
// follow prints a stream as `go test -v` would while it runs. summary reads
// every DIR/*.json; a file PHASE.retry.json holds the run of PHASE's
// failures again. failed prints, one line per package, the package and
// the -run pattern of a run's failed top-level tests, for running them
// again; it exits 3 when the run failed in a way a rerun by name cannot
// repeat (a package that failed outside its tests, a test that never
// ended) or in more than -max tests, so the failure stands. counts prints the run's closing line,
// "tests: N passed, N failed, N skipped".
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const module = "github.com/nodelet/nodelet"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "follow":
		err = follow(os.Stdin, os.Stdout)
	case "summary":
		fs := flag.NewFlagSet("summary", flag.ExitOnError)
		slowest := fs.Int("slowest", 20, "how many of the slowest tests to list")
		_ = fs.Parse(os.Args[2:])
		if fs.NArg() != 1 {
			usage()
		}
		err = summaryOf(fs.Arg(0), *slowest, os.Stdout)
	case "counts":
		if len(os.Args) != 3 {
			usage()
		}
		err = countsOf(os.Args[2], os.Stdout)
	case "failed":
		fs := flag.NewFlagSet("failed", flag.ExitOnError)
		most := fs.Int("max", 3, "how many failed tests may be run again at most")
		_ = fs.Parse(os.Args[2:])
		if fs.NArg() != 1 {
			usage()
		}
		err = failed(fs.Arg(0), *most, os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		if errors.Is(err, errNotRetryable) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testreport follow | summary [-slowest N] DIR | failed [-max N] FILE | counts DIR")
	os.Exit(2)
}

// follow copies what the tests printed from a test2json stream, and any
// line that is not an event as it is.
func follow(in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Bytes()
		var ev event
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &ev) == nil && ev.Action != "" {
			if ev.Action == "output" || ev.Action == "build-output" {
				_, _ = w.WriteString(ev.Output)
			}
		} else {
			_, _ = w.Write(line)
			_ = w.WriteByte('\n')
		}
		// Line by line: a run that hangs must show how far it got.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func readRun(path string) (*run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	r, err := parseRun(name, f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if base, ok := strings.CutSuffix(name, ".retry"); ok {
		r.Retry = base
	}
	return r, nil
}

func readRuns(dir string) ([]*run, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var runs []*run
	for _, path := range paths {
		r, err := readRun(path)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func summaryOf(dir string, slowest int, out io.Writer) error {
	runs, err := readRuns(dir)
	if err != nil {
		return err
	}
	render(out, summarize(runs, slowest), module)
	return nil
}

func countsOf(dir string, out io.Writer) error {
	runs, err := readRuns(dir)
	if err != nil {
		return err
	}
	c := countTests(runs)
	_, err = fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", c.Passed, c.Failed, c.Skipped)
	return err
}

var errNotRetryable = errors.New("the run failed outside its tests, was stopped, or failed in more tests than may be run again")

func failed(path string, most int, out io.Writer) error {
	r, err := readRun(path)
	if err != nil {
		return err
	}
	patterns, count, ok := retryPattern(r)
	if !ok || count > most {
		return errNotRetryable
	}
	pkgs := make([]string, 0, len(patterns))
	for pkg := range patterns {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		fmt.Fprintf(out, "%s %s\n", pkg, patterns[pkg])
	}
	return nil
}
