package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/nodelet/nodelet/internal/pleg"
)

// PodQueue takes the pods to reconcile for what nodelet notices outside
// the API server: the PLEG's runtime changes, a probe's new result, a pod's
// broken network. It is made before the parts that feed it and the
// reconciler that drains it, so that none of them holds another.
type PodQueue struct {
	events chan event.GenericEvent
	cache  *pleg.Cache
	clock  clock.Clock
}

// NewPodQueue returns a queue over the PLEG's pod cache.
func NewPodQueue(cache *pleg.Cache, clk clock.Clock) *PodQueue {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PodQueue{events: make(chan event.GenericEvent, 1024), cache: cache, clock: clk}
}

// Events is the channel the PLEG sends into; the reconciler drains it.
func (q *PodQueue) Events() chan event.GenericEvent { return q.events }

// Enqueue has a pod reconciled again soon. It waits while the queue's
// channel is full, until ctx ends.
func (q *PodQueue) Enqueue(ctx context.Context, namespace, name string, uid types.UID) {
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}
	select {
	case q.events <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// Resync has a pod reconciled from a fresh read of the runtime, as when its
// sandbox's network was found broken.
func (q *PodQueue) Resync(namespace, name string, uid types.UID) {
	q.cache.Invalidate(uid, q.clock.Now())
	// A controller that takes no event for this long is stopping.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q.Enqueue(ctx, namespace, name, uid)
}
