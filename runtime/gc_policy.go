package runtime

import (
	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// Which dead containers and sandboxes of a pod may go: the kubelet's
// container garbage collection policy (its minimum age 0 and one dead
// instance kept per container, the defaults), pure over the pod's record.

// Dead is what of a pod's runtime record may be removed.
type Dead struct {
	Containers []*kubecontainer.ContainerStatus
	Sandboxes  []*kubecontainer.SandboxStatus
}

// Empty says whether there is nothing to remove.
func (d Dead) Empty() bool { return len(d.Containers)+len(d.Sandboxes) == 0 }

// DeadToRemove is what of a pod's record (containers and sandboxes newest
// first) may be removed. A running or created container always stays, and
// so does a ready sandbox or one that holds a container that stays.
//
// While the pod runs (podTerminated false) the newest exited instance of
// each container stays: its state is the status's lastState, its log is
// `kubectl logs --previous`, and its annotations carry the restart count
// the next instance counts from. So does the newest sandbox, which the
// next start looks at. Once the pod has terminated nothing of it is
// needed any more: every dead container and every sandbox left empty go,
// as the kubelet's container GC removes them under disk pressure.
func DeadToRemove(status *kubecontainer.PodStatus, podTerminated bool) Dead {
	var dead Dead
	keptSandboxes := map[string]bool{}
	if len(status.Sandboxes) > 0 && !podTerminated {
		keptSandboxes[status.Sandboxes[0].ID] = true
	}
	seen := map[string]bool{}
	for _, c := range status.Containers {
		switch {
		case c.State == kubecontainer.ContainerRunning || c.State == kubecontainer.ContainerCreated:
			keptSandboxes[c.SandboxID] = true
		case !podTerminated && !seen[c.Name]:
			// Newest first: the first dead instance of a name stays.
			seen[c.Name] = true
			keptSandboxes[c.SandboxID] = true
		default:
			dead.Containers = append(dead.Containers, c)
		}
	}
	for _, sb := range status.Sandboxes {
		if !keptSandboxes[sb.ID] && sb.State != kubecontainer.SandboxReady {
			dead.Sandboxes = append(dead.Sandboxes, sb)
		}
	}
	return dead
}
