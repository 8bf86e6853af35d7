package controllers

import (
	"context"
	"errors"
	"fmt"

	noderuntime "github.com/nodelet/nodelet/runtime"
)

// removePod removes a stopped pod's runtime objects, logs, volumes and
// cgroup, in that order: the cgroup only empties once the runtime is done.
func (r *PodReconciler) removePod(ctx context.Context, status *noderuntime.PodStatus) error {
	if err := r.Runtime.RemovePod(ctx, status); err != nil {
		// A container the runtime will not remove may still run though
		// the runtime reports it exited: containerd 1.6 leaves a start
		// cut short by a nodelet SIGKILL so ("cannot delete running
		// task"), and stopping the pod does not stop it. The pod is
		// stopped: what is left in its cgroup is killed now, as the
		// kubelet's cleanup of a pod's cgroup kills it, so that the next
		// try removes the container.
		if cgroupErr := r.Cgroups.RemovePod(status.UID); cgroupErr != nil {
			return errors.Join(err, fmt.Errorf("removing cgroup of pod %s/%s: %w", status.Namespace, status.Name, cgroupErr))
		}
		return err
	}
	if err := r.tearDownPodFolder(ctx, status.UID); err != nil {
		return fmt.Errorf("removing volumes of pod %s/%s: %w", status.Namespace, status.Name, err)
	}
	if err := r.Cgroups.RemovePod(status.UID); err != nil {
		return fmt.Errorf("removing cgroup of pod %s/%s: %w", status.Namespace, status.Name, err)
	}
	return nil
}
