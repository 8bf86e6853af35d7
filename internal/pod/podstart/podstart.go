// Package podstart explains a pod's start: when each of its steps ended,
// counted from the pod's creation, and which step took longest. The
// kubelet measures a start as one number (pod_start_sli_duration); this
// says where the time went.
//
// Marks are made where the work is done (the reconciler, the runtime
// manager) through the context; the breakdown is a pure function of them.
package podstart

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Step is one step of a pod's start. A step that is done for each
// container is marked once per container.
type Step string

// The steps of a pod's start, in the order they happen for one pod.
const (
	// StepSeen: nodelet first worked on the pod.
	StepSeen Step = "seen"
	// StepAdmitted: the node's admission let it in.
	StepAdmitted Step = "admitted"
	// StepVolumesReady: its volumes, service account token included, are
	// in place.
	StepVolumesReady Step = "volumes_ready"
	// StepEnvReady: what its containers start with (ConfigMaps and
	// Secrets of env, Services, pull secrets) was read.
	StepEnvReady Step = "env_ready"
	// StepSandboxTurn: its sandbox's turn came among the sandboxes
	// being made at once (--parallel-sandbox-starts).
	StepSandboxTurn Step = "sandbox_turn"
	// StepSandboxCreated: the runtime made its sandbox. In the runtime
	// network mode this includes setting up its network, which the runtime
	// does inside RunPodSandbox.
	StepSandboxCreated Step = "sandbox_created"
	// StepImageReady: a container's image was pulled or found present.
	StepImageReady Step = "image_ready"
	// StepContainerCreated and StepContainerStarted: a container's CRI
	// CreateContainer and StartContainer returned.
	StepContainerCreated Step = "container_created"
	StepContainerStarted Step = "container_started"
	// StepReady: nodelet found every container ready (readiness probes
	// passed) and the pod Ready.
	StepReady Step = "ready"
	// StepStatusWritten: the status saying Ready reached the API server.
	StepStatusWritten Step = "status_written"
)

// Mark is the moment one step ended, for one container if the step is a
// container's.
type Mark struct {
	Step      Step
	Container string
	At        time.Time
}

// Name is the step's name, with the container's after a slash.
func (m Mark) Name() string {
	if m.Container == "" {
		return string(m.Step)
	}
	return string(m.Step) + "/" + m.Container
}

// Trace is the marks of one pod's start.
type Trace struct {
	// Created is the pod's creation, where the start is counted from. The
	// API server gives it to the second, so the first step (seen) carries
	// up to a second of that rounding.
	Created time.Time
	marks   []Mark
}

// Mark records that step ended at at; only the first mark of a step (of a
// container) counts, since a retried step is the same step taking longer.
func (t *Trace) Mark(step Step, container string, at time.Time) {
	for _, m := range t.marks {
		if m.Step == step && m.Container == container {
			return
		}
	}
	t.marks = append(t.marks, Mark{Step: step, Container: container, At: at})
}

// Has reports whether step was marked (for any container).
func (t *Trace) Has(step Step) bool {
	for _, m := range t.marks {
		if m.Step == step {
			return true
		}
	}
	return false
}

// Phase is one step of a breakdown.
type Phase struct {
	Mark
	// Since is the time from the pod's creation to the step's end.
	Since time.Duration
	// Took is the time from the end of the step before to this one's.
	Took time.Duration
}

// Breakdown is a start explained: its steps in the order they ended, each
// with how long it took after the one before, so the steps add up to the
// whole start.
type Breakdown struct {
	Phases []Phase
	// Total is the time from creation to the last step.
	Total time.Duration
}

// Breakdown orders the trace's marks in time and says how long each took.
// A mark before the creation (the creation is rounded down to the second,
// so this only happens with clocks apart) counts as at the creation.
func (t *Trace) Breakdown() Breakdown {
	marks := append([]Mark(nil), t.marks...)
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].At.Before(marks[j].At) })
	var b Breakdown
	previous := time.Duration(0)
	for _, m := range marks {
		since := max(m.At.Sub(t.Created), previous)
		b.Phases = append(b.Phases, Phase{Mark: m, Since: since, Took: since - previous})
		previous = since
	}
	b.Total = previous
	return b
}

// Slowest is the step that took longest; false for an empty breakdown.
func (b Breakdown) Slowest() (Phase, bool) {
	var slowest Phase
	found := false
	for _, p := range b.Phases {
		if !found || p.Took > slowest.Took {
			slowest, found = p, true
		}
	}
	return slowest, found
}

// String lists the steps as name=time-after-the-step-before, in order.
func (b Breakdown) String() string {
	parts := make([]string, 0, len(b.Phases))
	for _, p := range b.Phases {
		parts = append(parts, fmt.Sprintf("%s=%s", p.Name(), p.Took.Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

// Marker records a step of the pod a context is about.
type Marker func(step Step, container string)

type markerKey struct{}

// WithMarker gives ctx the marker of the pod it works on.
func WithMarker(ctx context.Context, marker Marker) context.Context {
	return context.WithValue(ctx, markerKey{}, marker)
}

// MarkStep records that step ended for the pod ctx works on, when its start
// is being traced; it does nothing otherwise.
func MarkStep(ctx context.Context, step Step, container string) {
	if marker, ok := ctx.Value(markerKey{}).(Marker); ok && marker != nil {
		marker(step, container)
	}
}
