package oomwatch

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/go-logr/logr"
)

// KernelLog is the kernel's log device, one record per read.
const KernelLog = "/dev/kmsg"

// remembered is how many OOM-killed containers a Watcher keeps: far more
// than the exits that wait on it at any one time, and a bounded memory
// however many kills a node sees.
const remembered = 1024

// Watcher reads the kernel's log and remembers the containers it says the
// OOM killer killed. It reads from the oldest record the kernel still
// holds, so kills from before a nodelet restart are known too. The zero
// value is not ready: use New.
type Watcher struct {
	path string
	log  logr.Logger

	mu     sync.RWMutex
	killed map[string]struct{}
	// order holds the remembered IDs oldest first, to forget the oldest.
	order []string
}

// New returns a Watcher of the log at path (KernelLog on a node).
func New(path string, log logr.Logger) *Watcher {
	return &Watcher{path: path, log: log, killed: map[string]struct{}{}}
}

// Killed tells whether the kernel logged an OOM kill of a process of the
// container with this ID.
func (w *Watcher) Killed(containerID string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	_, ok := w.killed[containerID]
	return ok
}

func (w *Watcher) remember(containerID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.killed[containerID]; ok {
		return
	}
	if len(w.order) == remembered {
		delete(w.killed, w.order[0])
		w.order = w.order[1:]
	}
	w.killed[containerID] = struct{}{}
	w.order = append(w.order, containerID)
}

// Start reads the log until ctx ends (a controller-runtime Runnable). A log
// nodelet may not read (an unprivileged container) leaves the runtime's
// report alone to say which exits were OOM kills; that is no reason to
// stop the node.
func (w *Watcher) Start(ctx context.Context) error {
	f, err := os.Open(w.path)
	if err != nil {
		w.log.Info("Not reading the kernel's log; OOM kills are known only from the runtime", "path", w.path, "err", err)
		return nil
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	buf := make([]byte, 16<<10)
	for {
		n, err := f.Read(buf)
		switch {
		case errors.Is(err, syscall.EPIPE):
			// Records were overwritten before they were read; the
			// next read goes on from the oldest one left.
			continue
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			w.log.Info("Stopped reading the kernel's log; OOM kills are known only from the runtime", "path", w.path, "err", err)
			return nil
		}
		w.read(string(buf[:n]))
	}
}

// read takes in one read's worth of records. /dev/kmsg gives one record
// per read, its dictionary on lines that begin with a space; a pipe may
// give several.
func (w *Watcher) read(records string) {
	for _, line := range strings.Split(records, "\n") {
		kill, ok := ParseKill(line)
		if !ok {
			continue
		}
		if id := ContainerID(kill.TaskCgroup); id != "" {
			w.log.V(1).Info("The kernel OOM-killed a container's process", "containerID", id, "task", kill.Task, "pid", kill.PID)
			w.remember(id)
		}
	}
}
