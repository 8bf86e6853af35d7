package v1alpha1

import (
	"fmt"
	"path"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodelet/nodelet/internal/resources/eviction"
)

// ResourcePID is the reservable resource of process IDs, the kubelet's
// "pid".
const ResourcePID = "pid"

// ParseReservation reads SystemReserved or KubeReserved as the kubelet
// does: cpu, memory, ephemeral-storage and pid, each a quantity that is
// not negative.
func ParseReservation(reserved map[string]string) (map[string]resource.Quantity, error) {
	if len(reserved) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(reserved))
	for name := range reserved {
		names = append(names, name)
	}
	sort.Strings(names)
	result := map[string]resource.Quantity{}
	for _, name := range names {
		value := reserved[name]
		switch name {
		case "cpu", "memory", "ephemeral-storage", ResourcePID:
		default:
			return nil, fmt.Errorf("cannot reserve %q resource", name)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("failed to parse quantity %q for %q resource: %w", value, name, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resource quantity for %q cannot be negative: %v", name, value)
		}
		result[name] = q
	}
	return result, nil
}

// validateNodeAllocatable checks the reservations, the hard eviction
// thresholds and the enforcement levels, with the kubelet's messages.
func validateNodeAllocatable(c *NodeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	if _, err := ParseReservation(c.SystemReserved); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("systemReserved"), c.SystemReserved, err.Error()))
	}
	if _, err := ParseReservation(c.KubeReserved); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("kubeReserved"), c.KubeReserved, err.Error()))
	}
	errs = append(errs, validateEviction(c)...)
	for _, level := range []struct{ key, cgroup, field, flag string }{
		{eviction.EnforceSystemReserved, c.SystemReservedCgroup, "systemReservedCgroup", "--system-reserved-cgroup"},
		{eviction.EnforceKubeReserved, c.KubeReservedCgroup, "kubeReservedCgroup", "--kube-reserved-cgroup"},
	} {
		switch {
		case level.cgroup == "" && slices.Contains(c.EnforceNodeAllocatable, level.key):
			errs = append(errs, field.Required(field.NewPath(level.field), fmt.Sprintf("%s (%s) must be specified when %q included in enforceNodeAllocatable (--enforce-node-allocatable)", level.field, level.flag, level.key)))
		case level.cgroup != "" && !isCgroupName(level.cgroup):
			errs = append(errs, field.Invalid(field.NewPath(level.field), level.cgroup, "must be a clean absolute cgroup name, such as /system.slice"))
		}
	}
	path := field.NewPath("enforceNodeAllocatable")
	seen := map[string]bool{}
	for i, value := range c.EnforceNodeAllocatable {
		if seen[value] {
			errs = append(errs, field.Invalid(path.Index(i), value, fmt.Sprintf("duplicated enforcements %q in enforceNodeAllocatable (--enforce-node-allocatable)", value)))
			continue
		}
		seen[value] = true
		switch value {
		case eviction.EnforcePods, eviction.EnforceSystemReserved, eviction.EnforceKubeReserved:
		case eviction.EnforceNone:
			if len(c.EnforceNodeAllocatable) > 1 {
				errs = append(errs, field.Invalid(path.Index(i), value, fmt.Sprintf("enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when %q is specified", eviction.EnforceNone)))
			}
		default:
			errs = append(errs, field.NotSupported(path.Index(i), value, []string{eviction.EnforcePods, eviction.EnforceSystemReserved, eviction.EnforceKubeReserved, eviction.EnforceNone}))
		}
	}
	return errs
}

// validateEviction checks the eviction thresholds as the kubelet parses
// them, each error named by the field that holds what is wrong.
func validateEviction(c *NodeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	invalid := func(name string, value map[string]string, err error) {
		errs = append(errs, field.Invalid(field.NewPath(name), value, err.Error()))
	}
	if _, err := eviction.ParseThresholdConfig(nil, c.EvictionHard, nil, nil, nil); err != nil {
		invalid("evictionHard", c.EvictionHard, err)
	}
	if _, err := eviction.ParseThresholdConfig(nil, nil, nil, nil, c.EvictionMinimumReclaim); err != nil {
		invalid("evictionMinimumReclaim", c.EvictionMinimumReclaim, err)
	}
	// The soft thresholds are read with their grace periods, which each
	// of them needs.
	if _, err := eviction.ParseThresholdConfig(nil, nil, nil, c.EvictionSoftGracePeriod, nil); err != nil {
		invalid("evictionSoftGracePeriod", c.EvictionSoftGracePeriod, err)
	} else if _, err := eviction.ParseThresholdConfig(nil, nil, c.EvictionSoft, c.EvictionSoftGracePeriod, nil); err != nil {
		invalid("evictionSoft", c.EvictionSoft, err)
	}
	return errs
}

// validateImageGC checks the image garbage collection settings, with the
// kubelet's messages.
func validateImageGC(c *NodeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	high, low := derefInt32(c.ImageGCHighThresholdPercent), derefInt32(c.ImageGCLowThresholdPercent)
	if high < 0 || high > 100 {
		errs = append(errs, field.Invalid(field.NewPath("imageGCHighThresholdPercent"), high, "imageGCHighThresholdPercent (--image-gc-high-threshold) must be between 0 and 100, inclusive"))
	}
	if low < 0 || low > 100 {
		errs = append(errs, field.Invalid(field.NewPath("imageGCLowThresholdPercent"), low, "imageGCLowThresholdPercent (--image-gc-low-threshold) must be between 0 and 100, inclusive"))
	}
	if low >= high {
		errs = append(errs, field.Invalid(field.NewPath("imageGCLowThresholdPercent"), low, fmt.Sprintf("imageGCLowThresholdPercent (--image-gc-low-threshold) %d must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %d", low, high)))
	}
	minAge, maxAge := c.ImageMinimumGCAge.Duration, c.ImageMaximumGCAge.Duration
	if minAge < 0 {
		errs = append(errs, field.Invalid(field.NewPath("imageMinimumGCAge"), minAge.String(), "imageMinimumGCAge must not be negative"))
	}
	if maxAge < 0 {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), maxAge.String(), "imageMaximumGCAge must not be negative"))
	}
	if maxAge > 0 && maxAge <= minAge {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), maxAge.String(), fmt.Sprintf("imageMaximumGCAge %v must be greater than imageMinimumGCAge %v", maxAge, minAge)))
	}
	return errs
}

func derefInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// isCgroupName: a cgroup named as the kubelet's cgroupfs driver names one,
// a clean absolute path.
func isCgroupName(name string) bool {
	return path.IsAbs(name) && path.Clean(name) == name
}
