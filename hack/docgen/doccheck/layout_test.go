package doccheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layoutHeading is the heading of docs/architecture.md under which the
// layout table is the first table.
const layoutHeading = "Layout"

// undocumentedRoots are the top folders whose Go packages the layout table
// leaves out: the build, test and benchmark tooling (hack/) and the end to
// end, chaos, CSI and release tests (test/), which docs/development.md
// describes. docs/architecture.md states the same rule.
var undocumentedRoots = []string{"hack", "test"}

// TestLayoutTableListsEveryPackageFolder compares the layout table of
// docs/architecture.md with the tree: one row for each folder of the main
// module that holds a non-test .go file, outside hack/ and test/, and no
// other row.
func TestLayoutTableListsEveryPackageFolder(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := layoutRows(string(data))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	folders, err := packageFolders(root)
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra, repeated []string
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			repeated = append(repeated, r)
		}
		seen[r] = true
		if !slices.Contains(folders, r) {
			extra = append(extra, r)
		}
	}
	for _, f := range folders {
		if !seen[f] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/architecture.md's layout table has no row for these Go package folders (add one each: | `path/` | what it owns | the kubelet's counterpart |):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("docs/architecture.md's layout table has rows for folders that hold no Go package (remove them, or fix the path):\n  %s", strings.Join(extra, "\n  "))
	}
	if len(repeated) > 0 {
		t.Errorf("docs/architecture.md's layout table lists these folders more than once:\n  %s", strings.Join(repeated, "\n  "))
	}
}

// layoutRows reads the paths of the layout table: the first table after
// the heading "Layout", whose first column is "path" and whose first
// cells start with the folder as a code span, `internal/volume/`, the
// repository's top folder written `./`. The paths come back without
// their last slash, the top folder as ".".
func layoutRows(text string) ([]string, error) {
	lines := proseLines(text)
	start := slices.IndexFunc(lines, func(l string) bool {
		m := heading.FindStringSubmatch(l)
		return len(m) == 3 && m[2] == layoutHeading
	})
	if start < 0 {
		return nil, fmt.Errorf("no heading %q", layoutHeading)
	}
	var table []string
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "#") && heading.MatchString(l) {
			break
		}
		if strings.HasPrefix(strings.TrimSpace(l), "|") {
			table = append(table, strings.TrimSpace(l))
		} else if len(table) > 0 {
			break
		}
	}
	if len(table) < 3 {
		return nil, fmt.Errorf("no table with rows under the heading %q", layoutHeading)
	}
	if first := firstCell(table[0]); first != "path" {
		return nil, fmt.Errorf("the layout table's first column is %q, want path", first)
	}
	var paths []string
	for _, row := range table[2:] {
		cell := firstCell(row)
		span := codeSpan.FindString(cell)
		if span == "" {
			return nil, fmt.Errorf("a row whose first cell names no folder in code: %q", row)
		}
		p := strings.Trim(span, "`")
		if !strings.HasSuffix(p, "/") {
			return nil, fmt.Errorf("the folder %q: write it with its last slash, %s/", p, p)
		}
		p = strings.TrimSuffix(p, "/")
		if p == "." {
			paths = append(paths, ".")
			continue
		}
		if p == "" || filepath.Clean(p) != p || strings.HasPrefix(p, "./") {
			return nil, fmt.Errorf("the folder %q: write it from the top, internal/volume/ (the top itself ./)", span)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// firstCell is a table row's first cell.
func firstCell(row string) string {
	cell, _, _ := strings.Cut(strings.TrimPrefix(row, "|"), "|")
	return strings.TrimSpace(cell)
}

// packageFolders lists, sorted, the folders of the main module under root
// that hold a non-test .go file, outside the undocumented roots; as the go
// tool does, it skips testdata folders, folders whose name starts with .
// or _, and the folders of other modules (a go.mod of their own).
func packageFolders(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != "." {
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				slices.Contains(undocumentedRoots, rel) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				out = append(out, rel)
				break
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func TestLayoutRowsReadsPaths(t *testing.T) {
	got, err := layoutRows("# A\n## Layout\n\nText.\n\n| path | owns |\n| --- | --- |\n| `./` (`main.go`) | wiring |\n| `internal/volume/` | volumes |\n\n## Next\n| path | x |\n| --- | --- |\n| `other/` | x |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "internal/volume"}; !slices.Equal(got, want) {
		t.Errorf("layoutRows = %v, want %v", got, want)
	}
	for _, bad := range []string{
		"## Layout\n| path | owns |\n| --- | --- |\n| volume | x |\n",
		"## Layout\n| path | owns |\n| --- | --- |\n| `internal/volume` | x |\n",
		"## Layout\n| folder | owns |\n| --- | --- |\n| `x/` | x |\n",
		"## Other\n| path | owns |\n| --- | --- |\n| `x/` | x |\n",
	} {
		if _, err := layoutRows(bad); err == nil {
			t.Errorf("layoutRows(%q) read it", bad)
		}
	}
}
