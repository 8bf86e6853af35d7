// Package shutdown is the node's graceful shutdown, as the kubelet's
// GracefulNodeShutdown and GracefulNodeShutdownBasedOnPodPriority: it
// holds a systemd-logind delay inhibitor lock, and when logind announces a
// shutdown (PrepareForShutdown) it marks the node not ready, refuses new
// pods, and stops the node's pods in bands of priority, each band within
// its share of the delay, before it lets the shutdown go on.
//
// This file is the plan, pure functions over plain values; manager.go
// carries it out; logind.go speaks D-Bus.
package shutdown

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// The kubelet's words for a node that shuts down.
const (
	// ReasonNodeShutdown and messageNotAdmitted refuse a pod while the node
	// shuts down.
	ReasonNodeShutdown = "NodeShutdown"
	messageNotAdmitted = "Pod was rejected as the node is shutting down."
	// ReasonTerminated and MessageTerminated are the status of a pod the
	// shutdown stopped, and MessageTerminated its DisruptionTarget
	// condition's message.
	ReasonTerminated  = "Terminated"
	MessageTerminated = "Pod was terminated in response to imminent node shutdown."
	// messageShuttingDown is why the node is not ready.
	messageShuttingDown = "node is shutting down"
	// eventShutdown is the reason of the Node's events.
	eventShutdown = "Shutdown"
)

// defaultPriority is a pod's priority when no PriorityClass is the default
// (scheduling.DefaultPriorityWhenNoDefaultClassExists).
const defaultPriority int32 = 0

// Band is one band of the shutdown: the pods of Priority and above, up to
// the next band's, are stopped within GracePeriodSeconds.
type Band = v1alpha1.ShutdownGracePeriodByPodPriority

// Bands are the shutdown's bands, lowest priority first, from the
// configuration: shutdownGracePeriodByPodPriority, or else the two-band
// form of shutdownGracePeriod with its shutdownGracePeriodCriticalPods
// kept for the critical pods. None: graceful shutdown is off.
func Bands(total, critical time.Duration, byPriority []Band) []Band {
	bands := slices.Clone(byPriority)
	if len(bands) == 0 {
		if total <= 0 || critical > total {
			return nil
		}
		bands = []Band{
			{Priority: defaultPriority, ShutdownGracePeriodSeconds: int64((total - critical) / time.Second)},
			{Priority: podutil.SystemCriticalPriority, ShutdownGracePeriodSeconds: int64(critical / time.Second)},
		}
	}
	slices.SortStableFunc(bands, func(a, b Band) int { return cmp.Compare(a.Priority, b.Priority) })
	return bands
}

// PeriodRequested is how long the shutdown must wait: every band's time.
func PeriodRequested(bands []Band) time.Duration {
	var sum int64
	for _, b := range bands {
		sum += b.ShutdownGracePeriodSeconds
	}
	return time.Duration(sum) * time.Second
}

// Group is a band with its pods.
type Group struct {
	Band
	Pods []*corev1.Pod
}

// GroupByPriority puts each pod in the band of the highest priority at or
// below its own; a pod below every band goes in the lowest, as the
// kubelet's. bands are sorted, lowest first.
func GroupByPriority(bands []Band, pods []*corev1.Pod) []Group {
	groups := make([]Group, len(bands))
	for i, b := range bands {
		groups[i].Band = b
	}
	if len(groups) == 0 {
		return nil
	}
	for _, pod := range pods {
		priority := defaultPriority
		if pod.Spec.Priority != nil {
			priority = *pod.Spec.Priority
		}
		// Of bands of one priority, the first takes the pods.
		i := 0
		for j := range groups {
			if groups[j].Priority <= priority && (j == 0 || groups[j].Priority != groups[j-1].Priority) {
				i = j
			}
		}
		groups[i].Pods = append(groups[i].Pods, pod)
	}
	return groups
}

// GracePeriod is how long a pod of the group has to stop: its own
// terminationGracePeriodSeconds, at most the band's time.
func GracePeriod(pod *corev1.Pod, band Band) int64 {
	grace := band.ShutdownGracePeriodSeconds
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil && *s <= grace {
		grace = *s
	}
	return grace
}
