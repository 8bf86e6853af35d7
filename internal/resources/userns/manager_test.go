package userns

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// The manager against real files in a temporary folder.

func newTestManager(t *testing.T, root string) *Manager {
	t.Helper()
	podDir := func(uid types.UID) string { return filepath.Join(root, "pods", string(uid)) }
	m, err := NewManager(Options{
		SubUIDFile: filepath.Join(root, "subuid"), SubGIDFile: filepath.Join(root, "subgid"),
		MaxPods: 2, PodDir: podDir, Log: logr.Discard(),
		Pods: func() ([]types.UID, error) {
			entries, err := os.ReadDir(filepath.Join(root, "pods"))
			var uids []types.UID
			for _, e := range entries {
				uids = append(uids, types.UID(e.Name()))
			}
			if os.IsNotExist(err) {
				err = nil
			}
			return uids, err
		},
	})
	if err != nil {
		t.Fatalf("NewManager() error = %v", err)
	}
	return m
}

func TestManagerKeepsEachPodsRangeAcrossRestartsAndReleasesIt(t *testing.T) {
	root := t.TempDir()
	ranges := "kubelet:131072:196608\n"
	for _, f := range []string{"subuid", "subgid"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(ranges), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newTestManager(t, root)
	a, err := m.PodRange("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.PodRange("b")
	if err != nil {
		t.Fatal(err)
	}
	if a != (Range{First: 131072, Length: 65536}) || b != (Range{First: 196608, Length: 65536}) {
		t.Fatalf("PodRange(a), PodRange(b) = %+v, %+v, want the node range's first two slots", a, b)
	}

	// A restart: a new manager reads the files back.
	m = newTestManager(t, root)
	if got, err := m.PodRange("b"); err != nil || got != b {
		t.Errorf("PodRange(b) after a restart = %+v, %v, want %+v", got, err, b)
	}
	if got, err := m.PodRange("c"); err != nil || got != (Range{First: 262144, Length: 65536}) {
		t.Errorf("PodRange(c) after a restart = %+v, %v, want the slot neither a nor b holds", got, err)
	}

	m.Release("a")
	if _, err := os.Stat(filepath.Join(root, "pods", "a", mappingsFile)); !os.IsNotExist(err) {
		t.Errorf("a's file after its release: stat error = %v, want it gone", err)
	}
	if got, err := m.PodRange("d"); err != nil || got != a {
		t.Errorf("PodRange(d) after a's release = %+v, %v, want a's old range %+v", got, err, a)
	}
}

func TestManagerRefusesToStartOnAPodFileItCannotRead(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pods", "a")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, mappingsFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewManager(Options{
		SubUIDFile: filepath.Join(root, "subuid"), SubGIDFile: filepath.Join(root, "subgid"), MaxPods: 110,
		PodDir: func(uid types.UID) string { return filepath.Join(root, "pods", string(uid)) },
		Pods:   func() ([]types.UID, error) { return []types.UID{"a"}, nil },
		Log:    logr.Discard(),
	})
	if err == nil {
		t.Fatal("NewManager() with an unreadable pod file: no error")
	}
}
