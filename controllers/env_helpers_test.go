package controllers

// Helpers of the tests on envtest and the CRI fake (pod_controller_test.go):
// a running pod, calls of the fake made to fail, and pods' cgroups.

import (
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// runPod creates testPod's pod "web" in a new namespace and waits until it
// runs.
func (e *reconcilerEnv) runPod(t *testing.T, namespace string) (*corev1.Pod, types.NamespacedName) {
	t.Helper()
	e.createNamespace(t, namespace)
	pod := testPod(namespace, "web")
	if err := e.client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(pod)
	return e.waitForPod(t, key, "pod running", running), key
}

// failCalls makes the CRI fake's next n calls of method fail with err (the
// fake pops one injected error per call).
func (e *reconcilerEnv) failCalls(method string, err error, n int) {
	e.runtime.Lock()
	defer e.runtime.Unlock()
	if e.runtime.Errors == nil {
		e.runtime.Errors = map[string][]error{}
	}
	e.runtime.Errors[method] = slices.Repeat([]error{err}, n)
}

// clearFailures drops the failures failCalls injected for method that no
// call met, and says how many those were.
func (e *reconcilerEnv) clearFailures(method string) int {
	e.runtime.Lock()
	defer e.runtime.Unlock()
	left := len(e.runtime.Errors[method])
	delete(e.runtime.Errors, method)
	return left
}

// fakeCgroups records which pods have a cgroup, and what a resize wrote
// to it, in order.
type fakeCgroups struct {
	mu     sync.Mutex
	pods   map[types.UID]bool
	config cgroups.ResourceConfig
	writes []cgroups.ResourceConfig
	// onRemove, when set, is called as a pod's cgroup is removed, as
	// its processes would be killed; an error is a cgroup left in place.
	onRemove func(types.UID) error
}

func (c *fakeCgroups) PodCgroupParent(pod *corev1.Pod) string { return "/test/pod" + string(pod.UID) }
func (c *fakeCgroups) EnsurePod(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pods[pod.UID] {
		config := cgroups.ResourceConfigForPod(pod, 0)
		c.config = cgroups.ResourceConfig{CPUShares: config.CPUShares, CPUQuota: config.CPUQuota, Memory: config.Memory}
	}
	c.pods[pod.UID] = true
	return nil
}
func (c *fakeCgroups) RemovePod(uid types.UID) error {
	c.mu.Lock()
	onRemove := c.onRemove
	c.mu.Unlock()
	if onRemove != nil {
		if err := onRemove(uid); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
	return nil
}
func (c *fakeCgroups) has(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[uid]
}
