package logs

// Tests of reading CRI log files, on real files in t.TempDir(); following
// a log runs against a writer goroutine in the test, and rotation against a
// rename plus a new file, as the Rotator and the runtime do it.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

var t0 = time.Date(2026, 11, 22, 1, 19, 8, 0, time.UTC)

// rec renders one CRI log record written at t0+seconds.
func rec(seconds int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", t0.Add(time.Duration(seconds)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

func notRunning(context.Context) (bool, error) { return false, nil }

// sample has full lines on both streams, a line split in three partial
// records, and a record being written (no newline yet).
var sample = rec(0, "stdout", "F", "one") +
	rec(1, "stderr", "F", "err one") +
	rec(2, "stdout", "P", "long ") +
	rec(3, "stdout", "P", "line ") +
	rec(4, "stdout", "F", "ends") +
	rec(5, "stdout", "F", "") +
	rec(6, "stdout", "F", "last") +
	"2026-11-22T01:19:15Z stdout F being wri"

func TestReadLogs(t *testing.T) {
	tests := map[string]struct {
		opts       Options
		noStderr   bool
		wantStdout string
		wantStderr string
	}{
		"everything, partial records joined, the unfinished record left out": {
			wantStdout: "one\nlong line ends\n\nlast\n",
			wantStderr: "err one\n",
		},
		"timestamps start each line, not each record": {
			opts: Options{Timestamps: true},
			wantStdout: "2026-11-22T01:19:08.000000000Z one\n" +
				"2026-11-22T01:19:10.000000000Z long line ends\n" +
				"2026-11-22T01:19:13.000000000Z \n" +
				"2026-11-22T01:19:14.000000000Z last\n",
			wantStderr: "2026-11-22T01:19:09.000000000Z err one\n",
		},
		"tail counts whole lines": {
			opts:       Options{TailLines: ptr.To[int64](3)},
			wantStdout: "long line ends\n\nlast\n",
		},
		"tail of more lines than there are": {
			opts:       Options{TailLines: ptr.To[int64](100)},
			wantStdout: "one\nlong line ends\n\nlast\n",
			wantStderr: "err one\n",
		},
		"tail 0 shows nothing": {
			opts: Options{TailLines: ptr.To[int64](0)},
		},
		"since skips older records": {
			opts:       Options{Since: t0.Add(4 * time.Second)},
			wantStdout: "ends\n\nlast\n",
		},
		"limit cuts the output": {
			opts:       Options{LimitBytes: ptr.To[int64](10)},
			wantStdout: "one\n",
			wantStderr: "err on",
		},
		"only stdout": {
			noStderr:   true,
			opts:       Options{LimitBytes: ptr.To[int64](10)},
			wantStdout: "one\nlong l",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, sample)
			var stdout, stderr bytes.Buffer
			var errOut io.Writer = &stderr
			if tc.noStderr {
				errOut = nil
			}
			if err := ReadLogs(t.Context(), path, tc.opts, notRunning, &stdout, errOut); err != nil {
				t.Fatalf("ReadLogs: %v", err)
			}
			if diff := cmp.Diff(tc.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadLogsOneWriterKeepsTheOrderOfBothStreams(t *testing.T) {
	path := writeFile(t, sample)
	var out bytes.Buffer
	if err := ReadLogs(t.Context(), path, Options{}, notRunning, &out, &out); err != nil {
		t.Fatal(err)
	}
	if want := "one\nerr one\nlong line ends\n\nlast\n"; out.String() != want {
		t.Errorf("output = %q, want %q", out.String(), want)
	}
}

func TestReadLogsSkipsMalformedLines(t *testing.T) {
	path := writeFile(t, rec(0, "stdout", "F", "a")+"garbage\n"+"2026-11-22T01:19:08Z stdnone F x\n"+rec(1, "stdout", "F", "b"))
	var out bytes.Buffer
	if err := ReadLogs(t.Context(), path, Options{}, notRunning, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a\nb\n" {
		t.Errorf("output = %q, want %q", out.String(), "a\nb\n")
	}
}

func TestReadLogsLongLines(t *testing.T) {
	// Longer than the read buffer: the reader must grow, not fail.
	long := strings.Repeat("x", 3*readBufferSize)
	path := writeFile(t, rec(0, "stdout", "F", long)+rec(1, "stdout", "F", "after"))
	var out bytes.Buffer
	if err := ReadLogs(t.Context(), path, Options{TailLines: ptr.To[int64](2)}, notRunning, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != long+"\nafter\n" {
		t.Errorf("output has %d bytes, want %d", out.Len(), len(long)+7)
	}
}

// syncBuffer is a bytes.Buffer a follower writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func appendTo(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// waitForOutput waits until a follower has written want to out.
func waitForOutput(t *testing.T, what string, out *syncBuffer, want func() string) {
	t.Helper()
	await.Eventually(t, 10*time.Second, what, func(context.Context) error {
		if got := out.String(); got != want() {
			return fmt.Errorf("the output so far:\n%s", got)
		}
		return nil
	})
}

// is returns s, for waitForOutput's want.
func is(s string) func() string { return func() string { return s } }

func TestFollowReadsNewLinesUntilTheContainerStops(t *testing.T) {
	path := writeFile(t, rec(0, "stdout", "F", "first"))
	var running atomic.Bool
	running.Store(true)
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(t.Context(), path, Options{Follow: true}, func(context.Context) (bool, error) {
			return running.Load(), nil
		}, &out, &out)
	}()
	waitForOutput(t, "the first line", &out, is("first\n"))

	// A record written in two writes is shown once whole.
	appendTo(t, path, rec(1, "stdout", "P", "sec")[:20])
	appendTo(t, path, rec(1, "stdout", "P", "sec")[20:])
	appendTo(t, path, rec(2, "stdout", "F", "ond"))
	waitForOutput(t, "the second line", &out, is("first\nsecond\n"))

	// What the container wrote just before it stopped is still read.
	appendTo(t, path, rec(3, "stderr", "F", "bye"))
	running.Store(false)
	if err := await.Receive(t, 10*time.Second, "the follow to end after the container stopped", done); err != nil {
		t.Fatalf("ReadLogs: %v", err)
	}
	if out.String() != "first\nsecond\nbye\n" {
		t.Errorf("output = %q", out.String())
	}
}

func TestFollowEndsWithTheContext(t *testing.T) {
	path := writeFile(t, rec(0, "stdout", "F", "first"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(ctx, path, Options{Follow: true}, func(context.Context) (bool, error) { return true, nil }, &syncBuffer{}, nil)
	}()
	cancel()
	if err := await.Receive(t, 10*time.Second, "the follow to end with its context", done); err == nil {
		t.Errorf("ReadLogs ended without an error when its context was cancelled")
	}
}

func TestFollowAcrossRotations(t *testing.T) {
	path := writeFile(t, rec(0, "stdout", "F", "line 0"))
	var running atomic.Bool
	running.Store(true)
	var out syncBuffer
	done := make(chan error, 1)
	// Between a rename and the runtime's new file, the follower finds no
	// file at the path: sawNoFile says when.
	sawNoFile := make(chan struct{}, 1)
	testHookNoFileAtPath = func(p string) {
		if p != path {
			return
		}
		select {
		case sawNoFile <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookNoFileAtPath = func(string) {} })

	go func() {
		done <- ReadLogs(t.Context(), path, Options{Follow: true}, func(context.Context) (bool, error) {
			return running.Load(), nil
		}, &out, &out)
	}()

	// The follower has the file open before the first rotation.
	waitForOutput(t, "the first line", &out, is("line 0\n"))
	var want strings.Builder
	want.WriteString("line 0\n")
	n := 0
	write := func(file string, lines int) {
		for range lines {
			n++
			appendTo(t, file, rec(n, "stdout", "F", fmt.Sprint("line ", n)))
			fmt.Fprintf(&want, "line %d\n", n)
		}
	}
	for rotation := range 5 {
		write(path, 50)
		// What the follower found in the previous rotation's window (it
		// is done with it: it wrote all lines of the file after it).
		select {
		case <-sawNoFile:
		default:
		}
		// As the Rotator and the runtime do it: the file is renamed, the
		// runtime goes on writing to it until it reopens the log, then
		// writes to a new file at the old path.
		rotated := fmt.Sprintf("%s.%d", path, rotation)
		if err := os.Rename(path, rotated); err != nil {
			t.Fatal(err)
		}
		write(rotated, 10)
		if rotation%2 == 0 {
			// Sometimes the follower sees the path without a file. It
			// does once it has read the renamed file to its end: only
			// then is there a new file.
			await.Receive(t, 10*time.Second, fmt.Sprintf("the follower to find no file at the path in rotation %d", rotation), sawNoFile)
		}
		write(path, 10)
		// Rotations are an interval apart: the follower catches up in
		// between (one more than a whole file behind, it would go on
		// with the newest file).
		waitForOutput(t, fmt.Sprintf("the lines up to rotation %d", rotation), &out, want.String)
	}
	waitForOutput(t, "every line", &out, want.String)
	running.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("ReadLogs: %v", err)
	}
	if diff := cmp.Diff(want.String(), out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// countingFlusher counts flushes, the points where a follower waits.
type countingFlusher struct {
	syncBuffer
	flushes atomic.Int32
}

func (c *countingFlusher) Flush() error {
	c.flushes.Add(1)
	return nil
}

func TestFollowFlushesBeforeWaiting(t *testing.T) {
	path := writeFile(t, rec(0, "stdout", "F", "first"))
	out := &countingFlusher{}
	var running atomic.Bool
	running.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(t.Context(), path, Options{Follow: true}, func(context.Context) (bool, error) {
			return running.Load(), nil
		}, out, out)
	}()
	await.Eventually(t, 10*time.Second, "a flush", await.Condition(func(context.Context) (bool, error) { return out.flushes.Load() > 0, nil }))
	running.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestParseRecord(t *testing.T) {
	tests := map[string]struct {
		line    string
		want    record
		wantErr bool
	}{
		"full":        {line: "2026-11-22T01:19:08.29Z stdout F hello world", want: record{timestamp: t0.Add(290 * time.Millisecond), stream: "stdout", content: []byte("hello world")}},
		"partial":     {line: "2026-11-22T01:19:08Z stderr P part", want: record{timestamp: t0, stream: "stderr", partial: true, content: []byte("part")}},
		"more tags":   {line: "2026-11-22T01:19:08Z stdout P:x y", want: record{timestamp: t0, stream: "stdout", partial: true, content: []byte("y")}},
		"empty":       {line: "2026-11-22T01:19:08Z stdout F", want: record{timestamp: t0, stream: "stdout"}},
		"bad time":    {line: "yesterday stdout F x", wantErr: true},
		"bad stream":  {line: "2026-11-22T01:19:08Z stdin F x", wantErr: true},
		"no stream":   {line: "2026-11-22T01:19:08Z", wantErr: true},
		"not the CRI": {line: `{"log":"x"}`, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseRecord([]byte(tc.line))
			if tc.wantErr {
				if err == nil {
					t.Errorf("parseRecord(%q) = %+v, want an error", tc.line, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(record{}), cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })); diff != "" {
				t.Errorf("parseRecord (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTailStart(t *testing.T) {
	full := func(s string) string { return rec(0, "stdout", "F", s) }
	part := func(s string) string { return rec(0, "stdout", "P", s) }
	tests := map[string]struct {
		records []string
		tail    int64
		// want is the index of the first record shown.
		want int
	}{
		"empty file":                  {tail: 3, want: 0},
		"last of three":               {records: []string{full("a"), full("b"), full("c")}, tail: 1, want: 2},
		"all three":                   {records: []string{full("a"), full("b"), full("c")}, tail: 3, want: 0},
		"more than there are":         {records: []string{full("a"), full("b")}, tail: 9, want: 0},
		"none":                        {records: []string{full("a"), full("b")}, tail: 0, want: 2},
		"a split line counts once":    {records: []string{full("a"), part("b1"), part("b2"), full("b3"), full("c")}, tail: 2, want: 1},
		"a line being written counts": {records: []string{full("a"), full("b"), part("c1"), part("c2")}, tail: 2, want: 1},
		"the split line at the start": {records: []string{part("a1"), full("a2"), full("b")}, tail: 2, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			content := strings.Join(tc.records, "")
			want := int64(len(strings.Join(tc.records[:tc.want], "")))
			got, err := tailStart(strings.NewReader(content), int64(len(content)), tc.tail)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("tailStart = %d, want %d (record %d)", got, want, tc.want)
			}
			// Whatever the block size, the same answer: records across
			// block boundaries.
			withUnfinished := content + "2026-11-22T01:19:08Z stdout F unfinish"
			got, err = tailStart(strings.NewReader(withUnfinished), int64(len(withUnfinished)), tc.tail)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("with an unfinished record at the end: tailStart = %d, want %d", got, want)
			}
		})
	}
}

func TestTailStartAcrossBlocks(t *testing.T) {
	// Records of every length around the block size and the tag window.
	var b strings.Builder
	var starts []int64
	for i := range 3000 {
		starts = append(starts, int64(b.Len()))
		tag := "F"
		if i%3 == 1 {
			tag = "P"
		}
		b.WriteString(rec(i, "stdout", tag, strings.Repeat("y", i%97)))
	}
	content := b.String()
	// Line starts: a record starts a line when the one before it is full.
	var lineStarts []int64
	for i := range starts {
		if i == 0 || (i-1)%3 != 1 {
			lineStarts = append(lineStarts, starts[i])
		}
	}
	for _, n := range []int64{1, 7, 100, 999, int64(len(lineStarts))} {
		got, err := tailStart(strings.NewReader(content), int64(len(content)), n)
		if err != nil {
			t.Fatal(err)
		}
		if want := lineStarts[int64(len(lineStarts))-n]; got != want {
			t.Errorf("tail %d: got offset %d, want %d", n, got, want)
		}
	}
}

// BenchmarkReadLogs reads a 16 MiB log of 1 KiB lines: bytes a second, and
// allocations, which stay the same whatever the file's size.
func BenchmarkReadLogs(b *testing.B) {
	var content strings.Builder
	line := strings.Repeat("x", 1000)
	for i := 0; content.Len() < 16<<20; i++ {
		content.WriteString(rec(i, "stdout", "F", line))
	}
	path := filepath.Join(b.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(content.String()), 0o640); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(content.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if err := ReadLogs(context.Background(), path, Options{Timestamps: true}, notRunning, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
