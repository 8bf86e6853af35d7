// Package pleg is the pod lifecycle event generator: it relists the
// container runtime (and follows its container events where it has them),
// keeps the pod Cache the reconciler reads, and sends an event for every pod
// whose runtime state changed. The diff itself (events.go) is pure.
package pleg

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// Runtime is what the PLEG reads from the runtime.
type Runtime interface {
	ListPods(ctx context.Context) (map[types.UID]*kubecontainer.PodStatus, error)
	GetPodStatus(ctx context.Context, uid types.UID) (*kubecontainer.PodStatus, error)
	WatchContainerEvents(ctx context.Context, onEvent func(kubecontainer.PodIdentity)) error
}

// PLEG relists the runtime every period, diffs the result with the previous
// relist and sends a GenericEvent for every pod whose runtime state changed,
// but to the pods whose reconcile already read that state and found nothing
// left to do (Cache.Settle); it also keeps the pod cache the reconciles
// read: the record of a changed pod is read at once when the cache has
// none, and otherwise outdated for the reconcile to read (leaveRead).
// Where the runtime streams container
// events, each event does this for its pod at once and relisting slows to
// a safety net; where it answers Unimplemented (containerd 1.6),
// relisting carries on alone.
type PLEG struct {
	runtime Runtime
	cache   *Cache
	events  chan event.GenericEvent
	period  time.Duration
	clock   clock.WithTicker
	log     logr.Logger

	// evented is true while the runtime's container events flow.
	evented atomic.Bool

	mu         sync.Mutex
	lastRelist time.Time
	lastResync time.Time
	previous   map[types.UID]*kubecontainer.PodStatus
}

const (
	// relistThreshold is how long without a successful relist before the
	// PLEG reports itself unhealthy.
	relistThreshold = 3 * time.Minute
	// resyncPeriod is how often every runtime pod gets an event, changed or
	// not, making up for events dropped on a full channel.
	resyncPeriod = time.Minute
	// eventedRelistPeriod is the relist period while container events flow.
	eventedRelistPeriod = 10 * time.Second
	// eventsRetryPeriod is how soon a broken event stream is opened again.
	eventsRetryPeriod = 5 * time.Second
)

// New returns a PLEG sending into events. period defaults to 1s.
func New(runtime Runtime, cache *Cache, events chan event.GenericEvent, period time.Duration, clk clock.WithTicker, log logr.Logger) *PLEG {
	if period <= 0 {
		period = time.Second
	}
	now := clk.Now()
	return &PLEG{
		runtime: runtime,
		cache:   cache,
		events:  events,
		period:  period,
		clock:   clk,
		log:     log,
		// Healthy until the first relist is overdue.
		lastRelist: now,
		lastResync: now,
	}
}

// Start relists until ctx ends, and consumes container events where the
// runtime has them. It implements manager.Runnable.
func (p *PLEG) Start(ctx context.Context) error {
	go p.watchEvents(ctx)
	ticker := p.clock.NewTicker(p.period)
	defer ticker.Stop()
	p.Relist(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
		p.mu.Lock()
		now := p.clock.Now()
		due := !p.evented.Load() || now.Sub(p.lastRelist) >= eventedRelistPeriod
		resync := now.Sub(p.lastResync) >= resyncPeriod
		if due && resync {
			p.lastResync = now
		}
		p.mu.Unlock()
		if due {
			p.Relist(ctx, resync)
		}
	}
}

// watchEvents consumes the runtime's container events until ctx ends or
// the runtime says it has none.
func (p *PLEG) watchEvents(ctx context.Context) {
	for {
		err := p.runtime.WatchContainerEvents(ctx, func(id kubecontainer.PodIdentity) {
			p.evented.Store(true)
			p.refresh(ctx, id)
		})
		p.evented.Store(false)
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			p.log.Info("The container runtime streams no container events; relisting alone", "period", p.period)
			return
		}
		p.log.Error(err, "Lost the container runtime's event stream; relisting until it is back")
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(eventsRetryPeriod):
		}
	}
}

// refresh updates the cache for one pod the runtime reported a container
// event for and requeues the pod at once.
func (p *PLEG) refresh(ctx context.Context, id kubecontainer.PodIdentity) {
	timestamp := p.clock.Now()
	if !p.leaveRead(id.UID, nil, timestamp) {
		podStatus, err := p.runtime.GetPodStatus(ctx, id.UID)
		if err != nil {
			p.log.Error(err, "Failed to read pod status from the runtime", "pod", client.ObjectKey{Namespace: id.Namespace, Name: id.Name})
			return
		}
		p.cache.Set(id.UID, podStatus, timestamp)
	}
	p.send(PodLifecycleEvent{ID: id.UID, Namespace: id.Namespace, Name: id.Name, Type: ContainerChanged})
}

// leaveRead leaves the read of a changed pod to its reconcile when the
// cache holds a record naming the pod: a record that still holds the listed
// objects in their states stays (the reconcile that made the change read
// the pod right after); any other no longer serves reconciles that start
// after t. The pod's next reconcile then reads it, unless the sync of it
// under way, whose action the change most often is, reads it first when
// done: reading it here as well would read it twice. listed is nil when
// the change is known only by an event. A pod the cache has no named record
// of (found at start, or made by someone else) is read by the PLEG: its
// record names it to the reconciles of the Pods under its name.
func (p *PLEG) leaveRead(uid types.UID, listed *kubecontainer.PodStatus, t time.Time) bool {
	cached, ok := p.cache.Latest(uid)
	if !ok || cached.Name == "" {
		return false
	}
	if listed == nil || !sameObjects(cached, listed) {
		p.cache.Outdate(uid, t)
	}
	return true
}

// NeedLeaderElection is false: every node runs its own PLEG.
func (p *PLEG) NeedLeaderElection() bool { return false }

// Healthy reports an error when relisting has stalled.
func (p *PLEG) Healthy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clock.Since(p.lastRelist) < relistThreshold
}

// Relist reads the runtime once, brings the cache up to date and emits
// events. With resync, every known pod gets an event whether or not it
// changed.
func (p *PLEG) Relist(ctx context.Context, resync bool) {
	// The timestamp is taken before the list calls: the cache then claims
	// nothing newer than what the runtime held when they began.
	timestamp := p.clock.Now()
	current, err := p.runtime.ListPods(ctx)
	if err != nil {
		p.log.Error(err, "Failed to relist the container runtime")
		return
	}
	// A change the list found happened before it returned: a record read
	// after that reflects it, one read before may not.
	listed := p.clock.Now()
	kubeletmetrics.PLEGRelistDuration.Observe(listed.Sub(timestamp).Seconds())
	kubeletmetrics.SetRunning(runningCounts(current))

	p.mu.Lock()
	previous := p.previous
	if !p.lastRelist.IsZero() {
		kubeletmetrics.PLEGRelistInterval.Observe(timestamp.Sub(p.lastRelist).Seconds())
	}
	p.mu.Unlock()

	events := generateEvents(previous, current)
	changed := map[types.UID]PodLifecycleEvent{}
	for _, e := range events {
		changed[e.ID] = e
	}
	for uid, e := range changed {
		if _, ok := current[uid]; !ok {
			p.cache.Delete(uid, timestamp)
			continue
		}
		if p.leaveRead(uid, current[uid], listed) {
			if p.cache.settledOn(uid, current[uid]) {
				// The reconcile that read the pod so found nothing to
				// do: waking it again would find nothing either.
				delete(changed, uid)
			}
			continue
		}
		podStatus, err := p.runtime.GetPodStatus(ctx, uid)
		if err != nil {
			// Leave the pod's record as it was; the next relist sees the
			// change again because previous is not advanced for it.
			p.log.Error(err, "Failed to read pod status from the runtime", "pod", eventKey(e))
			if old, ok := previous[uid]; ok {
				current[uid] = old
			} else {
				delete(current, uid)
			}
			delete(changed, uid)
			continue
		}
		p.cache.Set(uid, podStatus, timestamp)
	}
	p.cache.UpdateTime(timestamp)

	p.mu.Lock()
	p.previous = current
	p.lastRelist = timestamp
	p.mu.Unlock()

	if resync {
		for uid, pod := range current {
			if _, ok := changed[uid]; !ok {
				changed[uid] = PodLifecycleEvent{ID: uid, Namespace: pod.Namespace, Name: pod.Name, Type: PodSync}
			}
		}
	}
	for _, e := range changed {
		p.send(e)
	}
}

// send hands a pod to the reconciler without ever blocking the relist.
func (p *PLEG) send(e PodLifecycleEvent) {
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name, UID: e.ID}}
	select {
	case p.events <- event.GenericEvent{Object: obj}:
		p.log.V(2).Info("Sent pod lifecycle event", "pod", eventKey(e), "event", e.Type, "data", e.Data)
	default:
		kubeletmetrics.PLEGDiscardEvents.Inc()
	}
}
