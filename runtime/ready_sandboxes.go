package runtime

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// readySandboxes keeps what the runtime's status call said of each ready
// sandbox nodelet read: none of it changes while the sandbox stays ready
// (its attempt, creation time, network and namespaces), so a ready
// sandbox's status is asked for once, right after it is made, and not on
// every read of its pod. The state always comes from the runtime's list.
// An entry goes once its pod's list shows the sandbox other than ready or
// not at all, or nodelet stops or removes it. The zero value is ready to
// use.
type readySandboxes struct {
	mu   sync.Mutex
	byID map[string]readySandbox
}

type readySandbox struct {
	pod    types.UID
	status kubecontainer.SandboxStatus
}

// get returns a copy of the sandbox's status, if known.
func (r *readySandboxes) get(id string) (*kubecontainer.SandboxStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	entry, ok := r.byID[id]
	if !ok {
		return nil, false
	}
	status := entry.status
	return &status, true
}

// set keeps status, the pod's sandbox as its status call answered, if
// ready.
func (r *readySandboxes) set(pod types.UID, status *kubecontainer.SandboxStatus) {
	if status.State != kubecontainer.SandboxReady {
		r.forget(status.ID)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]readySandbox{}
	}
	r.byID[status.ID] = readySandbox{pod: pod, status: *status}
}

func (r *readySandboxes) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byID, id)
}

// keepListed forgets the pod's sandboxes but those its list shows ready.
func (r *readySandboxes) keepListed(pod types.UID, listed []*runtimeapi.PodSandbox) {
	ready := make(map[string]bool, len(listed))
	for _, sb := range listed {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready[sb.Id] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, entry := range r.byID {
		if entry.pod == pod && !ready[id] {
			delete(r.byID, id)
		}
	}
}
