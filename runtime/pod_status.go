package runtime

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// GetPodStatus reads everything the runtime holds for one pod, straight
// from CRI: its sandboxes and containers, then the status of each ready
// sandbox and of each container. The calls of each of the two rounds are
// independent and made at once, so the read costs two round trips to the
// runtime rather than one per call: it lies on the path of every start,
// between the last container started and the status that says so.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID) (*kubecontainer.PodStatus, error) {
	selector := map[string]string{kubecontainer.LabelPodUID: string(uid)}
	var (
		sandboxes  []*runtimeapi.PodSandbox
		containers []*runtimeapi.Container
	)
	lists, listCtx := errgroup.WithContext(ctx)
	lists.Go(func() (err error) {
		if sandboxes, err = m.runtime.ListPodSandbox(listCtx, &runtimeapi.PodSandboxFilter{LabelSelector: selector}); err != nil {
			return fmt.Errorf("listing sandboxes of pod %s: %w", uid, err)
		}
		return nil
	})
	lists.Go(func() (err error) {
		if containers, err = m.runtime.ListContainers(listCtx, &runtimeapi.ContainerFilter{LabelSelector: selector}); err != nil {
			return fmt.Errorf("listing containers of pod %s: %w", uid, err)
		}
		return nil
	})
	if err := lists.Wait(); err != nil {
		return nil, err
	}

	m.readySandboxes.keepListed(uid, sandboxes)
	// Each object's slot is filled by its own call; nil is one gone
	// between the list and its status.
	sandboxStatuses := make([]*kubecontainer.SandboxStatus, len(sandboxes))
	containerStatuses := make([]*kubecontainer.ContainerStatus, len(containers))
	reads, readCtx := errgroup.WithContext(ctx)
	for i, sb := range sandboxes {
		reads.Go(func() (err error) {
			sandboxStatuses[i], err = m.sandboxStatus(readCtx, uid, sb)
			return err
		})
	}
	for i, c := range containers {
		reads.Go(func() (err error) {
			containerStatuses[i], err = m.containerStatus(readCtx, uid, c)
			return err
		})
	}
	if err := reads.Wait(); err != nil {
		return nil, err
	}

	status := &kubecontainer.PodStatus{UID: uid}
	for i, sb := range sandboxes {
		// A sandbox names its pod even when it went in between.
		id, _ := identityFromLabels(sb.Labels)
		status.Name, status.Namespace = id.Name, id.Namespace
		if sandboxStatuses[i] != nil {
			status.Sandboxes = append(status.Sandboxes, sandboxStatuses[i])
		}
	}
	for i, c := range containers {
		if containerStatuses[i] == nil {
			continue
		}
		if id, ok := identityFromLabels(c.Labels); ok {
			status.Name, status.Namespace = id.Name, id.Namespace
		}
		status.Containers = append(status.Containers, containerStatuses[i])
	}
	sortNewestFirst(status)
	return status, nil
}

// sandboxStatus is one listed sandbox as GetPodStatus reports it: a ready
// one from its status call (once: readySandboxes), the only one with a
// network worth reading; nil when it went in between.
func (m *Manager) sandboxStatus(ctx context.Context, uid types.UID, sb *runtimeapi.PodSandbox) (*kubecontainer.SandboxStatus, error) {
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return sandboxFromList(sb), nil
	}
	sandbox, known := m.readySandboxes.get(sb.Id)
	if !known {
		resp, err := m.runtime.PodSandboxStatus(ctx, sb.Id, false)
		if crierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("getting status of sandbox %s of pod %s: %w", sb.Id, uid, err)
		}
		sandbox = sandboxFromStatus(resp.GetStatus())
		m.readySandboxes.set(uid, sandbox)
	}
	if m.config.SandboxIPs != nil && !sandbox.HostNetwork {
		// nodelet ran the network configuration: its result is
		// first-hand, and withdrawn when a CHECK finds the network
		// broken.
		if ips, known := m.config.SandboxIPs(sb.Id); known {
			sandbox.IPs = ips
		}
	}
	return sandbox, nil
}

// containerStatus is one listed container as GetPodStatus reports it, its
// exit settled; nil when it went in between.
func (m *Manager) containerStatus(ctx context.Context, uid types.UID, c *runtimeapi.Container) (*kubecontainer.ContainerStatus, error) {
	resp, err := m.runtime.ContainerStatus(ctx, c.Id, false)
	if crierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting status of container %s of pod %s: %w", c.Id, uid, err)
	}
	cs, err := m.settledContainer(ctx, c.PodSandboxId, m.containerFromStatus(c.PodSandboxId, resp.GetStatus()))
	if err != nil {
		return nil, fmt.Errorf("getting status of container %s of pod %s: %w", c.Id, uid, err)
	}
	m.withResized(uid, cs)
	return cs, nil
}
