package node

import (
	"os"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// observeRuntimeRevision reads the runtime's record of its revision, when
// a revision is wanted.
func (r *NodeStatusReporter) observeRuntimeRevision() {
	if r.opts.RuntimeRevision == "" {
		return
	}
	running, err := os.ReadFile(r.opts.RuntimeRevisionFile)
	r.lastRuntime.revision = runtimeRevision{wanted: r.opts.RuntimeRevision, running: string(running), readErr: err}
}

// recordRuntimeRevision logs and records as a Node event the
// RuntimeOutOfDate condition's transition from before to after, once
// after is written.
func (r *NodeStatusReporter) recordRuntimeRevision(log logr.Logger, before, after corev1.NodeStatus) {
	want := findNodeCondition(&after, NodeRuntimeOutOfDate)
	if want == nil {
		return
	}
	eventType, reason, message, ok := runtimeRevisionEvent(findNodeCondition(&before, NodeRuntimeOutOfDate), *want)
	if !ok {
		return
	}
	log.Info("The container runtime's revision changed", "outOfDate", want.Status, "reason", want.Reason, "message", want.Message)
	if r.opts.Recorder != nil {
		r.opts.Recorder.Event(Ref(r.opts.NodeName), eventType, reason, message)
	}
}
