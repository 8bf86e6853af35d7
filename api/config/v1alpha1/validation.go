package v1alpha1

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodelet/nodelet/internal/resources/admission"
)

// Validate checks a defaulted configuration, returning every bad field by
// its path in the file.
func Validate(c *NodeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	positive := func(path *field.Path, d metav1.Duration) {
		if d.Duration <= 0 {
			errs = append(errs, field.Invalid(path, d.Duration.String(), "must be positive"))
		}
	}
	if c.ContainerRuntimeEndpoint == "" {
		errs = append(errs, field.Required(field.NewPath("containerRuntimeEndpoint"), ""))
	}
	positive(field.NewPath("runtimeRequestTimeout"), c.RuntimeRequestTimeout)
	if c.KubeAPIQPS != nil && *c.KubeAPIQPS < 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeAPIQPS"), *c.KubeAPIQPS, "must not be negative"))
	}
	if c.KubeAPIBurst < 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeAPIBurst"), c.KubeAPIBurst, "must not be negative"))
	}
	if c.RootDir == "" {
		errs = append(errs, field.Required(field.NewPath("rootDir"), ""))
	}
	switch c.CgroupDriver {
	case CgroupDriverCgroupfs, CgroupDriverSystemd:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("cgroupDriver"), c.CgroupDriver, []string{CgroupDriverCgroupfs, CgroupDriverSystemd}))
	}
	for i, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(field.NewPath("clusterDNS").Index(i), ip, "must be an IP address"))
		}
	}
	for i, sysctl := range c.AllowedUnsafeSysctls {
		path := field.NewPath("allowedUnsafeSysctls").Index(i)
		if name := strings.TrimSuffix(sysctl, "*"); name == "" || strings.ContainsAny(name, "* \t") {
			errs = append(errs, field.Invalid(path, sysctl, "must be a sysctl name or a prefix of one ending in *"))
		} else if err := admission.ValidateSysctlPatterns([]string{sysctl}); err != nil {
			// Pod admission's own check: the kubelet's pattern, and a
			// sysctl of a known kernel namespace.
			errs = append(errs, field.Invalid(path, sysctl, err.Error()))
		}
	}

	switch c.NetworkMode {
	case NetworkModeRuntime, NetworkModeAgent:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("networkMode"), c.NetworkMode, []string{NetworkModeRuntime, NetworkModeAgent}))
	}
	if c.PodCIDR != "" {
		for _, cidr := range strings.Split(c.PodCIDR, ",") {
			if _, _, err := net.ParseCIDR(cidr); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("podCIDR"), c.PodCIDR, "must be CIDRs separated by commas"))
				break
			}
		}
	}
	positive(field.NewPath("cniCheckPeriod"), c.CNICheckPeriod)

	positive(field.NewPath("relistPeriod"), c.RelistPeriod)
	if c.ConcurrentReconciles < 1 {
		errs = append(errs, field.Invalid(field.NewPath("concurrentReconciles"), c.ConcurrentReconciles, "must be at least 1"))
	}
	if c.ParallelSandboxStarts < 0 {
		errs = append(errs, field.Invalid(field.NewPath("parallelSandboxStarts"), c.ParallelSandboxStarts, "must not be negative"))
	}
	if c.MaxPods < 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxPods"), c.MaxPods, "must be at least 1"))
	}
	positive(field.NewPath("nodeStatusUpdateFrequency"), c.NodeStatusUpdateFrequency)
	if c.SlowPodStartThreshold != nil && c.SlowPodStartThreshold.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("slowPodStartThreshold"), c.SlowPodStartThreshold.Duration.String(), "must not be negative"))
	}
	errs = append(errs, validateTaints(field.NewPath("registerWithTaints"), c.RegisterWithTaints)...)
	positive(field.NewPath("fileCheckFrequency"), c.FileCheckFrequency)
	positive(field.NewPath("httpCheckFrequency"), c.HTTPCheckFrequency)
	if c.StaticPodURL != "" {
		if u, err := url.Parse(c.StaticPodURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(field.NewPath("staticPodURL"), c.StaticPodURL, "must be an http or https URL"))
		}
	}
	for name := range c.StaticPodURLHeader {
		if !validHeaderName(name) {
			errs = append(errs, field.Invalid(field.NewPath("staticPodURLHeader").Key(name), name, "must be an HTTP header name"))
		}
	}
	errs = append(errs, validateNodeAllocatable(c)...)
	errs = append(errs, validateImageGC(c)...)
	errs = append(errs, validateShutdown(c)...)

	if net.ParseIP(c.Address) == nil {
		errs = append(errs, field.Invalid(field.NewPath("address"), c.Address, "must be an IP address"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, field.Invalid(field.NewPath("port"), c.Port, "must be between 1 and 65535"))
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		errs = append(errs, field.Invalid(field.NewPath("tlsPrivateKeyFile"), c.TLSPrivateKeyFile, "tlsCertFile and tlsPrivateKeyFile go together"))
	}
	authn := field.NewPath("authentication")
	positive(authn.Child("webhook", "cacheTTL"), c.Authentication.Webhook.CacheTTL)
	authz := field.NewPath("authorization")
	switch c.Authorization.Mode {
	case AuthorizationModeWebhook, AuthorizationModeAlwaysAllow:
	default:
		errs = append(errs, field.NotSupported(authz.Child("mode"), c.Authorization.Mode, []string{AuthorizationModeWebhook, AuthorizationModeAlwaysAllow}))
	}
	positive(authz.Child("webhook", "cacheAuthorizedTTL"), c.Authorization.Webhook.CacheAuthorizedTTL)
	positive(authz.Child("webhook", "cacheUnauthorizedTTL"), c.Authorization.Webhook.CacheUnauthorizedTTL)

	if size, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMaxSize"), c.ContainerLogMaxSize, "must be a quantity such as 10Mi"))
	} else if size.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMaxSize"), c.ContainerLogMaxSize, "must not be negative"))
	}
	if c.ContainerLogMaxFiles != nil && *c.ContainerLogMaxFiles < 2 {
		errs = append(errs, field.Invalid(field.NewPath("containerLogMaxFiles"), *c.ContainerLogMaxFiles, "must be at least 2"))
	}
	positive(field.NewPath("containerLogMonitorInterval"), c.ContainerLogMonitorInterval)

	if c.HealthzPort != nil && (*c.HealthzPort < 0 || *c.HealthzPort > 65535) {
		errs = append(errs, field.Invalid(field.NewPath("healthzPort"), *c.HealthzPort, "must be between 0 and 65535"))
	}
	if c.HealthzPort != nil && *c.HealthzPort != 0 && net.ParseIP(c.HealthzBindAddress) == nil {
		errs = append(errs, field.Invalid(field.NewPath("healthzBindAddress"), c.HealthzBindAddress, "must be an IP address"))
	}

	if c.TimerSlack != nil && c.TimerSlack.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("timerSlack"), c.TimerSlack.Duration.String(), "must be 0 (the kernel's) or more"))
	}
	// A negative percent turns the collector off: the heap would grow
	// until the node ran out of memory.
	if c.GCPercent != nil && *c.GCPercent < 0 {
		errs = append(errs, field.Invalid(field.NewPath("gcPercent"), *c.GCPercent, "must be 0 (the Go runtime's) or more"))
	}
	return errs
}

// validateShutdown checks the graceful shutdown's settings as the kubelet
// does (with GracefulNodeShutdown and GracefulNodeShutdownBasedOnPodPriority
// on): whole seconds or zero, the critical pods' part within the whole,
// the two forms apart; and no band of a negative length.
func validateShutdown(c *NodeletConfiguration) field.ErrorList {
	var errs field.ErrorList
	total, critical := c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration
	if critical > total {
		errs = append(errs, field.Invalid(field.NewPath("shutdownGracePeriodCriticalPods"), critical.String(),
			fmt.Sprintf("must be <= shutdownGracePeriod %v", total)))
	}
	for name, d := range map[string]time.Duration{"shutdownGracePeriod": total, "shutdownGracePeriodCriticalPods": critical} {
		if d < 0 || (d > 0 && d < time.Second) {
			errs = append(errs, field.Invalid(field.NewPath(name), d.String(), "must be either zero or otherwise >= 1 sec"))
		}
	}
	byPriority := field.NewPath("shutdownGracePeriodByPodPriority")
	if len(c.ShutdownGracePeriodByPodPriority) != 0 && (total > 0 || critical > 0) {
		errs = append(errs, field.Forbidden(byPriority, "cannot be specified with shutdownGracePeriod or shutdownGracePeriodCriticalPods"))
	}
	for i, band := range c.ShutdownGracePeriodByPodPriority {
		if band.ShutdownGracePeriodSeconds < 0 {
			errs = append(errs, field.Invalid(byPriority.Index(i).Child("shutdownGracePeriodSeconds"), band.ShutdownGracePeriodSeconds, "must not be negative"))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

// validateTaints checks the taints the Node registers with as the API
// server would check the Node: each one valid, no two of the same key and
// effect.
func validateTaints(path *field.Path, taints []corev1.Taint) field.ErrorList {
	var errs field.ErrorList
	for i, taint := range taints {
		if err := ValidateTaint(taint); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), taint.ToString(), err.Error()))
			continue
		}
		for _, earlier := range taints[:i] {
			if earlier.Key == taint.Key && earlier.Effect == taint.Effect {
				errs = append(errs, field.Duplicate(path.Index(i), taint.ToString()))
				break
			}
		}
	}
	return errs
}

// ValidateTaint checks one taint a Node registers with: a qualified key, a
// label value (or none) and one of the effects NoSchedule,
// PreferNoSchedule and NoExecute.
func ValidateTaint(taint corev1.Taint) error {
	switch taint.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("unsupported taint effect %q", taint.Effect)
	}
	if errs := validation.IsQualifiedName(taint.Key); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", taint.Key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(taint.Value); len(errs) > 0 {
		return fmt.Errorf("value %q: %s", taint.Value, strings.Join(errs, "; "))
	}
	return nil
}

// validHeaderName reports whether name is an HTTP header name: one or more
// of the token characters of RFC 9110.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}
