package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's limits on a termination message: the end of the message
// file, or of the log under FallbackToLogsOnError.
const (
	maxTerminationMessageLength        = 4096
	maxTerminationMessageLogLength     = 2048
	maxTerminationMessageLogLines      = 80
	maxTerminationMessageLogReadLength = 1 << 20
)

// withTerminationMessage adds an exited container's termination message
// to the runtime's own message, as the kubelet does: the file the container
// wrote at terminationMessagePath, or, under FallbackToLogsOnError, the end
// of its log when it failed without writing one.
func withTerminationMessage(runtimeMessage string, s *runtimeapi.ContainerStatus, info containerAnnotations) string {
	// A container that could not even run has no log to fall back to.
	fallback := info.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError &&
		s.GetExitCode() != 0 && s.GetReason() != "ContainerCannotRun"
	message, checkLogs := readTerminationMessageFile(s.GetMounts(), info.TerminationMessagePath, fallback)
	if checkLogs {
		message = readLogTail(s.GetLogPath())
	}
	switch {
	case message == "":
		return runtimeMessage
	case runtimeMessage == "":
		return message
	}
	return runtimeMessage + ": " + message
}

// readTerminationMessageFile reads the end of the file mounted at the
// container's terminationMessagePath; checkLogs says to read the log
// instead (fallback set, and the file is missing or empty).
func readTerminationMessageFile(mounts []*runtimeapi.Mount, path string, fallback bool) (message string, checkLogs bool) {
	if path == "" {
		return "", fallback
	}
	for _, mount := range mounts {
		if mount.GetContainerPath() != path {
			continue
		}
		data, err := readTail(mount.GetHostPath(), maxTerminationMessageLength)
		if errors.Is(err, os.ErrNotExist) {
			return "", fallback
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", mount.GetHostPath(), err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// readLogTail is the end of a container's log as its output: the messages
// of its last lines (in the CRI log format), at most
// maxTerminationMessageLogLength bytes of them.
func readLogTail(path string) string {
	if path == "" {
		return ""
	}
	data, err := readTail(path, maxTerminationMessageLogReadLength)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	if len(data) == maxTerminationMessageLogReadLength {
		// Cut in the middle of a line: drop what is left of it.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) > maxTerminationMessageLogLines {
		lines = lines[len(lines)-maxTerminationMessageLogLines:]
	}
	var out []byte
	for _, line := range lines {
		out = append(out, criLogContent(line)...)
	}
	if len(out) > maxTerminationMessageLogLength {
		out = out[len(out)-maxTerminationMessageLogLength:]
	}
	return string(out)
}

// criLogContent is the output carried by one line of a CRI log file,
// "<time> <stream> <tag> <content>": the content, with its line break
// unless the tag marks a partial line (P). A line not in that format is
// taken as it is.
func criLogContent(line []byte) []byte {
	fields := bytes.SplitN(line, []byte(" "), 4)
	if len(fields) < 3 {
		return append(line, '\n')
	}
	var content []byte
	if len(fields) == 4 {
		content = fields[3]
	}
	tag := fields[2]
	if bytes.Equal(tag, []byte("P")) || bytes.HasPrefix(tag, []byte("P:")) {
		return content
	}
	return append(append([]byte{}, content...), '\n')
}

// readTail reads at most the last max bytes of a file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if size := info.Size(); size > max {
		if _, err := f.Seek(size-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}
