package chaos

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/test/chaos/invariants"
	"github.com/nodelet/nodelet/test/e2e"
)

// recorder keeps the run's trace: every state a watch sees of the churn's
// pods, and what the driver does to the node, in the order it happens.
type recorder struct {
	mu     sync.Mutex
	events []invariants.Event
}

func (r *recorder) add(e invariants.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// mark records a driver's event (a fault, the faults' end, the end).
func (r *recorder) mark(kind invariants.Kind, note string) {
	r.add(invariants.Event{At: time.Now(), Kind: kind, Note: note})
}

func (r *recorder) trace() []invariants.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]invariants.Event(nil), r.events...)
}

// watch records the pods of ns from resourceVersion on until ctx ends,
// through an API server stopped for a while (e2e.WatchPods).
func (r *recorder) watch(ctx context.Context, client kubernetes.Interface, ns, resourceVersion string) error {
	return e2e.WatchPods(ctx, client, ns, resourceVersion, func(change watch.EventType, pod *corev1.Pod) {
		kind := invariants.PodSeen
		if change == watch.Deleted {
			kind = invariants.PodGone
		}
		r.add(invariants.Event{At: time.Now(), Kind: kind, Pod: pod})
	})
}
