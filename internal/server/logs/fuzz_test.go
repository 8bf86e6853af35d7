package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReadLogs reads any bytes as a container's log file, with any tail,
// limit and since: never a panic, never more than limitBytes of output,
// and the tail of a file never longer than the whole of it.
func FuzzReadLogs(f *testing.F) {
	for _, seed := range []string{
		"",
		"2016-10-06T00:17:09.669794202Z stdout F hello\n",
		"2016-10-06T00:17:09.669794202Z stdout P a long \n2016-10-06T00:17:09.669794203Z stdout F line\n2016-10-06T00:17:10Z stderr F oops\n",
		"2016-10-06T00:17:09Z stdout F no newline at the end",
		"garbage\n\n\n2016-10-06T00:17:09Z stdout\n2016-10-06T00:17:09Z stdin F x\n2016-10-06T00:17:09Z stderr P:x \n",
	} {
		f.Add([]byte(seed), int64(-1), int64(-1), int64(0), false)
		f.Add([]byte(seed), int64(1), int64(5), int64(time.Date(2016, 10, 6, 0, 17, 9, 669794203, time.UTC).UnixNano()), true)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, tail, limit, sinceNanos int64, timestamps bool) {
		path := filepath.Join(dir, "0.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := Options{Since: time.Unix(0, sinceNanos), Timestamps: timestamps}
		// -1 stands for no tail and no limit; other negative values are
		// passed as they are.
		if tail != -1 {
			opts.TailLines = &tail
		}
		if limit != -1 {
			opts.LimitBytes = &limit
		}
		var stdout, stderr bytes.Buffer
		if err := ReadLogs(context.Background(), path, opts, nil, &stdout, &stderr); err != nil {
			t.Fatalf("ReadLogs() error = %v", err)
		}
		if opts.LimitBytes != nil && int64(stdout.Len()+stderr.Len()) > max(*opts.LimitBytes, 0) {
			t.Errorf("ReadLogs() wrote %d bytes, want at most limitBytes %d", stdout.Len()+stderr.Len(), *opts.LimitBytes)
		}

		start, err := tailStart(bytes.NewReader(data), int64(len(data)), tail)
		if err != nil {
			t.Fatalf("tailStart() error = %v", err)
		}
		if start < 0 || start > int64(len(data)) || (start > 0 && data[start-1] != '\n') {
			t.Errorf("tailStart(%d) = %d, not the start of a line of a %d-byte file", tail, start, len(data))
		}
	})
}

// FuzzParseRecord parses any line as a CRI log record.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte("2016-10-06T00:17:09.669794202Z stdout F hello"))
	f.Add([]byte("2016-10-06T00:17:09.669794202Z stderr P:x "))
	f.Add([]byte("x y"))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseRecord(line)
		if err != nil {
			return
		}
		if !bytes.HasSuffix(line, r.content) {
			t.Errorf("parseRecord(%q) content %q is not the end of the line", line, r.content)
		}
		if r.partial != recordIsPartial(line) {
			t.Errorf("parseRecord(%q) partial = %v, recordIsPartial = %v", line, r.partial, recordIsPartial(line))
		}
	})
}
