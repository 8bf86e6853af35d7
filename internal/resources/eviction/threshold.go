package eviction

// Eviction thresholds: the kubelet's --eviction-hard, --eviction-soft,
// --eviction-soft-grace-period and --eviction-minimum-reclaim statements
// parsed into values, the way its pkg/kubelet/eviction does. Pure: the
// node's allocatable subtracts the hard ones today, and an eviction
// manager may watch the same thresholds later.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is what a threshold watches, named as in the kubelet's flags.
type Signal string

// The signals the kubelet knows.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalPIDAvailable               Signal = "pid.available"
)

// resourceInodes and resourcePIDs are the kubelet's names for the two
// resources a signal may watch that are not core resource names.
const (
	resourceInodes corev1.ResourceName = "inodes"
	resourcePIDs   corev1.ResourceName = "pids"
)

// signalResource is the resource each signal watches; a signal missing
// here is not one.
var signalResource = map[Signal]corev1.ResourceName{
	SignalMemoryAvailable:            corev1.ResourceMemory,
	SignalAllocatableMemoryAvailable: corev1.ResourceMemory,
	SignalNodeFsAvailable:            corev1.ResourceEphemeralStorage,
	SignalImageFsAvailable:           corev1.ResourceEphemeralStorage,
	SignalContainerFsAvailable:       corev1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           resourceInodes,
	SignalImageFsInodesFree:          resourceInodes,
	SignalContainerFsInodesFree:      resourceInodes,
	SignalPIDAvailable:               resourcePIDs,
}

// ValidSignal says whether the kubelet knows signal.
func ValidSignal(signal Signal) bool {
	_, ok := signalResource[signal]
	return ok
}

// ThresholdOperator compares a signal's observed value with a threshold.
type ThresholdOperator string

// OpLessThan is met when the observed value is below the threshold; every
// signal the kubelet knows uses it.
const OpLessThan ThresholdOperator = "LessThan"

// ThresholdValue is a quantity, or when Quantity is nil a fraction
// (0 to 1) of the resource's capacity.
type ThresholdValue struct {
	Quantity   *resource.Quantity
	Percentage float32
}

// QuantityOf is the value as a quantity of capacity.
func (v ThresholdValue) QuantityOf(capacity resource.Quantity) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*float64(v.Percentage)), resource.BinarySI)
}

// Threshold is one eviction threshold: hard when GracePeriod is zero,
// soft (met only after holding for GracePeriod) otherwise.
type Threshold struct {
	Signal      Signal
	Operator    ThresholdOperator
	Value       ThresholdValue
	GracePeriod time.Duration
	// MinReclaim is how much beyond the threshold eviction reclaims; nil
	// is nothing.
	MinReclaim *ThresholdValue
}

// Hard says whether the threshold acts at once.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// DefaultEvictionHard is the kubelet's --eviction-hard on Linux when none
// is given.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		string(SignalMemoryAvailable):   "100Mi",
		string(SignalNodeFsAvailable):   "10%",
		string(SignalNodeFsInodesFree):  "5%",
		string(SignalImageFsAvailable):  "15%",
		string(SignalImageFsInodesFree): "5%",
	}
}

// The values of --enforce-node-allocatable, the kubelet's: "pods" limits
// the pods' cgroup to allocatable (and, here, adds an allocatable memory
// threshold), "system-reserved" and "kube-reserved" limit the reserved
// cgroups to their reservations, "none" enforces nothing. They are named
// in this package, the lowest that reads them, so that the configuration's
// validation and the node's cgroups can name them from one place.
const (
	EnforcePods           = "pods"
	EnforceSystemReserved = "system-reserved"
	EnforceKubeReserved   = "kube-reserved"
	EnforceNone           = "none"
)

// ParseThresholdConfig parses the eviction statements as the kubelet's
// function of that name: signal to value maps, hard then soft thresholds
// (each soft one needs its grace period), minimum reclaims attached, and,
// when enforceNodeAllocatable holds "pods", an allocatableMemory.available
// threshold copying the hard memory.available one. A statement of 0% or
// 100% is no threshold. The result is ordered by signal within hard and
// soft, so equal configurations give equal thresholds.
func ParseThresholdConfig(enforceNodeAllocatable []string, evictionHard, evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim map[string]string) ([]Threshold, error) {
	hard, err := parseThresholdStatements(evictionHard)
	if err != nil {
		return nil, err
	}
	soft, err := parseThresholdStatements(evictionSoft)
	if err != nil {
		return nil, err
	}
	gracePeriods, err := parseGracePeriods(evictionSoftGracePeriod)
	if err != nil {
		return nil, err
	}
	minReclaims, err := parseMinimumReclaims(evictionMinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		period, ok := gracePeriods[soft[i].Signal]
		if !ok {
			return nil, fmt.Errorf("grace period must be specified for the soft eviction threshold %v", soft[i].Signal)
		}
		soft[i].GracePeriod = period
	}
	results := append(append([]Threshold(nil), hard...), soft...)
	for i := range results {
		if minReclaim, ok := minReclaims[results[i].Signal]; ok {
			results[i].MinReclaim = &minReclaim
		}
	}
	for _, key := range enforceNodeAllocatable {
		if key != EnforcePods {
			continue
		}
		for _, t := range results {
			if t.Signal == SignalMemoryAvailable && t.Hard() {
				results = append(results, Threshold{Signal: SignalAllocatableMemoryAvailable, Operator: t.Operator, Value: t.Value, MinReclaim: t.MinReclaim})
			}
		}
		break
	}
	return results, nil
}

func sortedSignals(statements map[string]string) []string {
	signals := make([]string, 0, len(statements))
	for s := range statements {
		signals = append(signals, s)
	}
	sort.Strings(signals)
	return signals
}

func parseThresholdStatements(statements map[string]string) ([]Threshold, error) {
	var results []Threshold
	for _, signal := range sortedSignals(statements) {
		t, err := parseThresholdStatement(Signal(signal), statements[signal])
		if err != nil {
			return nil, err
		}
		if t != nil {
			results = append(results, *t)
		}
	}
	return results, nil
}

func parseThresholdStatement(signal Signal, value string) (*Threshold, error) {
	if !ValidSignal(signal) {
		return nil, fmt.Errorf("unsupported eviction signal %v", signal)
	}
	if strings.HasSuffix(value, "%") {
		// 0% and 100% are the kubelet's way of turning a default off.
		if value == "0%" || value == "100%" {
			return nil, nil
		}
		percentage, err := parsePercentage(value)
		if err != nil {
			return nil, err
		}
		if percentage < 0 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be >= 0%%: %s", signal, value)
		}
		if percentage > 1 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be <= 100%%: %s", signal, value)
		}
		return &Threshold{Signal: signal, Operator: OpLessThan, Value: ThresholdValue{Percentage: percentage}}, nil
	}
	quantity, err := resource.ParseQuantity(value)
	if err != nil {
		return nil, err
	}
	if quantity.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %v must be positive: %s", signal, &quantity)
	}
	return &Threshold{Signal: signal, Operator: OpLessThan, Value: ThresholdValue{Quantity: &quantity}}, nil
}

func parsePercentage(value string) (float32, error) {
	f, err := strconv.ParseFloat(strings.TrimRight(value, "%"), 32)
	if err != nil {
		return 0, err
	}
	return float32(f) / 100, nil
}

func parseGracePeriods(statements map[string]string) (map[Signal]time.Duration, error) {
	results := map[Signal]time.Duration{}
	for signal, value := range statements {
		if !ValidSignal(Signal(signal)) {
			return nil, fmt.Errorf("unsupported eviction signal %v", signal)
		}
		period, err := time.ParseDuration(value)
		if err != nil {
			return nil, err
		}
		if period < 0 {
			return nil, fmt.Errorf("invalid eviction grace period specified: %v, must be a positive value", value)
		}
		results[Signal(signal)] = period
	}
	return results, nil
}

func parseMinimumReclaims(statements map[string]string) (map[Signal]ThresholdValue, error) {
	results := map[Signal]ThresholdValue{}
	for signal, value := range statements {
		if !ValidSignal(Signal(signal)) {
			return nil, fmt.Errorf("unsupported eviction signal %v", signal)
		}
		if strings.HasSuffix(value, "%") {
			percentage, err := parsePercentage(value)
			if err != nil {
				return nil, err
			}
			if percentage <= 0 {
				return nil, fmt.Errorf("eviction percentage minimum reclaim %v must be positive: %s", signal, value)
			}
			results[Signal(signal)] = ThresholdValue{Percentage: percentage}
			continue
		}
		quantity, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, err
		}
		if quantity.Sign() < 0 {
			return nil, fmt.Errorf("negative eviction minimum reclaim specified for %v", signal)
		}
		results[Signal(signal)] = ThresholdValue{Quantity: &quantity}
	}
	return results, nil
}

// HardEvictionReservation is what the hard thresholds keep from pods, as
// the kubelet reserves it from allocatable: memory.available's of memory
// and nodefs.available's of ephemeral storage, percentages taken of
// capacity.
func HardEvictionReservation(thresholds []Threshold, capacity corev1.ResourceList) corev1.ResourceList {
	reserved := corev1.ResourceList{}
	for _, t := range thresholds {
		if t.Operator != OpLessThan || !t.Hard() {
			continue
		}
		var name corev1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = corev1.ResourceMemory
		case SignalNodeFsAvailable:
			name = corev1.ResourceEphemeralStorage
		default:
			continue
		}
		reserved[name] = t.Value.QuantityOf(capacity[name])
	}
	return reserved
}
