package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// report is the part of golangci-lint's JSON output the test reads.
type report struct {
	Issues []struct {
		FromLinter string
		Text       string
		Pos        struct {
			Filename string
			Line     int
		}
	}
}

// TestPureCodeRules runs the repository's golangci-lint, with the
// repository's configuration, on testdata: podstatus/violation.go (a pure
// path) imports a client and os and reads the clock, and every one of those
// is reported; its test file and notpure/edge.go (an edge) do the same and
// nothing of theirs is. golangci-lint is the one `make lint` builds; when it
// is missing the test fails, since the rules would then go unchecked.
func TestPureCodeRules(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".cache", "bin", "golangci-lint")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("golangci-lint is missing (%v): build it with hack/build-tools.sh golangci-lint", err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "run",
		"--config", filepath.Join(root, ".golangci.yml"),
		"--output.json.path", "stdout",
		"--show-stats=false",
		"./hack/lint/testdata/podstatus", "./hack/lint/testdata/notpure")
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	// 1 is golangci-lint's exit code for "issues found"; any other
	// failure means it did not lint.
	if exitErr := (*exec.ExitError)(nil); err != nil && (!errors.As(err, &exitErr) || exitErr.ExitCode() != 1) {
		t.Fatalf("golangci-lint: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var got report
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("reading golangci-lint's report: %v\n%s%s", err, stdout.String(), stderr.String())
	}

	// Each finding as "linter file: source line", so a rule reported on
	// the wrong file or line reads as such.
	var findings []string
	for _, issue := range got.Issues {
		if issue.FromLinter != "depguard" && issue.FromLinter != "forbidigo" {
			continue
		}
		findings = append(findings, fmt.Sprintf("%s %s: %s", issue.FromLinter, issue.Pos.Filename, sourceLine(t, root, issue.Pos.Filename, issue.Pos.Line)))
	}
	sort.Strings(findings)
	const violation = "hack/lint/testdata/podstatus/violation.go"
	want := []string{
		"depguard " + violation + `: "os"`,
		"depguard " + violation + `: "sigs.k8s.io/controller-runtime/pkg/client"`,
		"forbidigo " + violation + ": return time.Now()",
		"forbidigo " + violation + ": return time.Now().Add(time.Hour)",
		"forbidigo " + violation + ": time.Sleep(time.Millisecond)",
		"forbidigo " + violation + ": var Waited = time.Since",
	}
	if diff := cmp.Diff(want, findings); diff != "" {
		t.Errorf("pure-code findings (-want +got):\n%s\nthe whole report:\n%s", diff, stdout.String())
	}
}

// sourceLine is line n of file (relative to root), trimmed.
func sourceLine(t *testing.T, root, file string, n int) string {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(content), "\n")
	if n < 1 || n > len(lines) {
		return fmt.Sprintf("line %d of %d", n, len(lines))
	}
	return strings.TrimSpace(lines[n-1])
}
