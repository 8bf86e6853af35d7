package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// reloadResyncPeriod is how often watched files are read again whatever
// inotify said: a safety net for changes it does not report (a file
// system without inotify, a watch lost), as the kubelet's dynamic
// certificate files are checked every minute.
const reloadResyncPeriod = time.Minute

// fileReloader reads a set of files again when they change, as the
// kubelet's ReloadKubeletServerCertificateFile and ReloadKubeletClientCAFile
// do: the serving certificate and key given as files, and the client CA
// file, are picked up without a restart. It watches the files' folders,
// not the files: a Secret volume or a certificate tool replaces a file by
// renaming another over it (or swapping a symlink), which a watch on the
// old file never reports.
type fileReloader struct {
	// what names the files in logs: "serving certificate", "client CA".
	what  string
	paths []string
	// load takes the files' contents, in paths' order, and makes them
	// current; an error keeps what was loaded before (a certificate
	// written before its key, a file half written), and the next change
	// or resync tries again.
	load func(contents [][]byte) error
	log  logr.Logger

	mu sync.Mutex
	// loaded is what load last took without error.
	loaded [][]byte
}

func newFileReloader(what string, paths []string, load func([][]byte) error, log logr.Logger) *fileReloader {
	return &fileReloader{what: what, paths: paths, load: load, log: log.WithValues("files", paths)}
}

// check reads the files and loads them when they differ from what was
// loaded last; it tells whether it loaded them.
func (f *fileReloader) check() (bool, error) {
	contents := make([][]byte, len(f.paths))
	for i, path := range f.paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return false, fmt.Errorf("reading the %s file %s: %w", f.what, path, err)
		}
		contents[i] = data
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if sameContents(f.loaded, contents) {
		return false, nil
	}
	if err := f.load(contents); err != nil {
		return false, fmt.Errorf("loading the %s from %v: %w", f.what, f.paths, err)
	}
	f.loaded = contents
	return true, nil
}

func sameContents(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// run checks the files on every change inotify reports in their folders
// and every resync period, until ctx ends.
func (f *fileReloader) run(ctx context.Context, clk clock.WithTicker, resync time.Duration) {
	var events <-chan fsnotify.Event
	var watchErrors <-chan error
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		f.log.Error(err, "Could not watch the files; reading them every period only", "what", f.what, "period", resync)
	} else {
		defer watcher.Close()
		dirs := map[string]bool{}
		for _, path := range f.paths {
			dirs[filepath.Dir(path)] = true
		}
		for dir := range dirs {
			if err := watcher.Add(dir); err != nil {
				f.log.Error(err, "Could not watch a folder; reading its files every period only", "what", f.what, "folder", dir, "period", resync)
			}
		}
		events, watchErrors = watcher.Events, watcher.Errors
	}
	ticker := clk.NewTicker(resync)
	defer ticker.Stop()
	// A check first: a change made after the files were first loaded and
	// before the watch began is not reported.
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
			case _, ok := <-events:
				if !ok {
					events = nil
					continue
				}
			case err, ok := <-watchErrors:
				if !ok {
					watchErrors = nil
				} else {
					f.log.Error(err, "Watching the files failed", "what", f.what)
				}
				continue
			}
		}
		changed, err := f.check()
		switch {
		case err != nil:
			f.log.Error(err, "Could not reload the files; keeping the ones loaded before", "what", f.what)
		case changed:
			f.log.Info("Reloaded the files", "what", f.what)
		}
	}
}
