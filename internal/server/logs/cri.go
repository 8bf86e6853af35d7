// Package logs reads and rotates the container log files a CRI runtime
// writes, as the kubelet does: it serves `kubectl logs` (ReadLogs) and keeps
// each running container's log under a size and a number of files
// (Rotator).
//
// A CRI log file holds one record a line:
//
//	2016-10-06T00:17:09.669794202Z stdout P the first part of a long line
//	2016-10-06T00:17:09.669794203Z stdout F and its end
//
// The tag P marks a partial record: the runtime split a long line, and the
// next record of the same stream continues it. F ends a line.
package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// timestampFormat is how ReadLogs prints timestamps: RFC 3339 with a fixed
// nine-digit fraction, so that the prefixes line up (the kubelet's format).
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// record is one line of a CRI log file.
type record struct {
	timestamp time.Time
	stream    runtimeapi.LogStreamType
	// partial means the line goes on in the stream's next record.
	partial bool
	// content is the record's text, without the record's own newline.
	content []byte
}

var errMalformed = errors.New("not a CRI log record")

// parseRecord parses one line of a CRI log file, given without its newline.
// The record's content points into line.
func parseRecord(line []byte) (record, error) {
	var r record
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return r, fmt.Errorf("%w: no timestamp in %q", errMalformed, truncate(line))
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, fmt.Errorf("%w: bad timestamp in %q: %w", errMalformed, truncate(line), err)
	}
	r.timestamp = t

	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return r, fmt.Errorf("%w: no stream in %q", errMalformed, truncate(line))
	}
	// Compared as bytes: a string made for each line would cost an
	// allocation a line.
	switch string(stream) {
	case string(runtimeapi.Stdout):
		r.stream = runtimeapi.Stdout
	case string(runtimeapi.Stderr):
		r.stream = runtimeapi.Stderr
	default:
		return r, fmt.Errorf("%w: unknown stream %q", errMalformed, stream)
	}

	// The tags may be followed by nothing at all when the record is empty.
	tags, content, _ := bytes.Cut(rest, []byte{' '})
	r.partial = isPartialTag(tags)
	r.content = content
	return r, nil
}

// isPartialTag tells whether a record's tags ("P", "F", or either followed
// by ":" and more tags) mark it partial.
func isPartialTag(tags []byte) bool {
	first, _, _ := bytes.Cut(tags, []byte(runtimeapi.LogTagDelimiter))
	return runtimeapi.LogTag(first) == runtimeapi.LogTagPartial
}

// recordIsPartial reads only a record's tag: the third field of the line.
// A line that does not parse counts as a full one.
func recordIsPartial(line []byte) bool {
	_, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return false
	}
	_, rest, ok = bytes.Cut(rest, []byte{' '})
	if !ok {
		return false
	}
	tags, _, _ := bytes.Cut(rest, []byte{' '})
	return isPartialTag(tags)
}

func truncate(line []byte) []byte {
	const max = 80
	if len(line) > max {
		return line[:max]
	}
	return line
}
