package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// A volume whose files come from the API (projected, configMap, secret,
// downwardAPI) is published the way the kubelet publishes it, so that a
// container reading it never sees half of an update:
//
//	<dir>/..2026_11_22_04_31_07.123456789/token   the files, written once
//	<dir>/..data -> ..2026_11_22_04_31_07.123456789
//	<dir>/token  -> ..data/token
//
// An update writes a new timestamped folder and swaps ..data to it with one
// rename(2); the user-visible names never change target, so every file of
// the volume switches at the same instant. Applications (and tools that
// watch ..data with inotify) rely on this layout.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"

	maxFileNameLength = 255
	maxPathLength     = 4096
)

// fileProjection is one file of a volume's payload.
type fileProjection struct {
	Data []byte
	// Mode holds the permission bits, as in the API's mode fields.
	Mode int32
	// FsUser owns the file when not nil (service account tokens; see
	// fsUser); else nodelet does.
	FsUser *int64
}

// writeAtomically makes dir hold exactly payload (relative path → file),
// in the layout above. When the files on disk already match, it only
// repairs the user-visible links and changed is false. dir must exist.
// beforeSwap, when not nil, runs once new files are written and before
// they are published (the fsGroup walk, as the kubelet's setPerms): the
// container never sees them with another group.
func writeAtomically(dir string, payload map[string]fileProjection, now time.Time, beforeSwap func() error) (changed bool, err error) {
	clean, err := cleanPayload(payload)
	if err != nil {
		return false, err
	}

	current, err := currentDataDir(dir)
	if err != nil {
		return false, err
	}
	if current == "" || !sameFiles(filepath.Join(dir, current), clean) {
		next, err := writeDataDir(dir, clean, now)
		if err != nil {
			return false, err
		}
		if beforeSwap != nil {
			if err := beforeSwap(); err != nil {
				_ = os.RemoveAll(filepath.Join(dir, next))
				return false, err
			}
		}
		if err := swapDataDir(dir, next); err != nil {
			_ = os.RemoveAll(filepath.Join(dir, next))
			return false, err
		}
		current, changed = next, true
	}

	if err := linkVisibleNames(dir, clean); err != nil {
		return changed, err
	}
	if err := pruneVisibleNames(dir, clean); err != nil {
		return changed, err
	}
	return changed, removeStaleDataDirs(dir, current)
}

// cleanPayload checks every path of the payload and returns it keyed by
// cleaned paths. Paths are relative, free of "..", and may not claim the
// "..*" names the layout reserves at the top of the volume.
func cleanPayload(payload map[string]fileProjection) (map[string]fileProjection, error) {
	clean := make(map[string]fileProjection, len(payload))
	for p, file := range payload {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		clean[path.Clean(p)] = file
	}
	// A file cannot also be a folder of another file ("a" and "a/b").
	for p := range clean {
		for parent := path.Dir(p); parent != "."; parent = path.Dir(parent) {
			if _, ok := clean[parent]; ok {
				return nil, fmt.Errorf("invalid path %q: %q is a file", p, parent)
			}
		}
	}
	return clean, nil
}

func validatePath(p string) error {
	switch {
	case p == "" || path.Clean(p) == ".":
		return fmt.Errorf("invalid path %q: must not be empty", p)
	case path.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path %q: must be at most %d characters", p, maxPathLength)
	}
	elems := strings.Split(p, "/")
	for _, elem := range elems {
		if elem == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(elem) > maxFileNameLength {
			return fmt.Errorf("invalid path %q: file names must be at most %d characters", p, maxFileNameLength)
		}
	}
	if strings.HasPrefix(path.Clean(p), "..") {
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	return nil
}

// currentDataDir is the timestamped folder ..data points to, or "" when
// there is none (first write) or the link is not one this writer made.
func currentDataDir(dir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, dataDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(dir, dataDirName), err)
	}
	if !isDataDirName(target) {
		return "", nil
	}
	return target, nil
}

// isDataDirName tells the timestamped folders apart from the layout's
// fixed names.
func isDataDirName(name string) bool {
	return strings.HasPrefix(name, "..") && name != dataDirName && name != newDataDirName &&
		!strings.Contains(name, "/") && name != ".."
}

// sameFiles reports whether dataDir holds exactly the payload's files, with
// the same contents and modes.
func sameFiles(dataDir string, payload map[string]fileProjection) bool {
	seen := 0
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dataDir, p)
		if err != nil {
			return err
		}
		want, ok := payload[filepath.ToSlash(rel)]
		if !ok || !d.Type().IsRegular() {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != fileMode(want.Mode) {
			return errDiffers
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want.Data) {
			return errDiffers
		}
		seen++
		return nil
	})
	return err == nil && seen == len(payload)
}

var errDiffers = errors.New("files differ")

// writeDataDir writes the payload into a new timestamped folder and
// returns its name.
func writeDataDir(dir string, payload map[string]fileProjection, now time.Time) (string, error) {
	dataDir, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", fmt.Errorf("creating a data folder in %s: %w", dir, err)
	}
	if err := writeFiles(dataDir, payload); err != nil {
		_ = os.RemoveAll(dataDir)
		return "", err
	}
	return filepath.Base(dataDir), nil
}

func writeFiles(dataDir string, payload map[string]fileProjection) error {
	// Folders must be traversable by any user the container runs as,
	// whatever nodelet's umask: modes are set explicitly.
	if err := os.Chmod(dataDir, 0o755); err != nil {
		return err
	}
	for p, file := range payload {
		full := filepath.Join(dataDir, filepath.FromSlash(p))
		if err := mkdirAllMode(dataDir, filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, file.Data, fileMode(file.Mode)); err != nil {
			return fmt.Errorf("writing %s: %w", full, err)
		}
		if err := os.Chmod(full, fileMode(file.Mode)); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", full, err)
		}
		if file.FsUser != nil {
			if err := os.Lchown(full, int(*file.FsUser), -1); err != nil {
				return fmt.Errorf("setting the owner of %s: %w", full, err)
			}
		}
	}
	return nil
}

// mkdirAllMode creates the folders from base (which exists) down to dir,
// each with mode.
func mkdirAllMode(base, dir string, mode fs.FileMode) error {
	if dir == base {
		return nil
	}
	if err := mkdirAllMode(base, filepath.Dir(dir), mode); err != nil {
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return os.Chmod(dir, mode)
}

// swapDataDir points ..data at the folder next in one step.
func swapDataDir(dir, next string) error {
	tmp := filepath.Join(dir, newDataDirName)
	// A link left behind by an interrupted update is of no use.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", tmp, err)
	}
	if err := os.Symlink(next, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDirName)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("swapping %s: %w", filepath.Join(dir, dataDirName), err)
	}
	return nil
}

// linkVisibleNames makes each top-level name of the payload a link into
// ..data. The links are made after the swap, so none ever dangles.
func linkVisibleNames(dir string, payload map[string]fileProjection) error {
	for name := range topLevelNames(payload) {
		link := filepath.Join(dir, name)
		target := dataDirName + "/" + name
		got, err := os.Readlink(link)
		switch {
		case err == nil && got == target:
			continue
		case errors.Is(err, fs.ErrNotExist):
		default:
			// Something else holds the name (a stray link or file): the
			// payload's file wins.
			if err := os.Remove(link); err != nil {
				return fmt.Errorf("replacing %s: %w", link, err)
			}
		}
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("linking %s: %w", link, err)
		}
	}
	return nil
}

// pruneVisibleNames removes the links of names the payload no longer has.
func pruneVisibleNames(dir string, payload map[string]fileProjection) error {
	keep := topLevelNames(payload)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	var errs []error
	for _, entry := range entries {
		name := entry.Name()
		if strings.HasPrefix(name, "..") || keep[name] || entry.Type()&fs.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err != nil || !strings.HasPrefix(target, dataDirName+"/") {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", link, err))
		}
	}
	return errors.Join(errs...)
}

// removeStaleDataDirs removes every timestamped folder but current: the
// previous version, and any left by an interrupted update, with its
// temporary link.
func removeStaleDataDirs(dir, current string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	var errs []error
	if err := os.Remove(filepath.Join(dir, newDataDirName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("removing %s: %w", filepath.Join(dir, newDataDirName), err))
	}
	for _, entry := range entries {
		name := entry.Name()
		if !entry.IsDir() || !isDataDirName(name) || name == current {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", filepath.Join(dir, name), err))
		}
	}
	return errors.Join(errs...)
}

func topLevelNames(payload map[string]fileProjection) map[string]bool {
	names := make(map[string]bool, len(payload))
	for p := range payload {
		name, _, _ := strings.Cut(p, "/")
		names[name] = true
	}
	return names
}

func fileMode(mode int32) fs.FileMode {
	return fs.FileMode(mode) & fs.ModePerm
}
