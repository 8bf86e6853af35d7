package network

// Garbage collection: the attachments of sandboxes the runtime no longer
// runs, and the call logs of containers long gone.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

const (
	// staleGrace is how long an attachment whose sandbox the runtime does
	// not list yet, but whose network namespace exists, is left alone: the
	// runtime lists a sandbox only once RunPodSandbox is done, seconds
	// after the ADD.
	staleGrace = 2 * time.Minute
	// callLogRetention is how long a container's plugin call log is kept
	// after its attachment is gone.
	callLogRetention = time.Hour
)

// garbageCollect deletes the attachments of sandboxes the runtime no
// longer runs, and the call logs of containers long gone.
func (a *Agent) garbageCollect(ctx context.Context) {
	sandboxes, ok := a.sandboxes(ctx)
	if !ok {
		return
	}
	a.collect(ctx, func(key attachmentKey) SandboxState { return sandboxes[key.containerID] })
	a.pruneCallLogs()
}

func (a *Agent) collect(ctx context.Context, state func(attachmentKey) SandboxState) {
	now := a.opts.Clock.Now()
	for _, key := range a.snapshot() {
		unlock, ok := a.tryLock(key.containerID)
		if !ok {
			continue // a call is under way
		}
		att, ok := a.get(key)
		if ok && isStale(att.added, netnsExists(att.record.NetNS), state(key), now.Sub(att.record.Created)) {
			if err := a.delLocked(ctx, key, ""); err != nil {
				a.opts.Log.Error(err, "Failed to delete the network of a sandbox gone", "containerID", key.containerID)
			} else {
				a.opts.Log.Info("Deleted the network of a sandbox gone", "pod", klog.KRef(att.record.Pod.Namespace, att.record.Pod.Name), "containerID", key.containerID)
			}
		}
		unlock()
	}
}

func netnsExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// isStale says whether an attachment no call is working on is to be
// deleted, from what the runtime says of its sandbox.
func isStale(added, netnsExists bool, sandbox SandboxState, age time.Duration) bool {
	switch {
	case sandbox == SandboxReady:
		return false
	case sandbox == SandboxNotReady:
		// A stopped sandbox never runs again; its teardown did not reach
		// nodelet.
		return true
	case !added:
		// An ADD cut short (nodelet died): the runtime failed the sandbox.
		return true
	case !netnsExists:
		// The runtime removes the namespace of a sandbox it removed or
		// failed to create.
		return true
	}
	// Added, and its namespace is there, but not listed: the runtime may
	// still be creating the sandbox.
	return age > staleGrace
}

// pruneCallLogs removes the call logs of containers that have had no
// attachment for callLogRetention.
func (a *Agent) pruneCallLogs() {
	entries, err := os.ReadDir(a.opts.callDir())
	if err != nil {
		return
	}
	a.mu.Lock()
	live := map[string]bool{}
	for key := range a.attachments {
		live[key.containerID] = true
	}
	a.mu.Unlock()
	now := a.opts.Clock.Now()
	for _, entry := range entries {
		id := strings.TrimSuffix(entry.Name(), ".log")
		info, err := entry.Info()
		if err != nil || live[id] || now.Sub(info.ModTime()) < callLogRetention {
			continue
		}
		os.Remove(filepath.Join(a.opts.callDir(), entry.Name()))
	}
}
