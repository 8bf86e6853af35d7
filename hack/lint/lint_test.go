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

// issues is the part of golangci-lint's JSON output the tests read.
type issues struct {
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
// nothing of theirs is.
func TestPureCodeRules(t *testing.T) {
	findings, report := lint(t, "./hack/lint/testdata/podstatus", "./hack/lint/testdata/notpure")
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
		t.Errorf("pure-code findings (-want +got):\n%s\nthe whole report:\n%s", diff, report)
	}
}

// TestLayerRules runs golangci-lint as TestPureCodeRules does on the
// layers' testdata: runtime/ imports the volume manager, and its test the
// node package, above it; internal/pod/podstatus imports the runtime
// manager and internal/pleg a CRI client; internal/container imports a
// package that is not a leaf helper. Each of those is reported, and
// nothing else: not their permitted imports (the types package from
// runtime/, a leaf helper from internal/container), nor
// controllers/edge.go, which drives the runtime and may import all of it.
func TestLayerRules(t *testing.T) {
	findings, report := lint(t, "./hack/lint/testdata/runtime", "./hack/lint/testdata/internal/...", "./hack/lint/testdata/controllers")
	const dir = "hack/lint/testdata/"
	want := []string{
		"depguard " + dir + `internal/container/violation.go: "github.com/nodelet/nodelet/internal/pod/action"`,
		"depguard " + dir + `internal/pleg/violation.go: import remote "k8s.io/cri-client/pkg"`,
		"depguard " + dir + `internal/pod/podstatus/violation.go: import noderuntime "github.com/nodelet/nodelet/runtime"`,
		"depguard " + dir + `runtime/violation.go: "github.com/nodelet/nodelet/internal/volume"`,
		"depguard " + dir + `runtime/violation_test.go: "github.com/nodelet/nodelet/internal/node"`,
	}
	if diff := cmp.Diff(want, findings); diff != "" {
		t.Errorf("layer findings (-want +got):\n%s\nthe whole report:\n%s", diff, report)
	}
}

// lint runs the repository's golangci-lint, with the repository's
// configuration, on the packages given (relative to the repository) and
// returns its depguard and forbidigo findings, each as "linter file:
// source line" so that a rule reported on the wrong file or line reads as
// such, sorted, with the whole report. golangci-lint is the one `make
// lint` builds; when it is missing the test fails, since the rules would
// then go unchecked.
func lint(t *testing.T, packages ...string) (findings []string, report string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".cache", "bin", "golangci-lint")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("golangci-lint is missing (%v): build it with hack/build-tools.sh golangci-lint", err)
	}
	args := append([]string{"run",
		"--config", filepath.Join(root, ".golangci.yml"),
		"--output.json.path", "stdout",
		"--show-stats=false",
	}, packages...)
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	// 1 is golangci-lint's exit code for "issues found"; any other
	// failure means it did not lint.
	if exitErr := (*exec.ExitError)(nil); err != nil && (!errors.As(err, &exitErr) || exitErr.ExitCode() != 1) {
		t.Fatalf("golangci-lint: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var got issues
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("reading golangci-lint's report: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, issue := range got.Issues {
		if issue.FromLinter != "depguard" && issue.FromLinter != "forbidigo" {
			continue
		}
		findings = append(findings, fmt.Sprintf("%s %s: %s", issue.FromLinter, issue.Pos.Filename, sourceLine(t, root, issue.Pos.Filename, issue.Pos.Line)))
	}
	sort.Strings(findings)
	return findings, stdout.String()
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
