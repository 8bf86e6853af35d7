// Package nodeclient holds how a node talks to the API server: what its
// manager caches and what it reads straight from the API server, the
// content type of its clientset, and how it records events. nodelet and
// its hollow nodes both take them from here, so that a hollow node loads
// the API server as a real one does.
package nodeclient

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventComponent is the source component of a node's events: the
// kubelet's, so that `kubectl describe` and the tools that select the
// kubelet's events find nodelet's.
const EventComponent = "kubelet"

// CacheOptions are the manager's caches for the node named nodeName: its
// own pods and its own Node, filtered by the API server, every object
// without its managed fields.
func CacheOptions(nodeName string) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:  {Field: fields.OneTermEqualSelector("spec.nodeName", nodeName)},
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
		},
		// A node never reads who manages which field; without them every
		// cached object is smaller, and so is every copy a read from the
		// cache makes.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// ClientOptions are the manager's client's: Secrets, ConfigMaps and
// Leases are read straight from the API server, since a cached Get would
// start a cluster-wide watch that the node's identity may not make.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{
		DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &coordinationv1.Lease{}},
	}}
}

// Protobuf is a copy of config speaking protobuf, as the kubelet's clients
// do (its --kube-api-content-type): the clientset's requests and answers
// (events, token requests) are smaller than in JSON and cheaper for the
// API server to decode and encode. The manager's client speaks it already
// for built-in types.
func Protobuf(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return config
}

// NewEventRecorder records core/v1 Events as the kubelet does: from
// EventComponent on the node named nodeName, so that `kubectl describe pod`
// lists them. Recording stops when ctx ends.
func NewEventRecorder(ctx context.Context, clientset kubernetes.Interface, scheme *apiruntime.Scheme, nodeName string) record.EventRecorder {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clientset.CoreV1().Events("")})
	return broadcaster.NewRecorder(scheme, corev1.EventSource{Component: EventComponent, Host: nodeName})
}
