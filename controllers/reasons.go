package controllers

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// reasonCache remembers why each container of a pod last failed to start
// (ErrImagePull, CrashLoopBackOff, ...), the kubelet's reason cache: the
// runtime holds no record of a container that never got created, so this is
// where its waiting reason lives until a start succeeds. It is an
// optimisation of what the next sync would find again, and is not kept
// across restarts.
type reasonCache struct {
	mu      sync.Mutex
	reasons map[types.UID]map[string]*kubecontainer.ContainerError
}

func newReasonCache() *reasonCache {
	return &reasonCache{reasons: map[types.UID]map[string]*kubecontainer.ContainerError{}}
}

// get returns a copy of the pod's reasons by container name.
func (c *reasonCache) get(uid types.UID) map[string]*kubecontainer.ContainerError {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]*kubecontainer.ContainerError, len(c.reasons[uid]))
	for name, reason := range c.reasons[uid] {
		out[name] = reason
	}
	return out
}

// update records the outcome of one sync: containers started lose their
// reason, failed ones and those held in back-off get one.
func (c *reasonCache) update(pod *corev1.Pod, actions noderuntime.PodActions, result noderuntime.SyncResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reasons := c.reasons[pod.UID]
	if reasons == nil {
		reasons = map[string]*kubecontainer.ContainerError{}
		c.reasons[pod.UID] = reasons
	}
	for _, name := range result.Started {
		delete(reasons, name)
	}
	for name, err := range result.ContainerErrors {
		reasons[name] = err
	}
	for _, b := range actions.ContainersInBackOff {
		reasons[b.Name] = &kubecontainer.ContainerError{
			Reason:  kubecontainer.ReasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", b.Delay, b.Name, formatPod(pod)),
		}
	}
}

func (c *reasonCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reasons, uid)
}

// formatPod names a pod the way the kubelet's messages do: name_namespace(uid).
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
