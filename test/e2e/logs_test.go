package e2e

// `kubectl logs` against nodelet, through the API server, as a user runs
// it: the stack's kubectl (v1.36) as the admin.

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// waitForLogs polls `kubectl logs -n ns args...` until its output is want.
func (f *Framework) waitForLogs(t *testing.T, want, ns string, args ...string) {
	t.Helper()
	f.waitForLogsTo(t, fmt.Sprintf("be %q", want), func(out string) bool { return out == want }, ns, args...)
}

// waitForLogsTo polls `kubectl logs -n ns args...` until its output
// passes check.
func (f *Framework) waitForLogsTo(t *testing.T, what string, check func(string) bool, ns string, args ...string) {
	t.Helper()
	args = append([]string{"logs", "-n", ns}, args...)
	var last, lastErr string
	err := await.Poll(t.Context(), 30*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		stdout, stderr, err := f.kubectl(ctx, nil, args...)
		if ctx.Err() != nil {
			return false, nil
		}
		last, lastErr = stdout, stderr
		return err == nil && check(stdout), nil
	}))
	if err != nil {
		t.Fatalf("kubectl %s: got %q (stderr %q), want it to %s: %v\nthe log files of namespace %s:\n%s",
			strings.Join(args, " "), last, lastErr, what, err, ns, f.logFilesOf(ns))
	}
}

// logFilesOf shows the container log files of a namespace's pods, for
// failure messages.
func (f *Framework) logFilesOf(ns string) string {
	files, _ := filepath.Glob(filepath.Join(f.Env.PodLogDir, ns+"_*", "*", "*"))
	var b strings.Builder
	for _, file := range files {
		data, err := readTail(file, 2000)
		fmt.Fprintf(&b, "%s (%v):\n%s\n", file, err, data)
	}
	return b.String()
}

func TestLogsOfARunningContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// Only stdout: the runtime reads stdout and stderr apart, so their
	// lines may land in either order (TestLogsOfAFinishedContainer has
	// both).
	pod := f.createPod(t, newPod(ns, "counter").withShell("for i in 1 2 3 4 5 6; do echo $i; done; sleep 3600").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	f.waitForLogs(t, "1\n2\n3\n4\n5\n6\n", ns, "counter")
	t.Run("--tail", func(t *testing.T) {
		f.waitForLogs(t, "5\n6\n", ns, "counter", "--tail=2")
	})
	t.Run("--timestamps", func(t *testing.T) {
		out := f.mustKubectl(t, "logs", "-n", ns, "counter", "--tail=1", "--timestamps")
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z 6\n$`).MatchString(out) {
			t.Errorf("kubectl logs --timestamps --tail=1 = %q, want an RFC 3339 time and the line", out)
		}
	})
	t.Run("--limit-bytes", func(t *testing.T) {
		f.waitForLogs(t, "1\n2\n3", ns, "counter", "--limit-bytes=5")
	})
	t.Run("the API's own errors", func(t *testing.T) {
		_, stderr, err := f.kubectl(t.Context(), nil, "logs", "-n", ns, "counter", "--previous")
		if err == nil || !strings.Contains(stderr, `previous terminated container "app" in pod "counter" not found`) {
			t.Errorf("kubectl logs --previous of a container never restarted: err %v, stderr %q; want the kubelet's error", err, stderr)
		}
	})
}

func TestLogsOfAFinishedContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "job").withRestartPolicy(corev1.RestartPolicyNever).withShell("echo done; echo failed-softly >&2").obj())
	f.waitForPod(t, pod, podStartTimeout, "to succeed", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	// Both streams, in whichever order the runtime read them.
	f.waitForLogsTo(t, "hold done and failed-softly", func(out string) bool {
		return out == "done\nfailed-softly\n" || out == "failed-softly\ndone\n"
	}, ns, "job")
}

func TestLogsFollowNewLines(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The second line is written only once the test asks for it, after
	// the follow began.
	pod := f.createPod(t, newPod(ns, "waiter").withShell(
		"echo before; while [ ! -f /tmp/go ]; do sleep 0.1; done; echo after; sleep 3600").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogs(t, "before\n", ns, "waiter")

	_, out, _ := f.startKubectl(t, nil, "logs", "-f", "-n", ns, "waiter")
	await.Eventually(t, 30*time.Second, "the follow to show the first line", await.Condition(func(context.Context) (bool, error) {
		return out.String() == "before\n", nil
	}))
	f.mustKubectl(t, "exec", "-n", ns, "waiter", "--", "touch", "/tmp/go")
	await.Eventually(t, 30*time.Second, "the follow to show the line written after it began", await.Condition(func(context.Context) (bool, error) {
		return out.String() == "before\nafter\n", nil
	}))
}

func TestLogsSince(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "twice").withShell(
		"echo early; while [ ! -f /tmp/go ]; do sleep 0.1; done; echo late; sleep 3600").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	stamped := func() map[string]time.Time {
		out := f.mustKubectl(t, "logs", "-n", ns, "twice", "--timestamps")
		times := map[string]time.Time{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			ts, text, _ := strings.Cut(line, " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("line %q has no timestamp: %v", line, err)
			}
			times[text] = at
		}
		return times
	}
	f.waitForLogs(t, "early\n", ns, "twice")
	early := stamped()["early"]
	// "late" comes 20s after "early", and --since=15s is asked within
	// 15s of "late": it shows late and not early, with room to spare on
	// a busy machine.
	await.Eventually(t, time.Minute, "the first line to be 20s old", await.Condition(func(context.Context) (bool, error) {
		return time.Since(early) >= 20*time.Second, nil
	}))
	f.mustKubectl(t, "exec", "-n", ns, "twice", "--", "touch", "/tmp/go")
	f.waitForLogs(t, "early\nlate\n", ns, "twice")
	late := stamped()["late"]

	if out := f.mustKubectl(t, "logs", "-n", ns, "twice", "--since=15s"); out != "late\n" {
		t.Errorf("kubectl logs --since=15s = %q, want only the line written %s after the first", out, late.Sub(early).Round(time.Second))
	}
	if out := f.mustKubectl(t, "logs", "-n", ns, "twice", "--since-time="+late.Format(time.RFC3339Nano)); out != "late\n" {
		t.Errorf("kubectl logs --since-time=<the second line's time> = %q, want only that line", out)
	}
}

func TestLogsOfThePreviousContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// The first run exits 1, the second stays up; each says which it is.
	pod := f.createPod(t, newPod(ns, "restarter").withEmptyDir("data", "/data").withShell(
		"n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo run $n; "+
			"if [ $n -lt 2 ]; then exit 1; fi; sleep 3600").obj())
	f.waitForPod(t, pod, 2*time.Minute, "to run again after a restart", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return s != nil && s.RestartCount == 1 && s.State.Running != nil, nil
	})
	f.waitForLogs(t, "run 2\n", ns, "restarter")
	f.waitForLogs(t, "run 1\n", ns, "restarter", "--previous")
}

type countingWriter struct {
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

var lineNumberRE = regexp.MustCompile(`^line (\d+) `)

func lineNumber(line string) int {
	m := lineNumberRE.FindStringSubmatch(line)
	if m == nil {
		// A CRI record: the line is its content.
		if _, rest, ok := strings.Cut(line, " stdout F "); ok {
			m = lineNumberRE.FindStringSubmatch(rest)
		}
	}
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// lastLineNumber is the number of the last whole line of text.
func lastLineNumber(text string) int {
	text = text[:strings.LastIndex(text, "\n")+1]
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	return lineNumber(lines[len(lines)-1])
}
