package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// tracker watches the bench's namespace and notes, on the bench's own
// clock, when each pod was first seen Running and Ready and when it was
// seen gone. creationTimestamp has only one-second precision, so every
// latency is measured from the moment the bench sent the request to the
// moment its watch delivered the change.
type tracker struct {
	mu    sync.Mutex
	ready map[string]time.Time
	gone  map[string]time.Time
	// failed notes pods that ended (Failed or Succeeded) instead of
	// running: a broken workload, not a slow one.
	failed map[string]string
	// changed is closed and replaced on every change, waking the waiters.
	changed chan struct{}
}

func newTracker() *tracker {
	return &tracker{
		ready:   map[string]time.Time{},
		gone:    map[string]time.Time{},
		failed:  map[string]string{},
		changed: make(chan struct{}),
	}
}

// run watches the namespace's pods until ctx ends, starting from a list so
// no event is missed, and surviving the watch's expiry.
func (t *tracker) run(ctx context.Context, client kubernetes.Interface, namespace string) error {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods in %s: %w", namespace, err)
	}
	for i := range list.Items {
		t.observe(watch.Modified, &list.Items[i], time.Now())
	}
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods(namespace).Watch(ctx, options)
		},
	})
	if err != nil {
		return fmt.Errorf("watching pods in %s: %w", namespace, err)
	}
	go func() {
		defer watcher.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case event, ok := <-watcher.ResultChan():
				if !ok {
					return
				}
				if pod, ok := event.Object.(*corev1.Pod); ok {
					t.observe(event.Type, pod, time.Now())
				}
			}
		}
	}()
	return nil
}

func (t *tracker) observe(eventType watch.EventType, pod *corev1.Pod, seen time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name := pod.Name
	switch {
	case eventType == watch.Deleted:
		if _, ok := t.gone[name]; !ok {
			t.gone[name] = seen
		}
	case runningAndReady(pod):
		if _, ok := t.ready[name]; !ok {
			t.ready[name] = seen
		}
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		t.failed[name] = fmt.Sprintf("phase %s: %s %s", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	default:
		return
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// forget drops what is known of the named pods, so their names can be used
// again.
func (t *tracker) forget(names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range names {
		delete(t.ready, name)
		delete(t.gone, name)
		delete(t.failed, name)
	}
}

// waitReady waits until every named pod was seen Running and Ready and
// returns when each was, in the order of names.
func (t *tracker) waitReady(ctx context.Context, names []string) ([]time.Time, error) {
	return t.wait(ctx, names, "Running and Ready", func(name string) (time.Time, bool) {
		seen, ok := t.ready[name]
		return seen, ok
	})
}

// waitGone waits until every named pod was seen deleted.
func (t *tracker) waitGone(ctx context.Context, names []string) ([]time.Time, error) {
	return t.wait(ctx, names, "gone", func(name string) (time.Time, bool) {
		seen, ok := t.gone[name]
		return seen, ok
	})
}

func (t *tracker) wait(ctx context.Context, names []string, what string, seenOf func(string) (time.Time, bool)) ([]time.Time, error) {
	for {
		t.mu.Lock()
		times := make([]time.Time, len(names))
		missing := 0
		var firstMissing, failure string
		for i, name := range names {
			seen, ok := seenOf(name)
			if !ok {
				if missing == 0 {
					firstMissing = name
				}
				missing++
				if reason, failed := t.failed[name]; failed && what != "gone" {
					failure = fmt.Sprintf("pod %s ended instead of running: %s", name, reason)
				}
			}
			times[i] = seen
		}
		changed := t.changed
		t.mu.Unlock()
		if failure != "" {
			return nil, fmt.Errorf("waiting for %d pods to be %s: %s", len(names), what, failure)
		}
		if missing == 0 {
			return times, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d pods to be %s: %d are not, %s among them: %w", len(names), what, missing, firstMissing, ctx.Err())
		}
	}
}

// runningAndReady is what the bench waits for: phase Running and the Ready
// condition true (all containers ready).
func runningAndReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}
