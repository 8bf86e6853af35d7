package eviction

// The eviction manager's decisions, the kubelet's synchronize: which
// thresholds the observed signals meet, how long they have been met, which
// node conditions that makes true, and which threshold eviction acts on.
// Pure: the observations and the time are passed in, the state comes back.

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Observation is one signal's value as read: what is available of a
// capacity, and when it was read (zero when unknown).
type Observation struct {
	Available resource.Quantity
	Capacity  resource.Quantity
	Time      time.Time
}

// Observations are the signals read in one pass.
type Observations map[Signal]Observation

// signalNodeCondition is the node condition each signal's pressure
// reports.
var signalNodeCondition = map[Signal]corev1.NodeConditionType{
	SignalMemoryAvailable:            corev1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: corev1.NodeMemoryPressure,
	SignalNodeFsAvailable:            corev1.NodeDiskPressure,
	SignalNodeFsInodesFree:           corev1.NodeDiskPressure,
	SignalImageFsAvailable:           corev1.NodeDiskPressure,
	SignalImageFsInodesFree:          corev1.NodeDiskPressure,
	SignalContainerFsAvailable:       corev1.NodeDiskPressure,
	SignalContainerFsInodesFree:      corev1.NodeDiskPressure,
	SignalPIDAvailable:               corev1.NodePIDPressure,
}

// Resource is what a signal's threshold reclaims: memory, ephemeral
// storage, inodes or pids.
func Resource(signal Signal) corev1.ResourceName { return signalResource[signal] }

// ThresholdsMet is the thresholds whose signal is below their value,
// grace periods aside. With enforceMinReclaim a threshold stays met until
// the signal is its minimum reclaim above the value. A threshold without
// an observation is not met.
func ThresholdsMet(thresholds []Threshold, observations Observations, enforceMinReclaim bool) []Threshold {
	var met []Threshold
	for _, t := range thresholds {
		observed, ok := observations[t.Signal]
		if !ok {
			continue
		}
		quantity := t.Value.QuantityOf(observed.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			quantity.Add(t.MinReclaim.QuantityOf(observed.Capacity))
		}
		if t.Operator == OpLessThan && quantity.Cmp(observed.Available) > 0 {
			met = append(met, t)
		}
	}
	return met
}

// thresholdKey names a threshold across passes: a signal has at most one
// hard and one soft threshold.
type thresholdKey struct {
	signal Signal
	hard   bool
}

func keyOf(t Threshold) thresholdKey { return thresholdKey{signal: t.Signal, hard: t.Hard()} }

// State is what the manager carries from one pass to the next.
type State struct {
	// ThresholdsMet are the thresholds acted on last pass; they stay met
	// until their minimum reclaim is reached.
	ThresholdsMet []Threshold
	// firstObservedAt is when each threshold met now was first met.
	firstObservedAt map[thresholdKey]time.Time
	// conditionsLastObservedAt is when each node condition was last
	// observed.
	conditionsLastObservedAt map[corev1.NodeConditionType]time.Time
	// NodeConditions are the pressure conditions to report true.
	NodeConditions []corev1.NodeConditionType
	// LastObservations are the observations of last pass.
	LastObservations Observations
}

// HasCondition says whether the node condition is to be reported true.
func (s State) HasCondition(c corev1.NodeConditionType) bool {
	for _, have := range s.NodeConditions {
		if have == c {
			return true
		}
	}
	return false
}

// Config is the manager's configuration.
type Config struct {
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a pressure condition stays
	// true after it was last observed (the kubelet's
	// --eviction-pressure-transition-period).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds bounds the grace period of pods evicted
	// for a soft threshold (--eviction-max-pod-grace-period).
	MaxPodGracePeriodSeconds int64
}

// Synchronize is one pass of the kubelet's eviction manager over fresh
// observations at now: the new state (node conditions included) and the
// thresholds to act on now — met past their grace periods and observed
// anew since last pass — ordered memory first.
func Synchronize(config Config, state State, observations Observations, now time.Time) (State, []Threshold) {
	met := ThresholdsMet(config.Thresholds, observations, false)
	if len(state.ThresholdsMet) > 0 {
		met = mergeThresholds(met, ThresholdsMet(state.ThresholdsMet, observations, true))
	}

	firstObservedAt := map[thresholdKey]time.Time{}
	for _, t := range met {
		at, ok := state.firstObservedAt[keyOf(t)]
		if !ok {
			at = now
		}
		firstObservedAt[keyOf(t)] = at
	}

	lastObservedAt := map[corev1.NodeConditionType]time.Time{}
	for c, at := range state.conditionsLastObservedAt {
		lastObservedAt[c] = at
	}
	for _, c := range nodeConditions(met) {
		lastObservedAt[c] = now
	}
	var conditions []corev1.NodeConditionType
	for c, at := range lastObservedAt {
		if now.Sub(at) < config.PressureTransitionPeriod {
			conditions = append(conditions, c)
		}
	}
	sort.Slice(conditions, func(i, j int) bool { return conditions[i] < conditions[j] })

	var graced []Threshold
	for _, t := range met {
		if now.Sub(firstObservedAt[keyOf(t)]) >= t.GracePeriod {
			graced = append(graced, t)
		}
	}

	next := State{
		ThresholdsMet:            graced,
		firstObservedAt:          firstObservedAt,
		conditionsLastObservedAt: lastObservedAt,
		NodeConditions:           conditions,
		LastObservations:         observations,
	}
	act := thresholdsUpdatedStats(graced, observations, state.LastObservations)
	sort.SliceStable(act, func(i, j int) bool { return evictionPriority(act[i]) < evictionPriority(act[j]) })
	return next, act
}

// evictionPriority ranks memory's thresholds before the others, and those
// with no resource to reclaim last.
func evictionPriority(t Threshold) int {
	switch {
	case t.Signal == SignalMemoryAvailable || t.Signal == SignalAllocatableMemoryAvailable:
		return 0
	case Resource(t.Signal) != "":
		return 1
	default:
		return 2
	}
}

// thresholdsUpdatedStats keeps the thresholds whose signal was read anew
// since last pass, so that one stale reading does not evict twice.
func thresholdsUpdatedStats(thresholds []Threshold, observations, last Observations) []Threshold {
	var updated []Threshold
	for _, t := range thresholds {
		observed, ok := observations[t.Signal]
		if !ok {
			continue
		}
		previous, ok := last[t.Signal]
		if !ok || observed.Time.IsZero() || observed.Time.After(previous.Time) {
			updated = append(updated, t)
		}
	}
	return updated
}

func nodeConditions(thresholds []Threshold) []corev1.NodeConditionType {
	var results []corev1.NodeConditionType
	seen := map[corev1.NodeConditionType]bool{}
	for _, t := range thresholds {
		if c, ok := signalNodeCondition[t.Signal]; ok && !seen[c] {
			seen[c] = true
			results = append(results, c)
		}
	}
	return results
}

func mergeThresholds(a, b []Threshold) []Threshold {
	results := append([]Threshold(nil), a...)
	have := map[thresholdKey]bool{}
	for _, t := range a {
		have[keyOf(t)] = true
	}
	for _, t := range b {
		if !have[keyOf(t)] {
			have[keyOf(t)] = true
			results = append(results, t)
		}
	}
	return results
}
