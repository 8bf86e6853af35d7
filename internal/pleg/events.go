package pleg

// The pure half of the PLEG: what changed between two relists. No I/O and
// no clock here.

import (
	"maps"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// PodLifecycleEventType says what changed in a pod's runtime state.
type PodLifecycleEventType string

const (
	ContainerStarted PodLifecycleEventType = "ContainerStarted"
	ContainerDied    PodLifecycleEventType = "ContainerDied"
	ContainerRemoved PodLifecycleEventType = "ContainerRemoved"
	ContainerChanged PodLifecycleEventType = "ContainerChanged"
	SandboxChanged   PodLifecycleEventType = "SandboxChanged"
	PodSync          PodLifecycleEventType = "PodSync"
)

// PodLifecycleEvent is one change the PLEG saw between two relists.
type PodLifecycleEvent struct {
	ID        types.UID
	Namespace string
	Name      string
	Type      PodLifecycleEventType
	// Data is the container or sandbox ID the event is about.
	Data string
}

func eventKey(e PodLifecycleEvent) types.NamespacedName {
	return types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
}

// generateEvents compares two relists and says what changed, pod by pod.
// It is pure: same input, same events, in a stable order.
func generateEvents(previous, current map[types.UID]*kubecontainer.PodStatus) []PodLifecycleEvent {
	var events []PodLifecycleEvent
	uids := map[types.UID]bool{}
	for uid := range previous {
		uids[uid] = true
	}
	for uid := range current {
		uids[uid] = true
	}
	for uid := range uids {
		events = append(events, podEvents(previous[uid], current[uid])...)
	}
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].ID != events[j].ID {
			return events[i].ID < events[j].ID
		}
		return events[i].Data < events[j].Data
	})
	return events
}

func podEvents(previous, current *kubecontainer.PodStatus) []PodLifecycleEvent {
	pod := current
	if pod == nil {
		pod = previous
	}
	newEvent := func(t PodLifecycleEventType, data string) PodLifecycleEvent {
		return PodLifecycleEvent{ID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Type: t, Data: data}
	}
	var events []PodLifecycleEvent

	oldSandboxes, newSandboxes := sandboxStates(previous), sandboxStates(current)
	for id, state := range newSandboxes {
		if oldSandboxes[id] != state {
			events = append(events, newEvent(SandboxChanged, id))
		}
	}
	for id := range oldSandboxes {
		if _, ok := newSandboxes[id]; !ok {
			events = append(events, newEvent(SandboxChanged, id))
		}
	}

	oldContainers, newContainers := containerStates(previous), containerStates(current)
	for id, state := range newContainers {
		old, existed := oldContainers[id]
		switch {
		case existed && old == state:
		case state == kubecontainer.ContainerRunning:
			events = append(events, newEvent(ContainerStarted, id))
		case state == kubecontainer.ContainerExited:
			events = append(events, newEvent(ContainerDied, id))
		default:
			events = append(events, newEvent(ContainerChanged, id))
		}
	}
	for id := range oldContainers {
		if _, ok := newContainers[id]; !ok {
			events = append(events, newEvent(ContainerRemoved, id))
		}
	}
	return events
}

// sameObjects reports whether two records of a pod hold the same sandboxes
// and containers in the same states. Objects only move forward (a sandbox
// from ready to not ready, a container from created to running to exited)
// and what a status read adds to a list (exit codes, IPs, start times) is
// set before the state that shows it, so two such records differ in nothing
// a sync decides on.
func sameObjects(a, b *kubecontainer.PodStatus) bool {
	return maps.Equal(sandboxStates(a), sandboxStates(b)) && maps.Equal(containerStates(a), containerStates(b))
}

func sandboxStates(pod *kubecontainer.PodStatus) map[string]kubecontainer.SandboxState {
	states := map[string]kubecontainer.SandboxState{}
	if pod != nil {
		for _, sb := range pod.Sandboxes {
			states[sb.ID] = sb.State
		}
	}
	return states
}

func containerStates(pod *kubecontainer.PodStatus) map[string]kubecontainer.ContainerState {
	states := map[string]kubecontainer.ContainerState{}
	if pod != nil {
		for _, c := range pod.Containers {
			states[c.ID.ID] = c.State
		}
	}
	return states
}
