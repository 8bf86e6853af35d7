// Tests of the atomic writer, against real files in t.TempDir(): payload
// in, files out. No root needed.
package volume

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var writeTime = time.Date(2026, 11, 22, 4, 31, 7, 0, time.UTC)

// visibleFiles reads the volume as a container sees it: every regular file
// reachable from the user-visible names, by relative path, as
// "content mode".
func visibleFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, entry := range entries {
		if strings.HasPrefix(entry.Name(), "..") {
			continue
		}
		root := filepath.Join(dir, entry.Name())
		walkRoot := root
		if target, err := filepath.EvalSymlinks(root); err == nil {
			walkRoot = target
		}
		err := filepath.Walk(walkRoot, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(walkRoot, p)
			name := filepath.Join(entry.Name(), rel)
			files[filepath.Clean(name)] = string(data) + " " + info.Mode().Perm().String()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// layout lists the names at the top of the volume, links shown with
// their targets, timestamped folders as "..<ts>".
func layout(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, entry := range entries {
		name := entry.Name()
		switch {
		case entry.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(filepath.Join(dir, name))
			if isDataDirName(target) {
				target = "..<ts>"
			}
			names = append(names, name+" -> "+target)
		case isDataDirName(name):
			names = append(names, "..<ts>/")
		default:
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func mustWrite(t *testing.T, dir string, payload map[string]fileProjection) bool {
	t.Helper()
	changed, err := writeAtomically(dir, payload, writeTime, nil)
	if err != nil {
		t.Fatalf("writeAtomically: %v", err)
	}
	return changed
}

func dataTarget(t *testing.T, dir string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestWriteAtomicallyPublishesThePayload(t *testing.T) {
	dir := t.TempDir()
	changed := mustWrite(t, dir, map[string]fileProjection{
		"token":          {Data: []byte("secret"), Mode: 0o600},
		"ca.crt":         {Data: []byte("CA"), Mode: 0o644},
		"app/config.yml": {Data: []byte("a: 1"), Mode: 0o444},
		"app/deep/x":     {Data: []byte("x"), Mode: 0o640},
	})
	if !changed {
		t.Error("first write reported no change")
	}

	wantFiles := map[string]string{
		"token":          "secret -rw-------",
		"ca.crt":         "CA -rw-r--r--",
		"app/config.yml": "a: 1 -r--r--r--",
		"app/deep/x":     "x -rw-r-----",
	}
	if diff := cmp.Diff(wantFiles, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	wantLayout := []string{"..<ts>/", "..data -> ..<ts>", "app -> ..data/app", "ca.crt -> ..data/ca.crt", "token -> ..data/token"}
	if diff := cmp.Diff(wantLayout, layout(t, dir)); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
	if got := dataTarget(t, dir); !strings.HasPrefix(got, "..2026_11_22_04_31_07.") {
		t.Errorf("..data points to %q, want a folder named for the write time", got)
	}
	info, err := os.Stat(filepath.Join(dir, dataDirName, "app", "deep"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o755 {
		t.Errorf("nested folder mode = %v, want 0755", got)
	}
}

func TestWriteAtomicallySwapsUpdatesInOneStep(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, map[string]fileProjection{
		"a":   {Data: []byte("1"), Mode: 0o644},
		"b":   {Data: []byte("1"), Mode: 0o644},
		"n/x": {Data: []byte("1"), Mode: 0o644},
	})
	before := dataTarget(t, dir)
	linksBefore := layout(t, dir)

	changed := mustWrite(t, dir, map[string]fileProjection{
		"a":   {Data: []byte("2"), Mode: 0o644},
		"b":   {Data: []byte("2"), Mode: 0o644},
		"n/x": {Data: []byte("2"), Mode: 0o644},
	})
	if !changed {
		t.Error("update reported no change")
	}
	after := dataTarget(t, dir)
	if after == before {
		t.Fatal("..data still points to the old folder")
	}
	// The visible names did not move: only ..data did, so every file
	// switched at the same instant.
	if diff := cmp.Diff(linksBefore, layout(t, dir)); diff != "" {
		t.Errorf("layout changed beyond ..data (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, before)); !os.IsNotExist(err) {
		t.Errorf("old data folder %s still there (err %v)", before, err)
	}
	want := map[string]string{"a": "2 -rw-r--r--", "b": "2 -rw-r--r--", "n/x": "2 -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestWriteAtomicallyLeavesUnchangedPayloadAlone(t *testing.T) {
	dir := t.TempDir()
	payload := map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}}
	mustWrite(t, dir, payload)
	before := dataTarget(t, dir)

	if mustWrite(t, dir, payload) {
		t.Error("same payload reported a change")
	}
	if got := dataTarget(t, dir); got != before {
		t.Errorf("..data moved from %s to %s for the same payload", before, got)
	}
}

func TestWriteAtomicallyRemovesKeysNoLongerInThePayload(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, map[string]fileProjection{
		"a":   {Data: []byte("1"), Mode: 0o644},
		"b":   {Data: []byte("1"), Mode: 0o644},
		"n/x": {Data: []byte("1"), Mode: 0o644},
		"n/y": {Data: []byte("1"), Mode: 0o644},
		"m/z": {Data: []byte("1"), Mode: 0o644},
	})
	mustWrite(t, dir, map[string]fileProjection{
		"a":   {Data: []byte("1"), Mode: 0o644},
		"n/x": {Data: []byte("1"), Mode: 0o644},
	})

	want := map[string]string{"a": "1 -rw-r--r--", "n/x": "1 -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	wantLayout := []string{"..<ts>/", "..data -> ..<ts>", "a -> ..data/a", "n -> ..data/n"}
	if diff := cmp.Diff(wantLayout, layout(t, dir)); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
}

func TestWriteAtomicallyEmptyPayloadEmptiesTheVolume(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}})
	mustWrite(t, dir, map[string]fileProjection{})

	if got := visibleFiles(t, dir); len(got) != 0 {
		t.Errorf("files left: %v", got)
	}
	if diff := cmp.Diff([]string{"..<ts>/", "..data -> ..<ts>"}, layout(t, dir)); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
}

func TestWriteAtomicallyAppliesModesWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	dir := t.TempDir()
	mustWrite(t, dir, map[string]fileProjection{
		"public":     {Data: []byte("p"), Mode: 0o644},
		"exec":       {Data: []byte("e"), Mode: 0o755},
		"sub/public": {Data: []byte("s"), Mode: 0o444},
		"all":        {Data: []byte("x"), Mode: 0o777},
	})
	want := map[string]string{
		"public":     "p -rw-r--r--",
		"exec":       "e -rwxr-xr-x",
		"sub/public": "s -r--r--r--",
		"all":        "x -rwxrwxrwx",
	}
	if diff := cmp.Diff(want, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	info, err := os.Stat(filepath.Join(dir, dataDirName))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o755 {
		t.Errorf("data folder mode = %v, want 0755", got)
	}
}

func TestWriteAtomicallyRewritesWhenOnlyTheModeChanged(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}})
	if !mustWrite(t, dir, map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o600}}) {
		t.Error("mode change reported no change")
	}
	if diff := cmp.Diff(map[string]string{"a": "1 -rw-------"}, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestWriteAtomicallyRepairsWhatAnInterruptedRunLeft(t *testing.T) {
	dir := t.TempDir()
	payload := map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("1"), Mode: 0o644}}
	mustWrite(t, dir, payload)
	// A crash between steps: a half-written folder, the temporary link,
	// a missing visible link, a link for a key since removed.
	if err := os.Mkdir(filepath.Join(dir, "..2020_01_01_00_00_00.123"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2020_01_01_00_00_00.123", filepath.Join(dir, newDataDirName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dataDirName+"/gone", filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}

	if mustWrite(t, dir, payload) {
		t.Error("same payload reported a change")
	}
	wantLayout := []string{"..<ts>/", "..data -> ..<ts>", "a -> ..data/a", "b -> ..data/b"}
	if diff := cmp.Diff(wantLayout, layout(t, dir)); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
}

func TestWriteAtomicallyRejectsBadPaths(t *testing.T) {
	tests := map[string]map[string]fileProjection{
		"an empty path":                        {"": {}},
		"an absolute path":                     {"/etc/passwd": {}},
		"a path climbing out":                  {"../x": {}},
		"a path climbing out from inside":      {"a/../../x": {}},
		"a path taking the reserved ..data":    {"..data": {}},
		"a path under a reserved name":         {"..2026/x": {}},
		"a file name longer than 255":          {strings.Repeat("x", 256): {}},
		"a path longer than 4096":              {strings.Repeat("x/", 2049): {}},
		"a file that is a folder of another":   {"a": {}, "a/b": {}},
		"a deep file under another file":       {"a": {}, "a/b/c": {}},
		"a path that cleans to the volume dir": {"./": {}},
	}
	for name, payload := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := writeAtomically(dir, payload, writeTime, nil); err == nil {
				t.Fatal("no error")
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 0 {
				t.Errorf("wrote something for a bad payload: %v", entries)
			}
		})
	}
}

func TestWriteAtomicallyAcceptsPathsThatCleanUp(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, map[string]fileProjection{
		"./a":    {Data: []byte("1"), Mode: 0o644},
		"b//c":   {Data: []byte("2"), Mode: 0o644},
		"a-b/c":  {Data: []byte("3"), Mode: 0o644},
		"d/./e/": {Data: []byte("4"), Mode: 0o644},
	})
	want := map[string]string{"a": "1 -rw-r--r--", "b/c": "2 -rw-r--r--", "a-b/c": "3 -rw-r--r--", "d/e": "4 -rw-r--r--"}
	if diff := cmp.Diff(want, visibleFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
