//go:build linux

// MakeRShared against the real mount table, as root (skipped otherwise):
// a folder in t.TempDir() becomes a shared bind mount of itself, which the
// test unmounts.
package volume

import (
	"path/filepath"
	"testing"
)

func TestMakeRSharedMakesASharedMountOnce(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "root")
	if err := ensureDir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountEverythingUnder(resolved) })

	mountsAt := func() []mountInfo {
		t.Helper()
		mounts, err := readMountInfo()
		if err != nil {
			t.Fatal(err)
		}
		var at []mountInfo
		for _, m := range mounts {
			if m.MountPoint == resolved {
				at = append(at, m)
			}
		}
		return at
	}
	for round := 1; round <= 2; round++ {
		if err := MakeRShared(dir); err != nil {
			t.Fatalf("round %d: MakeRShared() error = %v", round, err)
		}
		at := mountsAt()
		// The second round finds the mount shared and stacks no other.
		if len(at) != 1 || !at[0].Shared {
			t.Fatalf("round %d: mounts at %s = %+v, want one shared mount", round, resolved, at)
		}
	}
}
