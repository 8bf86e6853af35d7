//go:build linux

package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// changeOwnership applies o to everything under dir, dir itself last, so
// that a root that has the group and modes means a walk that finished
// (see volumeOwnership). With o.onRootMismatch it does nothing when the
// root already matches. It reports whether it walked.
//
// As under the kubelet, a file whose group or mode cannot be changed (a
// file system that refuses it) does not stop the walk: those failures
// come back joined after the walk, for the caller to log; failing to read
// a folder stops it.
func changeOwnership(dir string, o ownership) (walked bool, fileErrs, err error) {
	if o.onRootMismatch {
		if info, err := os.Stat(dir); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok && rootMatches(int64(st.Gid), info.Mode(), o) {
				return false, nil, nil
			}
		}
	}
	var failures []error
	err = walkDeep(dir, func(path string, info fs.FileInfo) {
		if err := os.Lchown(path, -1, int(o.fsGroup)); err != nil {
			failures = append(failures, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return
		}
		if mode := ownedMode(info.Mode(), o.readOnly); mode != info.Mode() {
			if err := os.Chmod(path, mode); err != nil {
				failures = append(failures, err)
			}
		}
	})
	if err != nil {
		return true, nil, fmt.Errorf("changing the ownership of %s: %w", dir, err)
	}
	const keep = 5 // enough to see why; a big volume could fail on every file
	if len(failures) > keep {
		failures = append(failures[:keep], fmt.Errorf("and %d more", len(failures)-keep))
	}
	return true, errors.Join(failures...), nil
}

// walkDeep calls visit on every file and folder under root, each folder
// after what it holds, without following links.
func walkDeep(root string, visit func(path string, info fs.FileInfo)) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	return walkDeepFrom(root, info, visit)
}

func walkDeepFrom(path string, info fs.FileInfo, visit func(string, fs.FileInfo)) error {
	if info.IsDir() {
		// Not through a link: a pod's process may have swapped the folder
		// for one since it was looked at, to send the walk out of the
		// volume.
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		// Unsorted: the order does not matter and a big folder costs less.
		names, err := f.Readdirnames(-1)
		_ = f.Close()
		if err != nil {
			return err
		}
		for _, name := range names {
			child := filepath.Join(path, name)
			childInfo, err := os.Lstat(child)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile: the pod's processes run
			}
			if err != nil {
				return err
			}
			if err := walkDeepFrom(child, childInfo, visit); err != nil {
				return err
			}
		}
	}
	visit(path, info)
	return nil
}
