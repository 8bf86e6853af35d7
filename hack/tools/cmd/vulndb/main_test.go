package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// report is an OSV report as golang.org/x/vulndb's data/osv holds them
// (no modification time), naming its modules in one entry per package.
func report(id string, modules ...string) string {
	var affected []string
	for _, m := range modules {
		affected = append(affected, `{"package":{"name":"`+m+`","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.2.3"}]}]}`)
	}
	return `{"schema_version":"1.3.1","id":"` + id + `","modified":"0001-01-01T00:00:00Z","affected":[` + strings.Join(affected, ",") + `]}`
}

func TestWrite(t *testing.T) {
	from, to := t.TempDir(), filepath.Join(t.TempDir(), "db")
	reports := map[string]string{
		"GO-2026-0002": report("GO-2026-0002", "example.com/b", "example.com/a", "example.com/a"),
		"GO-2026-0001": report("GO-2026-0001", "example.com/a"),
	}
	for id, data := range reports {
		if err := os.WriteFile(filepath.Join(from, id+".json"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(from, to, "v0.0.0-20261105234957-e22db6528018"); err != nil {
		t.Fatal(err)
	}

	var db struct{ Modified time.Time }
	mustDecode(t, filepath.Join(to, "index", "db.json"), &db)
	if want := time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC); !db.Modified.Equal(want) {
		t.Errorf("index/db.json modified %v, want the pseudo-version's %v", db.Modified, want)
	}
	var modules []moduleMeta
	mustDecode(t, filepath.Join(to, "index", "modules.json"), &modules)
	got := map[string][]string{}
	for _, m := range modules {
		for _, v := range m.Vulns {
			got[m.Path] = append(got[m.Path], v.ID)
		}
	}
	want := map[string][]string{"example.com/a": {"GO-2026-0001", "GO-2026-0002"}, "example.com/b": {"GO-2026-0002"}}
	if len(modules) != 2 || modules[0].Path != "example.com/a" || !maps.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("index/modules.json lists %v (in order %v), want %v", got, modules, want)
	}
	for id, data := range reports {
		if b, err := os.ReadFile(filepath.Join(to, "ID", id+".json")); err != nil || string(b) != data {
			t.Errorf("ID/%s.json: %q, %v; want the report as it is", id, b, err)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	from := t.TempDir()
	if err := os.WriteFile(filepath.Join(from, "GO-2026-0009.json"), []byte(report("GO-2026-0001", "example.com/a")), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ from, version, want string }{
		"a report under another ID's name":       {from, "v0.0.0-20261105234957-e22db6528018", "holds report GO-2026-0001"},
		"a version that is not a pseudo-version": {from, "v1.2.3", "not a pseudo-version"},
		"no report at all":                       {t.TempDir(), "v0.0.0-20261105234957-e22db6528018", "no OSV report"},
	} {
		t.Run(name, func(t *testing.T) {
			err := write(tc.from, filepath.Join(t.TempDir(), "db"), tc.version)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("write: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func mustDecode(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
