package hollow

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// newFakeRuntime is the stateful CRI fake, ready as a runtime and as a
// network: the node's Ready condition reads both.
func newFakeRuntime() (*critest.FakeRuntimeService, *critest.FakeImageService) {
	runtimeService := critest.NewFakeRuntimeService()
	runtimeService.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
	return runtimeService, critest.NewFakeImageService()
}

// forgetCalls empties the fakes' record of calls every period: they append
// one entry per call for tests to assert on, which a node that runs for an
// hour would otherwise keep by the million.
func forgetCalls(ctx context.Context, runtimeService *critest.FakeRuntimeService, imageService *critest.FakeImageService, period time.Duration) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			runtimeService.Lock()
			runtimeService.Called = nil
			runtimeService.Unlock()
			imageService.Lock()
			imageService.Called = nil
			imageService.Unlock()
		}
	}
}

// podIPs hands each sandbox an address of the node's fake pod range, once,
// as host-local IPAM would; they are never reused (a hollow node's range is
// a /16, far more than a benchmark's pods).
type podIPs struct {
	mu    sync.Mutex
	next  netip.Addr
	last  netip.Addr
	given map[string]string
}

func newPodIPs(prefix netip.Prefix) *podIPs {
	prefix = prefix.Masked()
	last := prefix.Addr()
	for next := last.Next(); next.IsValid() && prefix.Contains(next); next = next.Next() {
		last = next
	}
	// The network's own address and the gateway's (.1) are not given out.
	return &podIPs{next: prefix.Addr().Next().Next(), last: last, given: map[string]string{}}
}

// SandboxIPs is runtime.Config.SandboxIPs: the sandbox's address, given on
// first sight; none once the range is spent.
func (p *podIPs) SandboxIPs(sandboxID string) ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := p.given[sandboxID]; ok {
		return []string{ip}, true
	}
	if !p.next.IsValid() || p.next.Compare(p.last) >= 0 {
		return nil, false
	}
	ip := p.next.String()
	p.next = p.next.Next()
	p.given[sandboxID] = ip
	return []string{ip}, true
}

// volumes gives every volume an empty folder under the pod's folder: no
// mounts, no reads of Secrets or ConfigMaps, no tokens.
type volumes struct{ root string }

func (v volumes) PodDir(uid types.UID) string { return filepath.Join(v.root, string(uid)) }

func (v volumes) ExtraSupplementalGroups(*corev1.Pod) []int64 { return nil }
func (v volumes) SELinuxRelabel(*corev1.Pod) map[string]bool  { return nil }

func (v volumes) SetUpPod(_ context.Context, pod *corev1.Pod) (map[string]string, time.Time, error) {
	paths := make(map[string]string, len(pod.Spec.Volumes))
	for _, vol := range pod.Spec.Volumes {
		paths[vol.Name] = filepath.Join(v.PodDir(pod.UID), "volumes", vol.Name)
		if err := os.MkdirAll(paths[vol.Name], 0o750); err != nil {
			return nil, time.Time{}, fmt.Errorf("pod %s/%s: volume %s: %w", pod.Namespace, pod.Name, vol.Name, err)
		}
	}
	if err := os.MkdirAll(v.PodDir(pod.UID), 0o750); err != nil {
		return nil, time.Time{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return paths, time.Time{}, nil
}

func (v volumes) TearDownPod(_ context.Context, uid types.UID) error {
	return os.RemoveAll(v.PodDir(uid))
}

func (v volumes) ListPods() ([]types.UID, error) {
	entries, err := os.ReadDir(v.root)
	if err != nil {
		return nil, err
	}
	uids := make([]types.UID, 0, len(entries))
	for _, entry := range entries {
		uids = append(uids, types.UID(entry.Name()))
	}
	return uids, nil
}

// podCgroups keeps in memory what the pods' cgroups would be limited to.
type podCgroups struct {
	mu   sync.Mutex
	pods map[types.UID]*cgroups.ResourceConfig
}

func newPodCgroups() *podCgroups {
	return &podCgroups{pods: map[types.UID]*cgroups.ResourceConfig{}}
}

func (c *podCgroups) PodCgroupParent(pod *corev1.Pod) string { return "/hollow/pod" + string(pod.UID) }

func (c *podCgroups) EnsurePod(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pods[pod.UID] == nil {
		c.pods[pod.UID] = cgroups.ResourceConfigForPod(pod, 0)
	}
	return nil
}

func (c *podCgroups) RemovePod(uid types.UID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
	return nil
}

func (c *podCgroups) ListPods() ([]types.UID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uids := make([]types.UID, 0, len(c.pods))
	for uid := range c.pods {
		uids = append(uids, uid)
	}
	return uids, nil
}

func (c *podCgroups) PodConfig(pod *corev1.Pod) (*cgroups.ResourceConfig, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if config := c.pods[pod.UID]; config != nil {
		copied := *config
		return &copied, nil
	}
	return cgroups.ResourceConfigForPod(pod, 0), nil
}

func (c *podCgroups) SetPodConfig(pod *corev1.Pod, config *cgroups.ResourceConfig) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	current := c.pods[pod.UID]
	if current == nil {
		current = cgroups.ResourceConfigForPod(pod, 0)
		c.pods[pod.UID] = current
	}
	if config.CPUShares != nil {
		current.CPUShares = config.CPUShares
	}
	if config.CPUQuota != nil {
		current.CPUQuota = config.CPUQuota
	}
	if config.Memory != nil {
		current.Memory = config.Memory
	}
	return nil
}
