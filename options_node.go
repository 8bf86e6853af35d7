package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	corev1 "k8s.io/api/core/v1"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/resources/eviction"
	"github.com/nodelet/nodelet/internal/resources/imagegc"
)

// allocatableConfig is what the options keep from pods: the
// reservations, the hard eviction thresholds and the enforcement levels.
// The Node's allocatable and the pods' cgroup limits
// (AllocatableConfig.PodsCgroupLimits) are computed from it.
func (o *Options) allocatableConfig() (node.AllocatableConfig, error) {
	systemReserved, err := reservation(o.SystemReserved)
	if err != nil {
		return node.AllocatableConfig{}, fmt.Errorf("--system-reserved: %w", err)
	}
	kubeReserved, err := reservation(o.KubeReserved)
	if err != nil {
		return node.AllocatableConfig{}, fmt.Errorf("--kube-reserved: %w", err)
	}
	thresholds, err := o.evictionThresholds()
	if err != nil {
		return node.AllocatableConfig{}, err
	}
	var hard []eviction.Threshold
	for _, t := range thresholds {
		if t.Hard() {
			hard = append(hard, t)
		}
	}
	return node.AllocatableConfig{
		SystemReserved:         systemReserved,
		KubeReserved:           kubeReserved,
		HardEvictionThresholds: hard,
		EnforceNodeAllocatable: slices.Clone(o.EnforceNodeAllocatable),
		SystemReservedCgroup:   o.SystemReservedCgroup,
		KubeReservedCgroup:     o.KubeReservedCgroup,
	}, nil
}

func reservation(reserved map[string]string) (corev1.ResourceList, error) {
	parsed, err := configv1alpha1.ParseReservation(reserved)
	if err != nil {
		return nil, err
	}
	list := corev1.ResourceList{}
	for name, q := range parsed {
		list[corev1.ResourceName(name)] = q
	}
	return list, nil
}

// imageGCPolicy is the image garbage collection the options ask for.
func (o *Options) imageGCPolicy() imagegc.Policy {
	return imagegc.Policy{
		HighThresholdPercent: int(o.ImageGCHighThresholdPercent),
		LowThresholdPercent:  int(o.ImageGCLowThresholdPercent),
		MinAge:               o.ImageMinimumGCAge.Duration,
		MaxAge:               o.ImageMaximumGCAge.Duration,
	}
}

// mapFlag is a flag of comma-separated key<sep>value pairs into a map, as
// the kubelet's --system-reserved (sep "=") and --eviction-hard (sep
// "<"): the first time it is given it replaces the default whole, a flag
// given again adds to it.
type mapFlag struct {
	m   *map[string]string
	sep string
	set bool
}

func newMapFlag(m *map[string]string, sep string) *mapFlag { return &mapFlag{m: m, sep: sep} }

func (f *mapFlag) String() string {
	if f.m == nil || *f.m == nil {
		return ""
	}
	keys := slices.Sorted(maps.Keys(*f.m))
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+f.sep+(*f.m)[k])
	}
	return strings.Join(pairs, ",")
}

func (f *mapFlag) Set(value string) error {
	if !f.set {
		*f.m = map[string]string{}
		f.set = true
	}
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, f.sep)
		if !ok {
			return fmt.Errorf("malformed pair %q, expect key%svalue", pair, f.sep)
		}
		(*f.m)[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

func (f *mapFlag) Type() string { return "mapStringString" }

// defaultEvictionPressureTransitionPeriod is the kubelet's
// --eviction-pressure-transition-period.
const defaultEvictionPressureTransitionPeriod = 5 * time.Minute

func (o *Options) bindEvictionFlags(fs *pflag.FlagSet) {
	fs.Var(newMapFlag(&o.EvictionSoft, "<"), "eviction-soft", "Soft eviction thresholds, as --eviction-hard; each acts once met for its --eviction-soft-grace-period.")
	fs.Var(newMapFlag(&o.EvictionSoftGracePeriod, "="), "eviction-soft-grace-period", "How long each soft eviction threshold must be met before pods are evicted, signal=duration (e.g. memory.available=1m30s).")
	fs.Var(newMapFlag(&o.EvictionMinimumReclaim, "="), "eviction-minimum-reclaim", "How much beyond a threshold eviction reclaims before the pressure ends, signal=quantity or percentage (e.g. memory.available=0Mi,nodefs.available=500Mi).")
	fs.DurationVar(&o.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", o.EvictionPressureTransitionPeriod, "How long a pressure condition stays true after its threshold was last met.")
	fs.Int64Var(&o.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", o.EvictionMaxPodGracePeriod, "The longest grace period (seconds) of a pod evicted for a soft threshold; a hard threshold's get 1s.")
}

// evictionThresholds are the hard and soft eviction thresholds.
func (o *Options) evictionThresholds() ([]eviction.Threshold, error) {
	thresholds, err := eviction.ParseThresholdConfig(o.EnforceNodeAllocatable, o.EvictionHard, o.EvictionSoft, o.EvictionSoftGracePeriod, o.EvictionMinimumReclaim)
	if err != nil {
		return nil, fmt.Errorf("eviction thresholds: %w", err)
	}
	return thresholds, nil
}

// evictionConfig is the eviction manager's configuration.
func (o *Options) evictionConfig() (eviction.Config, error) {
	thresholds, err := o.evictionThresholds()
	if err != nil {
		return eviction.Config{}, err
	}
	return eviction.Config{
		Thresholds:               thresholds,
		PressureTransitionPeriod: o.EvictionPressureTransitionPeriod,
		MaxPodGracePeriodSeconds: o.EvictionMaxPodGracePeriod,
	}, nil
}
