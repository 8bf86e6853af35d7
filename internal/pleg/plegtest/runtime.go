// Package plegtest holds an in-memory container runtime for the tests of
// the PLEG and of the reconciler's reads through the pod cache: its
// relists can lag behind its direct reads, as a real runtime's may.
package plegtest

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// Pod is a runtime pod of namespace ns named pod-UID with the given
// sandboxes and containers, by ID.
func Pod(uid types.UID, sandboxes map[string]kubecontainer.SandboxState, containers map[string]kubecontainer.ContainerState) *kubecontainer.PodStatus {
	p := &kubecontainer.PodStatus{UID: uid, Namespace: "ns", Name: "pod-" + string(uid)}
	for id, state := range sandboxes {
		p.Sandboxes = append(p.Sandboxes, &kubecontainer.SandboxStatus{ID: id, State: state})
	}
	for id, state := range containers {
		p.Containers = append(p.Containers, &kubecontainer.ContainerStatus{ID: kubecontainer.ContainerID{Type: "containerd", ID: id}, State: state})
	}
	return p
}

// Runtime answers relists (ListPods) from what it lists and direct reads
// (GetPodStatus) from what is true, counting both.
type Runtime struct {
	mu          sync.Mutex
	listed      map[types.UID]*kubecontainer.PodStatus
	truth       map[types.UID]*kubecontainer.PodStatus
	directReads int
	listCalls   int
	// events, when set, is the runtime's container event stream.
	events chan kubecontainer.PodIdentity
}

// NewRuntime is a runtime whose lists and direct reads both hold pods.
func NewRuntime(pods ...*kubecontainer.PodStatus) *Runtime {
	f := &Runtime{listed: map[types.UID]*kubecontainer.PodStatus{}, truth: map[types.UID]*kubecontainer.PodStatus{}}
	for _, p := range pods {
		f.listed[p.UID], f.truth[p.UID] = p, p
	}
	return f
}

// Set changes what both lists and direct reads see of the pod.
func (f *Runtime) Set(p *kubecontainer.PodStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed[p.UID], f.truth[p.UID] = p, p
}

// SetTruth changes what direct reads see of the pod, leaving the lists
// stale.
func (f *Runtime) SetTruth(p *kubecontainer.PodStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.truth[p.UID] = p
}

// StreamContainerEvents gives the runtime a container event stream (to be
// called before anything watches it); what is sent on the channel is
// delivered to the watcher.
func (f *Runtime) StreamContainerEvents() chan<- kubecontainer.PodIdentity {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = make(chan kubecontainer.PodIdentity)
	return f.events
}

func (f *Runtime) ListPods(context.Context) (map[types.UID]*kubecontainer.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	out := map[types.UID]*kubecontainer.PodStatus{}
	for uid, p := range f.listed {
		out[uid] = p
	}
	return out, nil
}

func (f *Runtime) GetPodStatus(_ context.Context, uid types.UID) (*kubecontainer.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.directReads++
	if p, ok := f.truth[uid]; ok {
		return p, nil
	}
	return &kubecontainer.PodStatus{UID: uid}, nil
}

// WatchContainerEvents answers as containerd 1.6 does (no such method)
// unless the runtime was given a stream.
func (f *Runtime) WatchContainerEvents(ctx context.Context, onEvent func(kubecontainer.PodIdentity)) error {
	f.mu.Lock()
	events := f.events
	f.mu.Unlock()
	if events == nil {
		return status.Error(codes.Unimplemented, "unknown method GetContainerEvents")
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case id := <-events:
			onEvent(id)
		}
	}
}

// DirectReads is how many GetPodStatus calls were made.
func (f *Runtime) DirectReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.directReads
}

// Lists is how many ListPods calls were made.
func (f *Runtime) Lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listCalls
}
