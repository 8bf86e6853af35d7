package eviction

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pure tests: observations and times are given as values, as the manager
// passes them.

func observe(available, capacity string, at time.Time) Observation {
	return Observation{Available: resource.MustParse(available), Capacity: resource.MustParse(capacity), Time: at}
}

func signalsOf(thresholds []Threshold) []Signal {
	var signals []Signal
	for _, t := range thresholds {
		signals = append(signals, t.Signal)
	}
	return signals
}

func TestThresholdsMet(t *testing.T) {
	at := time.Unix(100, 0)
	memory := Threshold{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("100Mi")}, MinReclaim: &ThresholdValue{Quantity: quantity("50Mi")}}
	nodefs := Threshold{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.1}}
	for _, tc := range []struct {
		name       string
		obs        Observations
		minReclaim bool
		want       []Signal
	}{
		{name: "no observation, nothing met", obs: Observations{}},
		{name: "below the quantity is met", obs: Observations{SignalMemoryAvailable: observe("99Mi", "1Gi", at)}, want: []Signal{SignalMemoryAvailable}},
		{name: "at the quantity is not met", obs: Observations{SignalMemoryAvailable: observe("100Mi", "1Gi", at)}},
		{name: "a percentage is of the capacity", obs: Observations{SignalNodeFsAvailable: observe("9Gi", "100Gi", at)}, want: []Signal{SignalNodeFsAvailable}},
		{name: "above the percentage is not met", obs: Observations{SignalNodeFsAvailable: observe("11Gi", "100Gi", at)}},
		{name: "the minimum reclaim keeps it met", obs: Observations{SignalMemoryAvailable: observe("120Mi", "1Gi", at)}, minReclaim: true, want: []Signal{SignalMemoryAvailable}},
		{name: "past the minimum reclaim it is resolved", obs: Observations{SignalMemoryAvailable: observe("150Mi", "1Gi", at)}, minReclaim: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := signalsOf(ThresholdsMet([]Threshold{memory, nodefs}, tc.obs, tc.minReclaim))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("met signals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSynchronizeHardThresholdActsAtOnceAndConditionOutlastsIt(t *testing.T) {
	start := time.Unix(1000, 0)
	config := Config{
		Thresholds:               []Threshold{{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("100Mi")}}},
		PressureTransitionPeriod: 30 * time.Second,
	}
	steps := []struct {
		after         time.Duration
		available     string
		wantAct       []Signal
		wantCondition bool
	}{
		{after: 0, available: "500Mi"},
		{after: 10 * time.Second, available: "50Mi", wantAct: []Signal{SignalMemoryAvailable}, wantCondition: true},
		{after: 20 * time.Second, available: "500Mi", wantCondition: true},
		{after: 39 * time.Second, available: "500Mi", wantCondition: true},
		{after: 40 * time.Second, available: "500Mi"},
	}
	var state State
	for _, step := range steps {
		now := start.Add(step.after)
		var act []Threshold
		state, act = Synchronize(config, state, Observations{SignalMemoryAvailable: observe(step.available, "4Gi", now)}, now)
		if diff := cmp.Diff(step.wantAct, signalsOf(act)); diff != "" {
			t.Errorf("at +%v: thresholds acted on (-want +got):\n%s", step.after, diff)
		}
		if got := state.HasCondition(corev1.NodeMemoryPressure); got != step.wantCondition {
			t.Errorf("at +%v: MemoryPressure = %v, want %v", step.after, got, step.wantCondition)
		}
		if state.HasCondition(corev1.NodeDiskPressure) || state.HasCondition(corev1.NodePIDPressure) {
			t.Errorf("at +%v: conditions %v, want no disk or PID pressure", step.after, state.NodeConditions)
		}
	}
}

func TestSynchronizeSoftThresholdWaitsForItsGracePeriod(t *testing.T) {
	start := time.Unix(1000, 0)
	config := Config{
		Thresholds:               []Threshold{{Signal: SignalPIDAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("1000")}, GracePeriod: time.Minute}},
		PressureTransitionPeriod: 5 * time.Minute,
	}
	steps := []struct {
		after     time.Duration
		available string
		wantAct   []Signal
	}{
		{after: 0, available: "500"},
		{after: 59 * time.Second, available: "500"},
		{after: 60 * time.Second, available: "500", wantAct: []Signal{SignalPIDAvailable}},
		// Recovered, then met again: the grace period starts over.
		{after: 70 * time.Second, available: "5000"},
		{after: 80 * time.Second, available: "500"},
		{after: 139 * time.Second, available: "500"},
		{after: 140 * time.Second, available: "500", wantAct: []Signal{SignalPIDAvailable}},
	}
	var state State
	for _, step := range steps {
		now := start.Add(step.after)
		var act []Threshold
		state, act = Synchronize(config, state, Observations{SignalPIDAvailable: observe(step.available, "32768", now)}, now)
		if diff := cmp.Diff(step.wantAct, signalsOf(act)); diff != "" {
			t.Errorf("at +%v: thresholds acted on (-want +got):\n%s", step.after, diff)
		}
		// The condition is true from the first observation, grace period
		// or not, as the kubelet reports it.
		if !state.HasCondition(corev1.NodePIDPressure) {
			t.Errorf("at +%v: PIDPressure not reported", step.after)
		}
	}
}

func TestSynchronizeStaleObservationActsOnce(t *testing.T) {
	read := time.Unix(1000, 0)
	config := Config{Thresholds: []Threshold{{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.1}}}, PressureTransitionPeriod: time.Minute}
	obs := Observations{SignalNodeFsAvailable: observe("1Gi", "100Gi", read)}
	state, act := Synchronize(config, State{}, obs, read)
	if diff := cmp.Diff([]Signal{SignalNodeFsAvailable}, signalsOf(act)); diff != "" {
		t.Fatalf("first pass (-want +got):\n%s", diff)
	}
	if !state.HasCondition(corev1.NodeDiskPressure) {
		t.Errorf("DiskPressure not reported")
	}
	_, act = Synchronize(config, state, obs, read.Add(10*time.Second))
	if len(act) != 0 {
		t.Errorf("the same reading acted on again: %v", signalsOf(act))
	}
}

func TestSynchronizeOrdersMemoryFirst(t *testing.T) {
	now := time.Unix(1000, 0)
	config := Config{Thresholds: []Threshold{
		{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.1}},
		{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("100Mi")}},
	}}
	_, act := Synchronize(config, State{}, Observations{
		SignalNodeFsAvailable: observe("1Gi", "100Gi", now),
		SignalMemoryAvailable: observe("1Mi", "1Gi", now),
	}, now)
	if diff := cmp.Diff([]Signal{SignalMemoryAvailable, SignalNodeFsAvailable}, signalsOf(act)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
