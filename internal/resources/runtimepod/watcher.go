package runtimepod

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/nodeclient"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// DefaultPeriod is how often the Watcher looks: a stat per hierarchy and
// a read of one /proc file, a connection to the socket only when the
// listener seen last is gone. Until it looks, the cgroups.Manager's fence
// (Options.Within) already keeps the old pod's cgroup from being made
// again.
const DefaultPeriod = 2 * time.Second

// eventTimeout bounds the writes of the Node's event, tried every second
// until one is taken: nodelet waits for it before it stops, and the API
// server may be out of reach for a moment.
const eventTimeout = 30 * time.Second

// Options configure a Watcher.
type Options struct {
	// Cgroup is the runtime's pod cgroup nodelet's pods go in, found at
	// start, and PID the process that listened on Socket then.
	Cgroup string
	PID    int
	Socket string
	// Hierarchies are the host's cgroup hierarchies; Cgroup is watched in
	// those it is in when the Watcher is made.
	Hierarchies []cgroups.Hierarchy
	// Period between looks; zero for DefaultPeriod.
	Period time.Duration
	// NodeName is the Node the event is about.
	NodeName string
	// Events is where the event is written, directly rather than through
	// a recorder: nodelet stops right after, and a recorder's queue would
	// go with it.
	Events typedcorev1.EventsGetter
	// Seal stops pod cgroups from being handed out
	// (cgroups.Manager.Seal), so that no sandbox is made from then on.
	Seal  func(error)
	Clock clock.WithTicker
	Log   logr.Logger
}

// Watcher looks at the runtime's pod every Period and, once Decide finds
// it replaced, acts: see Start.
type Watcher struct {
	opts Options
	// dirs are Cgroup's folders, in each hierarchy it was in at start.
	dirs []string
	// pid is the socket's listener seen last, 0 when none is known.
	pid int
	// observe is what the Watcher looks at: w.look, or a test's.
	observe func(ctx context.Context) Observation
}

// New makes a Watcher of the runtime's pod cgroup opts.Cgroup, which must
// be in at least one of opts.Hierarchies.
func New(opts Options) (*Watcher, error) {
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	w := &Watcher{opts: opts, pid: opts.PID}
	for _, h := range opts.Hierarchies {
		dir := filepath.Join(h.MountPoint, filepath.FromSlash(opts.Cgroup))
		if _, err := os.Stat(dir); err == nil {
			w.dirs = append(w.dirs, dir)
		}
	}
	if len(w.dirs) == 0 {
		return nil, fmt.Errorf("the runtime's pod cgroup %s is in no cgroup hierarchy", opts.Cgroup)
	}
	w.observe = w.look
	return w, nil
}

// Start looks at the runtime's pod until ctx ends (nil), or until it was
// replaced: it then seals the pods' cgroups, logs, writes a Warning event
// RuntimePodReplaced on the Node, and returns an error wrapping
// ErrReplaced, which stops nodelet. Its container, started again by the
// host's kubelet, finds the new runtime pod's cgroup at start, and the
// pods there, whose containers died with the old pod, are started again
// in it. Stopping, rather than taking the new cgroup in this process, keeps
// one rule for where the cgroups are: read once, at start, with
// everything built on it (the Node's capacity, the eviction signals'
// cgroups, the PID limit) read with it.
func (w *Watcher) Start(ctx context.Context) error {
	ticker := w.opts.Clock.NewTicker(w.opts.Period)
	defer ticker.Stop()
	for {
		if v := Decide(w.opts.Cgroup, w.observe(ctx)); v.Replaced {
			return w.replaced(v)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// replaced acts on a verdict of Replaced.
func (w *Watcher) replaced(v Verdict) error {
	err := fmt.Errorf("%w: %s", ErrReplaced, v.Message)
	w.opts.Seal(err)
	w.opts.Log.Info("Found the container runtime's pod replaced; stopping to start again in the new one", "cgroup", w.opts.Cgroup, "reason", ReasonRuntimePodReplaced, "message", v.Message)
	// Not ctx: it may be ending, and the event is why nodelet restarts.
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	var eventErr error
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		eventErr = w.writeEvent(ctx, v.Message)
		return eventErr == nil, nil
	})
	if eventErr != nil {
		w.opts.Log.Error(eventErr, "Could not write the Node's event", "reason", ReasonRuntimePodReplaced)
	}
	return err
}

// writeEvent writes the Warning event on the Node, as the node's event
// recorder would make it.
func (w *Watcher) writeEvent(ctx context.Context, message string) error {
	now := metav1.NewTime(w.opts.Clock.Now())
	ref := node.Ref(w.opts.NodeName)
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: metav1.NamespaceDefault},
		InvolvedObject: *ref,
		Reason:         ReasonRuntimePodReplaced,
		Message:        message,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: nodeclient.EventComponent, Host: w.opts.NodeName},
	}
	_, err := w.opts.Events.Events(metav1.NamespaceDefault).Create(ctx, event, metav1.CreateOptions{})
	return err
}

// look observes the runtime's pod: whether its cgroup is still in every
// hierarchy it was in, and the pod cgroup of the socket's listener. The
// listener seen last is read again while it lives in the same pod; the
// socket is asked only once it is gone (the runtime restarted, or its
// pod replaced), so that the runtime is not dialled every period.
func (w *Watcher) look(ctx context.Context) Observation {
	var o Observation
	for _, dir := range w.dirs {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			o.CgroupGone = true
		}
	}
	if w.pid > 0 {
		if pod, err := PodCgroupOf(w.pid); err == nil && pod == w.opts.Cgroup {
			o.ListenerCgroup = pod
			return o
		}
	}
	w.pid = 0
	pid, err := ListenerPID(ctx, w.opts.Socket)
	if err != nil {
		return o
	}
	pod, err := PodCgroupOf(pid)
	if err != nil {
		return o
	}
	w.pid, o.ListenerCgroup = pid, pod
	return o
}
