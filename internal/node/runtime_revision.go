package node

// Whether the container runtime runs what its deployment wants: a
// companion's runtime runs in a pod that an upgrade of the chart does not
// replace (replacing it restarts every pod of the companion), so a new
// runtime image or configuration waits until an operator replaces that
// pod. The chart tells nodelet the revision it wants (--runtime-revision);
// the runtime's pod writes the one it was started with beside its socket.
// Comparing them is pure; reading the file is the reporter's.

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeRuntimeOutOfDate is the Node condition that says the container
// runtime runs another revision than its deployment wants.
const NodeRuntimeOutOfDate corev1.NodeConditionType = "RuntimeOutOfDate"

// RuntimeOutOfDate's reasons, and the Node events of its transitions.
const (
	ReasonRuntimeRevisionDiffers = "RuntimeRevisionDiffers"
	ReasonRuntimeRevisionUnknown = "RuntimeRevisionUnknown"
	ReasonRuntimeUpToDate        = "RuntimeUpToDate"
	// EventRuntimeOutOfDate is the Warning event of the condition turning
	// True; ReasonRuntimeUpToDate that of it turning False again.
	EventRuntimeOutOfDate = "RuntimeOutOfDate"
)

// RuntimeRevisionFile is the file, beside the runtime's socket, in which
// a runtime started by nodelet's chart records its revision.
const RuntimeRevisionFile = "runtime-revision"

// runtimeRevision is what the runtime's deployment wants and what the
// runtime was started with. A revision is key=value pairs, comma
// separated (the chart's: image, config, pod); values are compared key by
// key, so a deployment may add keys nodelet does not know.
type runtimeRevision struct {
	// wanted is --runtime-revision; empty turns the condition off.
	wanted string
	// running is the runtime's record, or readErr why it could not be read.
	running string
	readErr error
}

// parseRuntimeRevision reads a revision's pairs; keys keep their order.
func parseRuntimeRevision(s string) ([]string, map[string]string, error) {
	var keys []string
	values := map[string]string{}
	for _, pair := range strings.Split(strings.TrimSpace(s), ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || key == "" {
			return nil, nil, fmt.Errorf("revision %q: %q is not key=value", s, pair)
		}
		if _, seen := values[key]; seen {
			return nil, nil, fmt.Errorf("revision %q: key %q twice", s, key)
		}
		keys = append(keys, key)
		values[key] = value
	}
	return keys, values, nil
}

// ValidateRuntimeRevision checks --runtime-revision: empty, or key=value
// pairs.
func ValidateRuntimeRevision(s string) error {
	if s == "" {
		return nil
	}
	_, _, err := parseRuntimeRevision(s)
	return err
}

// runtimeRevisionCondition is the RuntimeOutOfDate condition for rev;
// false when rev says nothing (no revision wanted).
func runtimeRevisionCondition(rev runtimeRevision) (corev1.NodeCondition, bool) {
	if rev.wanted == "" {
		return corev1.NodeCondition{}, false
	}
	cond := corev1.NodeCondition{Type: NodeRuntimeOutOfDate, Status: corev1.ConditionTrue}
	const replace = "drain the node, then delete the runtime's pod to have it started again"
	switch {
	case errors.Is(rev.readErr, fs.ErrNotExist):
		cond.Reason = ReasonRuntimeRevisionUnknown
		cond.Message = "the runtime's pod recorded no revision (an older chart started it): " + replace
		return cond, true
	case rev.readErr != nil:
		cond.Reason = ReasonRuntimeRevisionUnknown
		cond.Message = fmt.Sprintf("reading the runtime's revision: %v", rev.readErr)
		return cond, true
	}
	diffs, err := runtimeRevisionDiffs(rev.wanted, rev.running)
	if err != nil {
		cond.Reason = ReasonRuntimeRevisionUnknown
		cond.Message = fmt.Sprintf("the runtime's pod recorded a revision nodelet cannot read (%v): %s", err, replace)
		return cond, true
	}
	if len(diffs) == 0 {
		cond.Status = corev1.ConditionFalse
		cond.Reason = ReasonRuntimeUpToDate
		cond.Message = "the runtime runs the revision its deployment wants"
		return cond, true
	}
	cond.Reason = ReasonRuntimeRevisionDiffers
	cond.Message = "the runtime's pod was started with " + strings.Join(diffs, ", ") + ": " + replace
	return cond, true
}

// runtimeRevisionDiffs says, key by key in the wanted revision's order
// (then the running one's), how the running revision differs: an image
// by its two references, anything else by its name.
func runtimeRevisionDiffs(wanted, running string) ([]string, error) {
	wantedKeys, want, err := parseRuntimeRevision(wanted)
	if err != nil {
		return nil, err
	}
	runningKeys, have, err := parseRuntimeRevision(running)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, key := range wantedKeys {
		switch value, ok := have[key]; {
		case ok && value == want[key]:
		case key == "image":
			from := value
			if !ok {
				from = "an unrecorded one"
			}
			diffs = append(diffs, fmt.Sprintf("image %s where %s is wanted", from, want[key]))
		case key == "config":
			diffs = append(diffs, "another configuration")
		case key == "pod":
			diffs = append(diffs, "other pod settings")
		default:
			diffs = append(diffs, "another "+key)
		}
	}
	for _, key := range runningKeys {
		if _, ok := want[key]; !ok {
			diffs = append(diffs, "a "+key+" no longer wanted")
		}
	}
	return diffs, nil
}

// runtimeRevisionEvent is the Node event of the condition's transition
// from current (the Node's, nil when it has none) to want: a Warning as
// it turns True, a Normal event as it turns False from True; none when
// the status stays.
func runtimeRevisionEvent(current *corev1.NodeCondition, want corev1.NodeCondition) (eventType, reason, message string, ok bool) {
	was := corev1.ConditionUnknown
	if current != nil {
		was = current.Status
	}
	switch {
	case want.Status == was:
		return "", "", "", false
	case want.Status == corev1.ConditionTrue:
		return corev1.EventTypeWarning, EventRuntimeOutOfDate, want.Message, true
	case was == corev1.ConditionTrue:
		return corev1.EventTypeNormal, ReasonRuntimeUpToDate, want.Message, true
	}
	return "", "", "", false
}

// findNodeCondition is the Node's condition of that type, nil when none.
func findNodeCondition(status *corev1.NodeStatus, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}
