// Package runtimeclass resolves a pod's runtimeClassName to the runtime
// handler its sandbox runs under, reading the RuntimeClass from the API
// server when the sandbox is made.
package runtimeclass

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Resolver reads RuntimeClasses with one GET each time a sandbox of a pod
// that names one is made: pods with a RuntimeClass are few, and a read at
// that moment sees a class created or changed just before, without the
// cluster-wide watch an informer would keep.
type Resolver struct {
	Client kubernetes.Interface
}

// Handler returns the runtime handler of the RuntimeClass named name; the
// empty name is the default handler, "". A missing RuntimeClass is a
// NotFound error worded as the kubelet's (`runtimeclass.node.k8s.io "x"
// not found`), which its event shows.
func (r Resolver) Handler(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	rc, err := r.Client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// The kubelet's words come from its informer's lister, which names
		// the resource in the singular.
		return "", apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}
