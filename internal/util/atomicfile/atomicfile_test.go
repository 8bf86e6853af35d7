package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesTheFileWholeWithItsModeAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new content"), 0o600); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "new content" {
		t.Errorf("content = %q, want %q", data, "new content")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", info.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file", len(entries))
	}
}

func TestWriteIntoAMissingFolderFailsAndNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "state")
	err := Write(path, []byte("x"), 0o600)
	if err == nil {
		t.Fatal("Write() into a missing folder succeeded")
	}
	if got := err.Error(); len(got) < len(path) || got[:len("writing "+path)] != "writing "+path {
		t.Errorf("error %q, want it to name %s", got, path)
	}
}
