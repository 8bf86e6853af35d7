package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// userNamespaces frees the user namespace ID range of a pod that is gone
// (package userns).
type userNamespaces interface {
	Release(uid types.UID)
}

// tearDownPodFolder removes the pod's folder, its volumes, and with them
// its user namespace range: no container of the pod runs any more.
func (r *PodReconciler) tearDownPodFolder(ctx context.Context, uid types.UID) error {
	if err := r.Volumes.TearDownPod(ctx, uid); err != nil {
		return err
	}
	if r.UserNamespaces != nil {
		r.UserNamespaces.Release(uid)
	}
	return nil
}
