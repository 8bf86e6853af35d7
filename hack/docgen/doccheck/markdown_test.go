package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// repoRoot is the repository's top folder, from this package's.
func repoRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		return "", err
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(string(mod), "module github.com/nodelet/nodelet\n") {
		return "", fmt.Errorf("%s is not nodelet's repository", root)
	}
	return root, nil
}

// proseLines are a Markdown file's lines outside fenced code blocks, with
// their numbers; lines inside a fence are blank, so a `# comment` in a
// shell example is not a heading and a link in code is not checked.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// codeSpan is an inline code span (one or two backticks).
var codeSpan = regexp.MustCompile("``[^`]+``|`[^`]+`")

// heading is an ATX heading: its level's hashes, then its text.
var heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// anchors are the anchors GitHub gives a Markdown file's headings: the
// heading's text in lower case, without punctuation, spaces made hyphens,
// a repeated one numbered (-1, -2, ...).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := slugify(m[2])
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug = fmt.Sprintf("%s-%d", slug, n)
		} else {
			seen[slug] = 1
		}
		out[slug] = true
	}
	return out
}

// slugify is GitHub's anchor of a heading's text.
func slugify(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// link is an inline Markdown link or image: [text](target) or
// [text](target "title").
var link = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// links are a Markdown file's link targets outside code, by line number
// (from 1).
func links(text string) map[int][]string {
	out := map[int][]string{}
	for i, l := range proseLines(text) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range link.FindAllStringSubmatch(l, -1) {
			out[i+1] = append(out[i+1], m[1])
		}
	}
	return out
}
