// vulndb writes an offline Go vulnerability database, in the v1 layout
// govulncheck reads with -db file:///DIR, from the OSV reports of the
// golang.org/x/vulndb module (its data/osv folder), for machines that do
// not reach vuln.go.dev:
//
//	vulndb -from DIR/data/osv -to OUT -version v0.0.0-YYYYMMDDhhmmss-COMMIT
//
// OUT gets ID/<id>.json (each report as it is), index/modules.json (each
// module with the reports that name it) and index/db.json (the time of
// the module's commit, from its pseudo-version: the reports in the module
// carry no modification time of their own, which the server sets when it
// publishes them).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// entry is what the index needs of an OSV report.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Affected []struct {
		Module struct {
			Path string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

type moduleMeta struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

// moduleVuln leaves out "fixed", which is optional: govulncheck then
// reads every report of the module and decides from its ranges, as it
// does anyway for the reports it keeps.
type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
}

func main() {
	from := flag.String("from", "", "the folder of OSV reports (golang.org/x/vulndb's data/osv)")
	to := flag.String("to", "", "the folder to write; must not exist")
	version := flag.String("version", "", "golang.org/x/vulndb's version (a pseudo-version), whose time is the database's")
	flag.Parse()
	if *from == "" || *to == "" || *version == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := write(*from, *to, *version); err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

// pseudoVersionTime is the commit time of a pseudo-version
// (vX.Y.Z-[pre.]YYYYMMDDhhmmss-commit).
func pseudoVersionTime(version string) (time.Time, error) {
	parts := strings.Split(version, "-")
	if len(parts) < 3 {
		return time.Time{}, fmt.Errorf("%s is not a pseudo-version", version)
	}
	stamp := parts[len(parts)-2]
	stamp = stamp[strings.LastIndex(stamp, ".")+1:]
	t, err := time.Parse("20060102150405", stamp)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s is not a pseudo-version: %w", version, err)
	}
	return t.UTC(), nil
}

func write(from, to, version string) error {
	modified, err := pseudoVersionTime(version)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(from, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no OSV report in %s", from)
	}
	if err := os.MkdirAll(filepath.Join(to, "ID"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(to, "index"), 0o755); err != nil {
		return err
	}
	modules := map[string]*moduleMeta{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var e entry
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		// govulncheck looks reports up by their ID.
		if filepath.Base(file) != e.ID+".json" {
			return fmt.Errorf("%s holds report %s", file, e.ID)
		}
		if err := os.WriteFile(filepath.Join(to, "ID", e.ID+".json"), data, 0o644); err != nil {
			return err
		}
		for _, affected := range e.Affected {
			path := affected.Module.Path
			if modules[path] == nil {
				modules[path] = &moduleMeta{Path: path, Vulns: []moduleVuln{}}
			}
			// A report may name a module in several entries (one per
			// package): listed once.
			if vulns := modules[path].Vulns; len(vulns) > 0 && vulns[len(vulns)-1].ID == e.ID {
				continue
			}
			modules[path].Vulns = append(modules[path].Vulns, moduleVuln{ID: e.ID, Modified: e.Modified})
		}
	}
	index := make([]*moduleMeta, 0, len(modules))
	for _, m := range modules {
		slices.SortFunc(m.Vulns, func(a, b moduleVuln) int { return strings.Compare(a.ID, b.ID) })
		index = append(index, m)
	}
	slices.SortFunc(index, func(a, b *moduleMeta) int { return strings.Compare(a.Path, b.Path) })
	if err := writeJSON(filepath.Join(to, "index", "modules.json"), index); err != nil {
		return err
	}
	return writeJSON(filepath.Join(to, "index", "db.json"), struct {
		Modified time.Time `json:"modified"`
	}{modified})
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
