package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/volume"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// The pod's folder: its volumes set up before its containers start, and
// torn down with its user namespace range once it is gone.

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

// preparePod makes the pod's volumes ready. A volume the pod
// cannot have is the user's to fix: it is reported as the kubelet reports
// it, with a FailedMount event, and the pod waits.
func (r *PodReconciler) preparePod(ctx context.Context, pod *corev1.Pod) (*noderuntime.PodEnv, time.Time, error) {
	paths, refreshAt, err := r.Volumes.SetUpPod(ctx, pod)
	if err != nil {
		// One event per volume that failed, worded as the kubelet's.
		failures := volume.UserErrors(err)
		if !volume.IsUserError(err) {
			failures = []error{err}
		}
		for _, failure := range failures {
			r.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "%v", failure)
		}
		return nil, refreshAt, err
	}
	return &noderuntime.PodEnv{
		CgroupParent: r.Cgroups.PodCgroupParent(pod),
		PodCgroups:   r.Cgroups,
		VolumePaths:  paths,
		PodDir:       r.Volumes.PodDir(pod.UID),
		HostIPs:      r.HostIPs(),
		// The groups of the claims' volumes (their gid annotations).
		ExtraSupplementalGroups: r.Volumes.ExtraSupplementalGroups(pod),
		SELinuxRelabel:          r.Volumes.SELinuxRelabel(pod),
	}, refreshAt, nil
}
