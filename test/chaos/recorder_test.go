package chaos

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/nodelet/nodelet/test/chaos/invariants"
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

// watch records the pods of ns from resourceVersion on until ctx ends. A
// retrying watch rides out an API server stopped for a while: it resumes
// from the last version it saw, so no state is missed.
func (r *recorder) watch(ctx context.Context, client kubernetes.Interface, ns, resourceVersion string) error {
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods(ns).Watch(ctx, options)
		},
	})
	if err != nil {
		return err
	}
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-watcher.ResultChan():
			if !ok {
				return errors.New("the pods' watch ended")
			}
			if e.Type == watch.Error {
				return apierrors.FromObject(e.Object)
			}
			pod, ok := e.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			kind := invariants.PodSeen
			if e.Type == watch.Deleted {
				kind = invariants.PodGone
			}
			r.add(invariants.Event{At: time.Now(), Kind: kind, Pod: pod})
		}
	}
}
