// Package invariants checks a chaos run's promises over its trace: the
// pods' states in the order a watch saw them, interleaved with what the
// driver did to the node (faults, when they stopped). Check is a pure
// function of the trace and the bounds, so a recorded trace can be checked
// again, and a test can show that a broken promise is caught.
package invariants

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kind is what an event of the trace records.
type Kind string

const (
	// PodSeen is a pod's state from a watch (added or modified).
	PodSeen Kind = "pod"
	// PodGone is a pod's last state, when the watch saw it deleted.
	PodGone Kind = "gone"
	// Fault is a fault the driver injected; Note says which.
	Fault Kind = "fault"
	// FaultsStopped is when the last fault ended: from here on every
	// pod must converge.
	FaultsStopped Kind = "faults-stopped"
	// End is when the trace stopped.
	End Kind = "end"
)

// ConvergesTo is the annotation by which the driver tells what state a
// pod settles in once nothing fails (the state the kubelet would give
// it): Ready (running and ready), Running (phase Running, which a
// crash-looping pod keeps), Succeeded or Failed.
const ConvergesTo = "chaos.nodelet.io/converges-to"

// Event is one observation.
type Event struct {
	At   time.Time   `json:"at"`
	Kind Kind        `json:"kind"`
	Note string      `json:"note,omitempty"`
	Pod  *corev1.Pod `json:"pod,omitempty"`
}

// String sums the event up in one line.
func (e Event) String() string {
	at := e.At.UTC().Format("15:04:05.000")
	switch e.Kind {
	case PodSeen, PodGone:
		return fmt.Sprintf("%s %s %s", at, e.Kind, Describe(e.Pod))
	default:
		return strings.TrimSpace(fmt.Sprintf("%s %s %s", at, e.Kind, e.Note))
	}
}

// WriteTrace writes events as JSON lines, the format ReadTrace reads.
func WriteTrace(w io.Writer, events []Event) error {
	encoder := json.NewEncoder(w)
	for i := range events {
		if err := encoder.Encode(&events[i]); err != nil {
			return fmt.Errorf("writing trace event %d: %w", i, err)
		}
	}
	return nil
}

// ReadTrace reads a trace written by WriteTrace.
func ReadTrace(r io.Reader) ([]Event, error) {
	var events []Event
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; scanner.Scan(); line++ {
		if strings.TrimSpace(scanner.Text()) == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		events = append(events, e)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading the trace: %w", err)
	}
	return events, nil
}

// Describe sums up a pod's state in one line.
func Describe(pod *corev1.Pod) string {
	if pod == nil {
		return "<no pod>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s phase=%s", pod.Namespace, pod.Name, pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		b.WriteString(" terminating")
	}
	if ready(pod) {
		b.WriteString(" ready")
	}
	for _, cs := range containerStatuses(pod) {
		fmt.Fprintf(&b, " [%s restarts=%d %s last=%s]", cs.Name, cs.RestartCount, describeState(cs.State), describeState(cs.LastTerminationState))
	}
	return b.String()
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting(" + s.Waiting.Reason + ")"
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%s, exit %d)", s.Terminated.Reason, s.Terminated.ExitCode)
	default:
		return "none"
	}
}

func containerStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
