package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// tailBlockSize is how much of the file tailStart reads at a time, going
// backwards.
const tailBlockSize = 32 << 10

// tagWindow is enough of a record's start to hold its timestamp, stream
// and tag.
const tagWindow = 64

// tailStart returns the offset at which the last n lines of a CRI log file
// of the given size begin. Lines are counted as the user sees them: a line
// the runtime split into partial records counts once, and a line still
// being written (partial records at the end) counts too. Bytes after the
// last newline (a record being written) are not a record yet.
func tailStart(f io.ReaderAt, size, n int64) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	// Going backwards, count the places where a line ends: after every
	// full record, and after the newest record even when it is partial.
	// The last n lines start at the (n+1)-th such end.
	ends := int64(0)
	newest := true
	// recordEnd is the offset past the newline of the record whose start
	// is being looked for; -1 until the file's last newline is found.
	recordEnd := int64(-1)
	// visit looks at the record [start, recordEnd) and tells whether the
	// lines after it are the n wanted.
	visit := func(block []byte, blockStart, start int64) (bool, error) {
		partial, err := partialAt(f, block, blockStart, start)
		if err != nil {
			return false, err
		}
		if !partial || newest {
			ends++
		}
		newest = false
		return ends == n+1, nil
	}

	block := make([]byte, tailBlockSize)
	var buf []byte
	for blockEnd := size; blockEnd > 0; blockEnd -= int64(len(buf)) {
		blockStart := max(blockEnd-tailBlockSize, 0)
		buf = block[:blockEnd-blockStart]
		if _, err := f.ReadAt(buf, blockStart); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("reading the log file backwards: %w", err)
		}
		for i := len(buf) - 1; i >= 0; i-- {
			if buf[i] != '\n' {
				continue
			}
			start := blockStart + int64(i) + 1
			if recordEnd >= 0 {
				if found, err := visit(buf, blockStart, start); err != nil || found {
					return recordEnd, err
				}
			}
			recordEnd = start
		}
	}
	// The oldest record starts the file.
	if recordEnd > 0 {
		if found, err := visit(buf, 0, 0); err != nil || found {
			return recordEnd, err
		}
	}
	return 0, nil
}

// partialAt reads the tag of the record starting at offset start, from the
// block when it holds the record's start, else from the file.
func partialAt(f io.ReaderAt, block []byte, blockStart, start int64) (bool, error) {
	from := start - blockStart
	if from+tagWindow <= int64(len(block)) {
		return recordIsPartial(lineOf(block[from : from+tagWindow])), nil
	}
	head := make([]byte, tagWindow)
	n, err := f.ReadAt(head, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("reading a log record's tag: %w", err)
	}
	return recordIsPartial(lineOf(head[:n])), nil
}

// lineOf cuts b at its first newline.
func lineOf(b []byte) []byte {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	return line
}
