package oomwatch

// The Watcher reads a named pipe standing in for /dev/kmsg: a unit test
// may not write OOM kills into the kernel's log of the machine it runs on.
// The real device is read in the e2e suite's OOM kill test.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestWatcherRemembersTheContainersTheLogSaysWereKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	w := New(path, testr.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()

	// Opening the pipe for writing waits for the watcher to open it.
	pipe, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	other := "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	records := "6,1,100,-;Memory cgroup out of memory: Killed process 7 (tail)\n" +
		" SUBSYSTEM=memory\n" +
		"6,2,101,-;oom-kill:constraint=CONSTRAINT_NONE,global_oom,task_memcg=/user.slice,task=java,pid=8,uid=0\n" +
		"6,3,102,-;oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/" + containerID + ",task=tail,pid=9,uid=0\n"
	if _, err := pipe.WriteString(records); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 10*time.Second, "the watcher to learn of the kill of "+containerID, func(context.Context) error {
		if !w.Killed(containerID) {
			return await.ErrNotYet
		}
		return nil
	})
	if w.Killed(other) {
		t.Errorf("the watcher says %s was killed; the log never named it", other)
	}
	if w.Killed("") {
		t.Errorf("the system's own OOM kill was taken for a container's")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v once its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return within 10s of its context's end")
	}
}

func TestWatcherOfALogItMayNotReadLeavesTheNodeRunning(t *testing.T) {
	w := New(filepath.Join(t.TempDir(), "missing"), testr.New(t))
	if err := w.Start(context.Background()); err != nil {
		t.Errorf("Start = %v, want nil", err)
	}
	if w.Killed(containerID) {
		t.Errorf("a watcher that read nothing says a container was killed")
	}
}

func TestWatcherForgetsTheOldestKillsPastItsBound(t *testing.T) {
	w := New("", testr.New(t))
	id := func(i int) string { return fmt.Sprintf("%064x", i) }
	for i := range remembered + 1 {
		w.remember(id(i))
	}
	if w.Killed(id(0)) {
		t.Errorf("the oldest kill is still remembered past %d", remembered)
	}
	for _, i := range []int{1, remembered} {
		if !w.Killed(id(i)) {
			t.Errorf("kill %d is forgotten; only the oldest should be", i)
		}
	}
	w.remember(id(1))
	if len(w.order) != remembered {
		t.Errorf("remembering a kill again grew the record to %d", len(w.order))
	}
}
