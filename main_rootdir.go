package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	"github.com/nodelet/nodelet/internal/util/topdir"
)

// The node's state under the root dir: its lock, and what is kept in the
// pods' folders beside their volumes.

// lockRootDir takes an exclusive lock on the root dir's lock file, so two
// nodelets never share one node's state.
func lockRootDir(rootDir string) (func(), error) {
	if err := os.MkdirAll(rootDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating root dir: %w", err)
	}
	path := filepath.Join(rootDir, "nodelet.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another nodelet holds %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// spreadPodFolders makes dir, a folder that holds one folder per pod (the
// pods' own, their logs'), with mode, and has the file system spread
// those over its disk (package topdir), so that a burst of pods does not
// allocate every inode beside the last burst's freed ones. A folder that
// cannot be made is left to the code that writes in it, which then fails
// with the pod.
func spreadPodFolders(log logr.Logger, dir string, mode os.FileMode) {
	if err := os.MkdirAll(dir, mode); err != nil {
		log.Error(err, "Could not make the pods' folder", "dir", dir)
		return
	}
	marked, err := topdir.Mark(dir)
	if err != nil {
		log.Error(err, "Could not mark the pods' folder as the top of unrelated folders; its file system keeps them close", "dir", dir)
		return
	}
	log.V(1).Info("Marked the pods' folder for spreading", "dir", dir, "marked", marked)
}
