package runtime

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// resizeLog records, in order, what a resize wrote: the pod cgroup's
// files and the containers' CRI updates.
type resizeLog struct {
	*critest.FakeRuntimeService
	steps  []string
	config cgroups.ResourceConfig
}

func (l *resizeLog) UpdateContainerResources(_ context.Context, id string, r *runtimeapi.ContainerResources) error {
	linux := r.GetLinux()
	l.steps = append(l.steps, fmt.Sprintf("container %s quota=%d shares=%d memory=%d", id, linux.CpuQuota, linux.CpuShares, linux.MemoryLimitInBytes))
	return nil
}

func (l *resizeLog) PodConfig(*corev1.Pod) (*cgroups.ResourceConfig, error) {
	c := l.config
	return &c, nil
}

func (l *resizeLog) SetPodConfig(_ *corev1.Pod, c *cgroups.ResourceConfig) error {
	switch {
	case c.Memory != nil:
		l.steps = append(l.steps, fmt.Sprintf("pod memory=%d", *c.Memory))
	case c.CPUQuota != nil:
		l.steps = append(l.steps, fmt.Sprintf("pod quota=%d", *c.CPUQuota))
	case c.CPUShares != nil:
		l.steps = append(l.steps, fmt.Sprintf("pod shares=%d", *c.CPUShares))
	}
	return nil
}

// A resize moves memory, then CPU; the pod's cgroup grows before its
// container and shrinks after it; the CPU update keeps the memory the
// memory update gave.
func TestResizePodOrder(t *testing.T) {
	small := kubecontainer.ResizeValues{CPURequest: 100, CPULimit: 200, MemoryRequest: 32 << 20, MemoryLimit: 64 << 20}
	big := kubecontainer.ResizeValues{CPURequest: 200, CPULimit: 400, MemoryRequest: 64 << 20, MemoryLimit: 128 << 20}
	tests := map[string]struct {
		from, to kubecontainer.ResizeValues
		want     []string
	}{
		"growing": {from: small, to: big, want: []string{
			"pod memory=134217728",
			"container c1 quota=20000 shares=102 memory=134217728",
			"pod quota=40000",
			"pod shares=204",
			"container c1 quota=40000 shares=204 memory=134217728",
		}},
		"shrinking": {from: big, to: small, want: []string{
			"container c1 quota=40000 shares=204 memory=67108864",
			"pod memory=67108864",
			"container c1 quota=20000 shares=102 memory=67108864",
			"pod shares=102",
			"pod quota=20000",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			status := baseStatus(pod)
			pod.Spec.Containers = pod.Spec.Containers[:1]
			status.Containers = status.Containers[:1]
			status.Containers[0].ID.ID = "c1"
			status.Containers[0].Actuated = &tc.from
			pod.Spec.Containers[0].Resources = tc.from.Requirements()
			before := cgroups.ResourceConfigForPod(pod, 0)
			pod.Spec.Containers[0].Resources = tc.to.Requirements()

			log := &resizeLog{FakeRuntimeService: critest.NewFakeRuntimeService(),
				config: cgroups.ResourceConfig{CPUShares: before.CPUShares, CPUQuota: before.CPUQuota, Memory: before.Memory}}
			m := &Manager{runtime: log}
			actions := ComputePodActions(pod, status, nil, testNow)
			if err := m.resizePod(context.Background(), pod, status, actions, log); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, log.steps); diff != "" {
				t.Errorf("resize steps (-want +got):\n%s", diff)
			}
		})
	}
}
