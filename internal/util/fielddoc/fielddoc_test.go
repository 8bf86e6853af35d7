package fielddoc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const source = `package p

type Config struct {
	Meta ` + "`json:\",inline\"`" + `

	// Before is in no section.
	Before string

	// The first section.

	// A is the first
	// field, on two lines.
	//
	// Its second paragraph.
	A int
	// Auth nests a struct.
	Auth Auth
	Undocumented bool

	// The second section.

	// B is the last.
	B *Auth // B's line comment is no heading.
}

// Auth is nested.
type Auth struct {
	// Inner is Auth's.
	Inner string
}
`

func TestParse(t *testing.T) {
	got, err := Parse([]byte(source), "Config")
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Path: "Before", Doc: "Before is in no section."},
		{Path: "A", Doc: "A is the first field, on two lines. Its second paragraph.", Section: "The first section"},
		{Path: "Auth", Doc: "Auth nests a struct.", Section: "The first section"},
		{Path: "Auth.Inner", Doc: "Inner is Auth's.", Section: "The first section"},
		{Path: "Undocumented", Section: "The first section"},
		{Path: "B", Doc: "B is the last.", Section: "The second section"},
		{Path: "B.Inner", Doc: "Inner is Auth's.", Section: "The second section"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ src, root string }{
		"not Go":           {"package p\ntype {", "Config"},
		"no such struct":   {source, "Other"},
		"a struct in turn": {"package p\ntype C struct {\n\tSelf *C\n}\n", "C"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.src), tc.root); err == nil {
				t.Errorf("Parse(%q) succeeded, want an error", tc.root)
			}
		})
	}
}
