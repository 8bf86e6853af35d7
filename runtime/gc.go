package runtime

import (
	"context"
	"errors"
	"fmt"

	crierrors "k8s.io/cri-api/pkg/errors"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// RemovePod removes every container and sandbox of a pod that has been
// killed, with the containers' log files and the pod's log folder. It
// works from the runtime's record alone, so it serves pods whose Pod is
// gone.
func (m *Manager) RemovePod(ctx context.Context, status *kubecontainer.PodStatus) error {
	var errs []error
	for _, c := range status.Containers {
		if err := m.removeContainer(ctx, status, c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sb := range status.Sandboxes {
		m.readySandboxes.forget(sb.ID)
		if err := m.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !crierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing sandbox %s of pod %s/%s: %w", sb.ID, status.Namespace, status.Name, err))
		}
	}
	if len(errs) == 0 && status.Name != "" {
		if err := m.RemovePodLogs(status.Namespace, status.Name, status.UID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PruneContainers removes the dead container instances and sandboxes a
// running pod no longer needs (DeadToRemove): for each container name only
// the newest exited instance is kept.
func (m *Manager) PruneContainers(ctx context.Context, status *kubecontainer.PodStatus) error {
	_, err := m.RemoveDead(ctx, status, DeadToRemove(status, false))
	return err
}

// RemoveDead removes the containers (with their log files) and then the
// sandboxes of a pod's record that dead names, and says how many are gone
// (one already gone is no error) — not those it failed to remove.
func (m *Manager) RemoveDead(ctx context.Context, status *kubecontainer.PodStatus, dead Dead) (int, error) {
	var errs []error
	removed := 0
	for _, c := range dead.Containers {
		if err := m.removeContainer(ctx, status, c); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
	}
	for _, sb := range dead.Sandboxes {
		m.readySandboxes.forget(sb.ID)
		if err := m.runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !crierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing sandbox %s of pod %s/%s: %w", sb.ID, status.Namespace, status.Name, err))
		} else {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

func (m *Manager) removeContainer(ctx context.Context, status *kubecontainer.PodStatus, c *kubecontainer.ContainerStatus) error {
	if err := m.removeContainerLog(c.Name, c.ID.ID, status.Name, status.Namespace, c.LogPath); err != nil {
		// A log file left behind is not worth keeping a dead container for.
		m.log.Error(err, "Failed to remove container log", "container", c.Name, "containerID", c.ID.ID)
	}
	if err := m.runtime.RemoveContainer(ctx, c.ID.ID); err != nil && !crierrors.IsNotFound(err) {
		return fmt.Errorf("removing container %q (%s) of pod %s/%s: %w", c.Name, c.ID.ID, status.Namespace, status.Name, err)
	}
	m.stops.forget(c.ID.ID)
	return nil
}
