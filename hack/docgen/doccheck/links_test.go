package doccheck

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// scheme starts a link that leaves the repository (https:, mailto:).
var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// TestRelativeLinksResolve checks every relative link of README.md and of
// the pages in docs/: the file or folder it names exists, and a
// #fragment into a Markdown file names one of its headings.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	anchorsOf := map[string]map[string]bool{}
	anchorsIn := func(file string) (map[string]bool, error) {
		if a, ok := anchorsOf[file]; ok {
			return a, nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		anchorsOf[file] = anchors(string(data))
		return anchorsOf[file], nil
	}
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		byLine := links(string(data))
		lines := make([]int, 0, len(byLine))
		for n := range byLine {
			lines = append(lines, n)
		}
		sort.Ints(lines)
		for _, n := range lines {
			for _, target := range byLine[n] {
				if scheme.MatchString(target) {
					continue
				}
				checked++
				file, fragment, _ := strings.Cut(target, "#")
				if unescaped, err := url.PathUnescape(file); err == nil {
					file = unescaped
				}
				resolved := page
				if file != "" {
					resolved = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				}
				if !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
					t.Errorf("%s:%d: %s leads out of the repository", rel, n, target)
					continue
				}
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s:%d: %s: no such file", rel, n, target)
					continue
				}
				if fragment == "" || !strings.HasSuffix(resolved, ".md") {
					continue
				}
				a, err := anchorsIn(resolved)
				if err != nil {
					t.Fatal(err)
				}
				if !a[fragment] {
					t.Errorf("%s:%d: %s: no heading of %s has the anchor #%s", rel, n, target, filepath.Base(resolved), fragment)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found: the check reads nothing")
	}
}

func TestSlugify(t *testing.T) {
	for text, want := range map[string]string{
		"Quick start":                         "quick-start",
		"Names: DNS, hostname and /etc/hosts": "names-dns-hostname-and-etchosts",
		"`make bench-scale`: at scale":        "make-bench-scale-at-scale",
		"What's not done yet":                 "whats-not-done-yet",
		"CSI volumes (v1.x)":                  "csi-volumes-v1x",
	} {
		if got := slugify(text); got != want {
			t.Errorf("slugify(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestAnchorsNumberRepeatsAndSkipCode(t *testing.T) {
	got := anchors("# Top\n## Usage\n```sh\n# not a heading\n```\n## Usage\n")
	for _, want := range []string{"top", "usage", "usage-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a shell comment in a code block was taken for a heading")
	}
}

func TestLinksSkipCode(t *testing.T) {
	got := links("see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d](d.md#x \"title\")\n")
	want := map[int][]string{1: {"a.md"}, 5: {"d.md#x"}}
	if len(got) != len(want) || got[1][0] != "a.md" || got[5][0] != "d.md#x" {
		t.Errorf("links = %v, want %v", got, want)
	}
}
