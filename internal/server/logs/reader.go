package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Options are what `kubectl logs` asks for, as v1.PodLogOptions has them.
type Options struct {
	// TailLines, when set, starts at the last TailLines lines.
	TailLines *int64
	// LimitBytes, when set, stops after that many bytes of output.
	LimitBytes *int64
	// Since skips the records written before it.
	Since time.Time
	// Follow keeps reading what the container writes until it stops,
	// across rotations of its log file.
	Follow bool
	// Timestamps starts every line with the time it was written.
	Timestamps bool
}

// RunningFunc tells whether the container still runs, and so may still
// write to its log.
type RunningFunc func(ctx context.Context) (bool, error)

// Flusher is a writer that holds output back until told to flush; ReadLogs
// flushes its writers whenever it waits for the container to write more.
type Flusher interface {
	Flush() error
}

// checkPeriod is how often a follower looks at the file and the container
// when no file event has come: events can be missed (a rotation, a full
// inotify queue), a stopped container sends none.
const checkPeriod = time.Second

// readBufferSize bounds the memory one reader holds: lines are read through
// it, and a line longer than it (the runtime splits lines at 16 KiB) only
// grows one scratch buffer.
const readBufferSize = 64 << 10

// ReadLogs copies a container's log file at path to stdout and stderr, as
// opts ask: records of the stream whose writer is nil are skipped. Memory
// stays bounded whatever the file's size. When following, it returns once
// running says the container stopped and everything it wrote was copied,
// or when ctx ends; a rotation (the file renamed away and a new one made
// at path) is followed to the new file once the old one is read to its end.
func ReadLogs(ctx context.Context, path string, opts Options, running RunningFunc, stdout, stderr io.Writer) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening log file %s: %w", path, err)
	}
	r := &fileReader{file: file, buf: bufio.NewReaderSize(file, readBufferSize)}
	defer func() { r.file.Close() }()

	if opts.TailLines != nil {
		info, err := file.Stat()
		if err != nil {
			return fmt.Errorf("reading log file %s: %w", path, err)
		}
		start, err := tailStart(file, info.Size(), *opts.TailLines)
		if err != nil {
			return fmt.Errorf("tailing log file %s: %w", path, err)
		}
		if err := r.seek(start); err != nil {
			return fmt.Errorf("tailing log file %s: %w", path, err)
		}
	}

	w := newLogWriter(opts, stdout, stderr)
	f := &follower{path: path, running: running, log: klog.FromContext(ctx)}
	defer f.close()
	for {
		line, err := r.next()
		switch {
		case err == nil:
			rec, err := parseRecord(line)
			if err != nil {
				f.log.V(1).Info("Skipped a malformed line in a container log", "path", path, "err", err.Error())
				continue
			}
			if err := w.write(rec); err != nil {
				if errors.Is(err, errLimitReached) {
					return nil
				}
				return err
			}
			continue
		case !errors.Is(err, io.EOF):
			return fmt.Errorf("reading log file %s: %w", path, err)
		}

		// At the end of what has been written so far.
		if !opts.Follow {
			return nil
		}
		if err := flush(stdout, stderr); err != nil {
			return err
		}
		next, done, err := f.waitForMore(ctx, r.file)
		if err != nil || done {
			return err
		}
		if next != nil {
			r.file.Close()
			r.file = next
			r.buf.Reset(next)
			r.offset = 0
		}
	}
}

// fileReader reads whole records from a log file that is still being
// written: a record without its newline yet is left to be read again.
type fileReader struct {
	file *os.File
	buf  *bufio.Reader
	// offset is where the next record starts.
	offset int64
	// long holds a line longer than buf.
	long []byte
}

func (r *fileReader) seek(offset int64) error {
	if _, err := r.file.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	r.buf.Reset(r.file)
	r.offset = offset
	return nil
}

// next returns the next record's line without its newline, valid until the
// next call, or io.EOF when no whole record follows.
func (r *fileReader) next() ([]byte, error) {
	r.long = r.long[:0]
	for {
		chunk, err := r.buf.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk
			if len(r.long) > 0 {
				r.long = append(r.long, chunk...)
				line = r.long
			}
			r.offset += int64(len(line))
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.long = append(r.long, chunk...)
		case errors.Is(err, io.EOF):
			if len(r.long)+len(chunk) > 0 {
				// A record being written: read it again once it is whole.
				if err := r.seek(r.offset); err != nil {
					return nil, err
				}
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// follower waits for a followed log to grow, to be rotated, or for its
// container to stop.
type follower struct {
	path    string
	running RunningFunc
	log     klog.Logger

	watcher *fsnotify.Watcher
	// rotated is the file now at path, once the one being read was
	// rotated away; it is read once the old one has been read to its end
	// a last time.
	rotated *os.File
	// stopped is set once the container was seen stopped: one more read
	// takes what it wrote before, then the follow ends.
	stopped bool
}

// waitForMore is called at the end of the file being read. It returns the
// file to go on with when the log was rotated, done when the follow is
// over, or nothing once there may be more to read.
func (f *follower) waitForMore(ctx context.Context, current *os.File) (next *os.File, done bool, err error) {
	if f.rotated != nil {
		// The old file was read to its end after the new one appeared,
		// and the runtime writes only to the new one now.
		next, f.rotated = f.rotated, nil
		return next, false, nil
	}
	if f.stopped {
		return nil, true, nil
	}
	if rotated, err := f.openIfRotated(current); err != nil || rotated != nil {
		f.rotated = rotated
		return nil, false, err
	}
	running, err := f.running(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("following log file %s: %w", f.path, err)
	}
	if !running {
		f.stopped = true
		return nil, false, nil
	}
	return nil, false, f.wait(ctx)
}

// testHookNoFileAtPath is called when a follower finds no file at its
// path, in the middle of a rotation; the tests use it to write the new file
// only after that.
var testHookNoFileAtPath = func(path string) {}

// openIfRotated opens the file at path if it is no longer the one being
// read. Between the rename of the old file and the runtime's reopening
// there is no file at path: that is not a rotation yet.
func (f *follower) openIfRotated(current *os.File) (*os.File, error) {
	atPath, err := os.Stat(f.path)
	if errors.Is(err, os.ErrNotExist) {
		testHookNoFileAtPath(f.path)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("following log file %s: %w", f.path, err)
	}
	reading, err := current.Stat()
	if err != nil {
		return nil, fmt.Errorf("following log file %s: %w", f.path, err)
	}
	if os.SameFile(atPath, reading) {
		return nil, nil
	}
	next, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("following log file %s after its rotation: %w", f.path, err)
	}
	f.log.V(1).Info("Following a rotated container log to its new file", "path", f.path)
	return next, nil
}

// wait returns after a change in the log's folder, after checkPeriod, or
// when ctx ends.
func (f *follower) wait(ctx context.Context) error {
	if f.watcher == nil {
		watcher, err := fsnotify.NewWatcher()
		if err == nil {
			err = watcher.Add(filepath.Dir(f.path))
			if err != nil {
				watcher.Close()
			}
		}
		if err != nil {
			// Polling still follows the log, only later.
			f.log.V(1).Info("Following a container log without file events", "path", f.path, "err", err.Error())
		} else {
			f.watcher = watcher
			// Whatever was written before the watch began is read
			// before waiting.
			return nil
		}
	}
	var events chan fsnotify.Event
	var watchErrors chan error
	if f.watcher != nil {
		events, watchErrors = f.watcher.Events, f.watcher.Errors
	}
	timer := time.NewTimer(checkPeriod)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-events:
	case err := <-watchErrors:
		f.log.V(1).Info("File events of a followed container log failed", "path", f.path, "err", err.Error())
	case <-timer.C:
	}
	return nil
}

func (f *follower) close() {
	if f.watcher != nil {
		f.watcher.Close()
	}
	if f.rotated != nil {
		f.rotated.Close()
	}
}

// flush flushes the writers that hold output back (stdout and stderr are
// often one writer; flushing it twice does no harm).
func flush(writers ...io.Writer) error {
	for _, w := range writers {
		if fl, ok := w.(Flusher); ok {
			if err := fl.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// errLimitReached ends a read that wrote LimitBytes.
var errLimitReached = errors.New("limit of bytes reached")

// logWriter writes records as `kubectl logs` shows them.
type logWriter struct {
	stdout, stderr io.Writer
	since          time.Time
	timestamps     bool
	// remain is how many more bytes may be written.
	remain int64
	// midLine tells, per stream, that the last record written was partial:
	// the next one continues its line and takes no timestamp.
	midLine map[runtimeapi.LogStreamType]bool
	prefix  []byte
}

func newLogWriter(opts Options, stdout, stderr io.Writer) *logWriter {
	w := &logWriter{
		stdout:     stdout,
		stderr:     stderr,
		since:      opts.Since,
		timestamps: opts.Timestamps,
		remain:     math.MaxInt64,
		midLine:    map[runtimeapi.LogStreamType]bool{},
	}
	if opts.LimitBytes != nil {
		// The API rejects a limit below 1; one that got past it writes
		// nothing rather than cutting at a negative length.
		w.remain = max(*opts.LimitBytes, 0)
	}
	return w
}

// write writes one record: its content, a newline if it ends its line, and
// before a line's first record its timestamp if asked for.
func (w *logWriter) write(r record) error {
	if r.timestamp.Before(w.since) {
		return nil
	}
	out := w.stdout
	if r.stream == runtimeapi.Stderr {
		out = w.stderr
	}
	if out == nil {
		return nil
	}
	if w.timestamps && !w.midLine[r.stream] {
		w.prefix = append(r.timestamp.AppendFormat(w.prefix[:0], timestampFormat), ' ')
		if err := w.emit(out, w.prefix); err != nil {
			return err
		}
	}
	w.midLine[r.stream] = r.partial
	if err := w.emit(out, r.content); err != nil {
		return err
	}
	if !r.partial {
		return w.emit(out, []byte{'\n'})
	}
	return nil
}

// emit writes b, cut to the bytes that remain.
func (w *logWriter) emit(out io.Writer, b []byte) error {
	if int64(len(b)) > w.remain {
		b = b[:w.remain]
	}
	if len(b) > 0 {
		n, err := out.Write(b)
		w.remain -= int64(n)
		if err != nil {
			return err
		}
	}
	if w.remain <= 0 {
		return errLimitReached
	}
	return nil
}
