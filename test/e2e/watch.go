package e2e

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// WatchPods calls seen with every change of the pods of ns from
// resourceVersion on, until ctx ends. The watch retries: it rides out an
// API server stopped for a while and resumes from the last version it
// saw, so no state is missed.
func WatchPods(ctx context.Context, client kubernetes.Interface, ns, resourceVersion string, seen func(watch.EventType, *corev1.Pod)) error {
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
			if pod, ok := e.Object.(*corev1.Pod); ok {
				seen(e.Type, pod)
			}
		}
	}
}
