package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeLabels reads the Node's labels from the cache, for the persistent
// volumes' nodeAffinity; nil until the Node is registered.
func nodeLabels(cache client.Reader, nodeName string) func(context.Context) map[string]string {
	return func(ctx context.Context) map[string]string {
		node := &corev1.Node{}
		if err := cache.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return nil
		}
		return node.Labels
	}
}
