package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The runtime's records are found the way every CRI tool finds a pod's:
// by the pod UID label the agent puts on sandboxes and containers.
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// runtimeSandboxes lists the pod's sandboxes in the runtime, in any state.
func (f *Framework) runtimeSandboxes(t *testing.T, uid types.UID) []*runtimeapi.PodSandbox {
	t.Helper()
	sandboxes, err := f.listSandboxes(t.Context(), uid)
	if err != nil {
		t.Fatal(err)
	}
	return sandboxes
}

func (f *Framework) listSandboxes(ctx context.Context, uid types.UID) ([]*runtimeapi.PodSandbox, error) {
	sandboxes, err := f.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{labelPodUID: string(uid)},
	})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes of pod uid %s: %w", uid, err)
	}
	return sandboxes, nil
}

// runtimeContainers lists the pod's containers in the runtime, in any
// state; a non-empty name keeps only that container's instances.
func (f *Framework) runtimeContainers(t *testing.T, uid types.UID, name string) []*runtimeapi.Container {
	t.Helper()
	containers, err := f.listContainers(t.Context(), uid, name)
	if err != nil {
		t.Fatal(err)
	}
	return containers
}

func (f *Framework) listContainers(ctx context.Context, uid types.UID, name string) ([]*runtimeapi.Container, error) {
	selector := map[string]string{labelPodUID: string(uid)}
	if name != "" {
		selector[labelContainerName] = name
	}
	containers, err := f.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing containers of pod uid %s: %w", uid, err)
	}
	return containers, nil
}

// describeContainers sums up runtime containers for failure messages.
func describeContainers(containers []*runtimeapi.Container) string {
	var parts []string
	for _, c := range containers {
		parts = append(parts, fmt.Sprintf("%s %s attempt=%d %s", c.Metadata.GetName(), shortID(c.Id), c.Metadata.GetAttempt(), c.State))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func describeSandboxes(sandboxes []*runtimeapi.PodSandbox) string {
	var parts []string
	for _, s := range sandboxes {
		parts = append(parts, fmt.Sprintf("%s attempt=%d %s", shortID(s.Id), s.Metadata.GetAttempt(), s.State))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
