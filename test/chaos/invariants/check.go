package invariants

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Bounds are the time limits of the promises.
type Bounds struct {
	// DeletionSlack is how long past its grace period a deleted pod may
	// take to leave the API: stopping its containers, the API calls, and
	// any fault in the way (an API server stopped for a while).
	DeletionSlack time.Duration
	// Converge is how long after FaultsStopped every pod may take to be
	// in the state its ConvergesTo annotation names.
	Converge time.Duration
}

// The rules a violation breaks.
const (
	RuleTerminalPhase       = "terminal phase left"
	RuleRestartCountDown    = "restart count went down"
	RuleTerminatedToRunning = "terminated container running again without a restart"
	RuleRestartedByNodelet  = "container restarted not by its own exit or a probe"
	RuleDeletion            = "deleted pod not gone within its grace period"
	RuleConvergence         = "pod not converged after the faults stopped"
)

// Violation is one broken promise, with the events around it.
type Violation struct {
	At      time.Time
	Pod     string
	Rule    string
	Message string
	// Around are the pod's states just before and after, and the faults
	// injected before (see around), as trace lines.
	Around []string
}

// String is the violation with its Around lines, one under the other: a
// failed run prints each violation whole in one message.
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s: %s", v.At.UTC().Format("15:04:05.000"), v.Pod, v.Rule, v.Message)
	for _, line := range v.Around {
		b.WriteString("\n    " + line)
	}
	return b.String()
}

// Result is what Check found.
type Result struct {
	Violations []Violation
	// Pods is how many pods the trace saw.
	Pods int
	// ConvergedAfter is how long after FaultsStopped the last pod reached
	// its ConvergesTo state (0 when the trace has no FaultsStopped).
	ConvergedAfter time.Duration
}

// A violation is shown with the faults injected in the aroundFaults
// before it, and with the last lastFaults faults before it at least.
const (
	aroundFaults = 30 * time.Second
	lastFaults   = 2
)

// containerTrack is what the previous states said of one container.
type containerTrack struct {
	restarts   int32
	terminated bool
}

// podTrack is one pod's history so far.
type podTrack struct {
	key        string
	events     []int
	last       *corev1.Pod
	terminal   corev1.PodPhase
	containers map[string]containerTrack
	// deadline is when the pod must be gone, once it was seen deleted.
	deadline time.Time
	gone     bool
	// converge is from when the pod must converge (zero: not asked),
	// convergedAt when it did.
	converge, convergedAt time.Time
}

// Check goes through the trace in order and returns every violation of
// the invariants:
//   - a pod in a terminal phase (Succeeded, Failed) never leaves it;
//   - a container's restart count never goes down;
//   - a terminated container does not run again unless its restart
//     count went up;
//   - a container of a pod not being deleted restarts only by its own
//     exit (an exit code other than 137 and 143, which are the signals
//     nodelet stops containers with) or because it has a liveness or
//     startup probe or a postStart hook (whose failure kills it), and
//     never under restartPolicy Never; an instance
//     that never ran (its creation or start failed: no terminated last
//     state) is retried, not restarted, under any restart policy;
//   - a pod seen deleted is gone within its grace period plus
//     DeletionSlack;
//   - after FaultsStopped, every pod not being deleted reaches the state
//     its ConvergesTo annotation names within Converge.
func Check(trace []Event, bounds Bounds) Result {
	c := checker{trace: trace, bounds: bounds, pods: map[string]*podTrack{}}
	for i, e := range trace {
		switch e.Kind {
		case PodSeen, PodGone:
			if e.Pod != nil {
				c.pod(i, e)
			}
		case FaultsStopped:
			c.faultsStopped(e.At)
		case End:
			c.end(i, e.At)
		}
	}
	for n := range c.violations {
		c.violations[n].Around = c.around(c.where[n], c.pods[c.violations[n].Pod])
	}
	return Result{Violations: c.violations, Pods: len(c.order), ConvergedAfter: c.convergedAfter}
}

type checker struct {
	trace          []Event
	bounds         Bounds
	pods           map[string]*podTrack
	order          []string
	violations     []Violation
	where          []int
	stoppedAt      time.Time
	convergedAfter time.Duration
}

// violate records a violation at event i; its Around lines are picked
// once the whole trace is read, so they show what came after too.
func (c *checker) violate(i int, p *podTrack, rule, format string, args ...any) {
	c.violations = append(c.violations, Violation{At: c.trace[i].At, Pod: p.key, Rule: rule, Message: fmt.Sprintf(format, args...)})
	c.where = append(c.where, i)
}

func podKey(pod *corev1.Pod) string {
	return fmt.Sprintf("%s/%s (uid %s)", pod.Namespace, pod.Name, pod.UID)
}

func (c *checker) pod(i int, e Event) {
	pod := e.Pod
	key := podKey(pod)
	p := c.pods[key]
	if p == nil {
		p = &podTrack{key: key, containers: map[string]containerTrack{}}
		c.pods[key] = p
		c.order = append(c.order, key)
		if !c.stoppedAt.IsZero() {
			p.converge = e.At
		}
	}
	p.events = append(p.events, i)

	if p.terminal != "" && pod.Status.Phase != p.terminal {
		c.violate(i, p, RuleTerminalPhase, "phase %s after %s", pod.Status.Phase, p.terminal)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		p.terminal = pod.Status.Phase
	}
	c.containers(i, p, pod)

	if pod.DeletionTimestamp != nil && p.deadline.IsZero() {
		grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		}
		p.deadline = e.At.Add(time.Duration(grace)*time.Second + c.bounds.DeletionSlack)
	}
	if e.Kind == PodGone {
		p.gone = true
		if !p.deadline.IsZero() && e.At.After(p.deadline) {
			c.violate(i, p, RuleDeletion, "gone %s past its deadline (grace period plus %s)", e.At.Sub(p.deadline).Round(time.Millisecond), c.bounds.DeletionSlack)
		}
	}
	if pod.DeletionTimestamp != nil {
		// Deleted: converged or not, it is judged now.
		c.settle(i, p, e.At, pod.Annotations[ConvergesTo], false)
	} else if !p.converge.IsZero() && p.convergedAt.IsZero() && Converged(pod) {
		p.convergedAt = e.At
	}
	p.last = pod
}

// settle judges a pod's convergence when it is deleted or the trace ends:
// it must have reached its state within the bound; a pod deleted before
// the bound passed and before it got there is not judged.
func (c *checker) settle(i int, p *podTrack, at time.Time, want string, end bool) {
	if p.converge.IsZero() {
		return
	}
	switch took := p.convergedAt.Sub(p.converge); {
	case !p.convergedAt.IsZero():
		c.convergedAfter = max(c.convergedAfter, p.convergedAt.Sub(c.stoppedAt))
		if took > c.bounds.Converge {
			c.violate(i, p, RuleConvergence, "%s only %s after the faults stopped (bound %s)", want, took.Round(time.Millisecond), c.bounds.Converge)
		}
	case end || at.Sub(p.converge) > c.bounds.Converge:
		c.violate(i, p, RuleConvergence, "not %s %s after the faults stopped (bound %s)", want, at.Sub(p.converge).Round(time.Millisecond), c.bounds.Converge)
	}
	p.converge = time.Time{}
}

// containers checks the pod's containers against their previous states.
func (c *checker) containers(i int, p *podTrack, pod *corev1.Pod) {
	for _, cs := range containerStatuses(pod) {
		prev, seen := p.containers[cs.Name]
		p.containers[cs.Name] = containerTrack{restarts: cs.RestartCount, terminated: cs.State.Terminated != nil}
		if !seen {
			continue
		}
		switch {
		case cs.RestartCount < prev.restarts:
			c.violate(i, p, RuleRestartCountDown, "%s restartCount %d after %d", cs.Name, cs.RestartCount, prev.restarts)
		case cs.RestartCount == prev.restarts && prev.terminated && cs.State.Running != nil:
			c.violate(i, p, RuleTerminatedToRunning, "%s was terminated and runs again at restartCount %d", cs.Name, cs.RestartCount)
		case cs.RestartCount > prev.restarts && pod.DeletionTimestamp == nil:
			if why := nodeletRestart(pod, cs); why != "" {
				c.violate(i, p, RuleRestartedByNodelet, "%s restartCount %d after %d: %s", cs.Name, cs.RestartCount, prev.restarts, why)
			}
		}
	}
}

// nodeletRestart says why a restart of cs was not the container's own
// doing, or "" when it was.
func nodeletRestart(pod *corev1.Pod, cs corev1.ContainerStatus) string {
	spec := containerSpec(pod, cs.Name)
	if spec == nil {
		return "not in the pod's spec"
	}
	// An instance that never ran (created, its start failed or its
	// creation's reply was lost: its last state is not terminated) is
	// retried, under any restart policy, as the kubelet does
	// (ShouldContainerBeRestarted: a container in the created state is
	// always started anew).
	last := cs.LastTerminationState.Terminated
	if last == nil {
		return ""
	}
	sidecar := spec.RestartPolicy != nil && *spec.RestartPolicy == corev1.ContainerRestartPolicyAlways
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever && !sidecar {
		return "under restartPolicy Never"
	}
	// A failed liveness or startup probe kills the container, and so does
	// a failed postStart hook (the kubelet's FailedPostStartHook), which
	// CRI faults make fail as surely as the hook's own command.
	if spec.LivenessProbe != nil || spec.StartupProbe != nil || (spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil) {
		return ""
	}
	switch {
	case last.Reason == "ContainerStatusUnknown":
		return "its last instance was lost (ContainerStatusUnknown)"
	case last.ExitCode == 137 || last.ExitCode == 143:
		return fmt.Sprintf("its last instance was killed (exit %d, %s) and it has no probe or postStart hook that could have", last.ExitCode, last.Reason)
	}
	return ""
}

func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// EvictedReason is the kubelet's reason for a pod it evicted (or refused
// under a node pressure): the pod is Failed for good.
const EvictedReason = "Evicted"

// Converged tells whether the pod is in the state its ConvergesTo
// annotation names; a pod without it is taken as converged. A pod
// evicted (the node's file system filled up under it) has converged to
// what the kubelet gives it then, whatever it would have become: Failed
// with reason Evicted, for good.
func Converged(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == EvictedReason {
		return true
	}
	switch pod.Annotations[ConvergesTo] {
	case "":
		return true
	case "Ready":
		return pod.Status.Phase == corev1.PodRunning && ready(pod)
	default:
		return string(pod.Status.Phase) == pod.Annotations[ConvergesTo]
	}
}

// faultsStopped starts the convergence clock of every pod still there.
func (c *checker) faultsStopped(at time.Time) {
	c.stoppedAt = at
	for _, key := range c.order {
		p := c.pods[key]
		if p.gone || p.last.DeletionTimestamp != nil {
			continue
		}
		p.converge, p.convergedAt = at, time.Time{}
		if Converged(p.last) {
			p.convergedAt = at
		}
	}
}

// end checks what must have happened by the end of the trace.
func (c *checker) end(i int, at time.Time) {
	for _, key := range c.order {
		p := c.pods[key]
		if !p.gone && !p.deadline.IsZero() && at.After(p.deadline) {
			c.violate(i, p, RuleDeletion, "still there at the end, %s past its deadline (grace period plus %s)", at.Sub(p.deadline).Round(time.Millisecond), c.bounds.DeletionSlack)
		}
		c.settle(i, p, at, p.last.Annotations[ConvergesTo], true)
	}
}

// around picks the trace lines shown with a violation at event i of pod
// p: its three states before, two after, and the driver's marks before
// it: every fault in the aroundFaults before, the last lastFaults faults
// however long before (a pod that never converged is judged at the end,
// long after the last fault) and when the faults stopped.
func (c *checker) around(i int, p *podTrack) []string {
	var picked []int
	at := slices.Index(p.events, i)
	if at < 0 {
		at = len(p.events)
	}
	picked = append(picked, p.events[max(0, at-3):at]...)
	if at < len(p.events) {
		picked = append(picked, p.events[at:min(len(p.events), at+3)]...)
	}
	var faults []int
	for j := range c.trace[:i] {
		switch e := c.trace[j]; e.Kind {
		case Fault:
			faults = append(faults, j)
			if !e.At.Before(c.trace[i].At.Add(-aroundFaults)) {
				picked = append(picked, j)
			}
		case FaultsStopped:
			picked = append(picked, j)
		}
	}
	picked = append(picked, faults[max(0, len(faults)-lastFaults):]...)
	slices.Sort(picked)
	picked = slices.Compact(picked)
	lines := make([]string, 0, len(picked))
	for _, j := range picked {
		marker := "  "
		if j == i {
			marker = "> "
		}
		lines = append(lines, marker+c.trace[j].String())
	}
	return lines
}
