//go:build full

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestLogRotation restarts nodelet with small log limits, so it must run
// alone: it does not call t.Parallel (see main_test.go).
func TestLogRotation(t *testing.T) {
	f.restartNodeletWith(t, "--container-log-max-size=16Ki", "--container-log-max-files=3", "--container-log-monitor-interval=1s")
	ns := f.NewNamespace(t)
	// About 5 KB a second: a rotation every few seconds.
	pod := f.createPod(t, newPod(ns, "chatty").withShell(
		`i=0; while true; do i=$((i+1)); echo "line $i $(printf '%090d' 0)"; sleep 0.02; done`).obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	_, out, stderr := f.startKubectl(t, nil, "logs", "-f", "-n", ns, "chatty")

	dir := filepath.Join(f.podLogDir(pod), "app")
	rotated := map[string]bool{}
	var tooMany []string
	// lastRotatedLine is the number of the last line of the newest
	// rotated file: once the follow shows a later line, it went on past
	// that rotation.
	lastRotatedLine := 0
	await.Eventually(t, 2*time.Minute, "three rotations", await.Condition(func(context.Context) (bool, error) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return false, err
		}
		if len(entries) > 3 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			tooMany = names
		}
		for _, e := range entries {
			if name := e.Name(); name != "0.log" && !strings.HasSuffix(name, ".tmp") {
				rotated[strings.TrimSuffix(name, ".gz")] = true
			}
		}
		if len(rotated) < 3 {
			return false, nil
		}
		newest := ""
		for name := range rotated {
			newest = max(newest, name)
		}
		data, err := os.ReadFile(filepath.Join(dir, newest))
		if err != nil {
			return false, nil
		}
		lastRotatedLine = lastLineNumber(string(data))
		return lastRotatedLine > 0, nil
	}))
	if tooMany != nil {
		t.Errorf("the log folder held more than 3 files: %v", tooMany)
	}
	await.Eventually(t, time.Minute, fmt.Sprintf("the follow to go past line %d, in the rotated file", lastRotatedLine), await.Condition(func(context.Context) (bool, error) {
		return lastLineNumber(out.String()) > lastRotatedLine+10, nil
	}))
	// Every line, in order, none twice, across the rotations.
	got := out.String()
	lines := strings.Split(strings.TrimSuffix(got[:strings.LastIndex(got, "\n")+1], "\n"), "\n")
	for i, line := range lines {
		if n := lineNumber(line); n != i+1 {
			t.Fatalf("line %d of the follow is %.20q (stderr %q), want line %d: a rotation lost or repeated lines", i+1, line, stderr.String(), i+1)
		}
	}
	t.Logf("followed %d lines across %d rotations", len(lines), len(rotated))

	// The older rotated files are compressed; the newest is not, yet.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	compressed := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".gz") {
			compressed++
		}
	}
	if compressed == 0 {
		t.Errorf("no rotated file was compressed: %v", entries)
	}
}

// TestLogsOfAHundredMegabytes writes and streams 100 MB, which keeps the
// runtime and the disk busy for a while: it runs alone, not beside the
// tests that time pod starts and deletions (it does not call t.Parallel).
func TestLogsOfAHundredMegabytes(t *testing.T) {
	ns := f.NewNamespace(t)
	const lines = 100 * 1024
	const lineLength = 1024 // with its newline
	line := strings.Repeat("x", lineLength-1)
	pod := f.createPod(t, newPod(ns, "big").withShell(
		fmt.Sprintf("yes %s | head -n %d; echo end; sleep 3600", line, lines)).obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// Wait until it is all written: the last line is in the file.
	logFile := filepath.Join(f.podLogDir(pod), "app", "0.log")
	await.Eventually(t, 3*time.Minute, "the 100 MB log to be written", await.Condition(func(context.Context) (bool, error) {
		tail, err := readTail(logFile, 100)
		return err == nil && strings.HasSuffix(string(tail), " stdout F end\n"), nil
	}))

	pid := f.Nodelet.PID()
	before, err := processRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Stream it, counting, while watching nodelet's resident memory.
	var peak atomic.Int64
	peak.Store(before)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				if rss, err := processRSS(pid); err == nil && rss > peak.Load() {
					peak.Store(rss)
				}
			}
		}
	}()
	counter := &countingWriter{}
	cmd := f.kubectlCmd(t.Context(), "logs", "-n", ns, "big")
	cmd.Stdout = counter
	var stderr syncBuffer
	cmd.Stderr = &stderr
	started := time.Now()
	err = cmd.Run()
	close(stop)
	<-sampled
	if err != nil {
		t.Fatalf("kubectl logs of a 100 MB log: %v\n%s", err, stderr.String())
	}
	want := int64(lines*lineLength + len("end\n"))
	if counter.n.Load() != want {
		t.Errorf("kubectl logs streamed %d bytes, want %d", counter.n.Load(), want)
	}
	growth := peak.Load() - before
	t.Logf("streamed %d MB in %s; nodelet's RSS %d MB before, peak %d MB (+%d MB)",
		want>>20, time.Since(started).Round(time.Millisecond), before>>20, peak.Load()>>20, growth>>20)
	// Reading it whole into memory would take 100 MB more; a stream holds
	// a few buffers. The bound leaves room for the garbage collector's
	// slack and for pods of the tests before, still being removed.
	if growth > 40<<20 {
		t.Errorf("nodelet's resident memory grew by %d MB while streaming a 100 MB log, want less than 40 MB", growth>>20)
	}
}
