package runtime

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// terminationOrder orders the stop of a pod with sidecars, as the kubelet
// does: every container is told to stop at once (and runs its preStop hook
// at once), but a sidecar receives its stop signal only once the regular
// containers have stopped, and each sidecar only once the sidecars after
// it have. The wait never outlasts the sidecar's grace period.
type terminationOrder struct {
	clock clock.Clock
	mu    sync.Mutex
	// done holds, by container name, a channel closed once that container
	// has stopped (at once for one that is not running).
	done map[string]chan struct{}
	// waitFor holds, by sidecar name, the containers it stops after.
	waitFor map[string][]chan struct{}
}

func newTerminationOrder(pod *corev1.Pod, running []string, clk clock.Clock) *terminationOrder {
	o := &terminationOrder{clock: clk, done: map[string]chan struct{}{}, waitFor: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, name := range running {
		isRunning[name] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !isRunning[name] {
			close(ch)
			return ch
		}
		o.done[name] = ch
		return ch
	}
	var regular []chan struct{}
	for i := range pod.Spec.Containers {
		regular = append(regular, channel(pod.Spec.Containers[i].Name))
	}
	// From the last init container to the first: each sidecar waits for
	// the regular containers and for the sidecar after it.
	var next chan struct{}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		container := &pod.Spec.InitContainers[i]
		ch := channel(container.Name)
		if !podutil.IsSidecar(container) {
			continue
		}
		o.waitFor[container.Name] = append(o.waitFor[container.Name], regular...)
		if next != nil {
			o.waitFor[container.Name] = append(o.waitFor[container.Name], next)
		}
		next = ch
	}
	return o
}

// waitForTurn waits, at most grace seconds, until the containers name
// stops after have stopped, and returns the whole seconds it waited.
func (o *terminationOrder) waitForTurn(name string, grace int64) int64 {
	if grace <= 0 {
		return 0
	}
	start := o.clock.Now()
	timeout := o.clock.NewTimer(time.Duration(grace) * time.Second)
	defer timeout.Stop()
	for _, ch := range o.waitFor[name] {
		select {
		case <-ch:
		case <-timeout.C():
			return int64(o.clock.Since(start).Seconds())
		}
	}
	return int64(o.clock.Since(start).Seconds())
}

// stopped records that a container has stopped (or will not be waited
// for any longer).
func (o *terminationOrder) stopped(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.done[name]; ok {
		close(ch)
		delete(o.done, name)
	}
}

// hasSidecar reports whether the pod has an init container that restarts
// always.
func hasSidecar(pod *corev1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if podutil.IsSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}
