package admission

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// safeSysctl is a sysctl the kubelet lets every pod set: namespaced, and
// unable to harm the node or other pods. Some became namespaced in a given
// kernel version, and are safe only from it on.
type safeSysctl struct {
	name      string
	minKernel string
}

// The kubelet's list (pkg/kubelet/sysctl/safe_sysctls.go).
var safeSysctlList = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", minKernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", minKernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", minKernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", minKernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", minKernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", minKernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", minKernel: "4.15"},
}

// safeSysctls are the sysctls safe on a kernel of the given release; of an
// unknown or unreadable release, only those safe on every kernel.
func safeSysctls(kernelRelease string) []string {
	kernel, err := version.ParseGeneric(strings.TrimSpace(kernelRelease))
	if err != nil {
		kernel = nil
	}
	var names []string
	for _, s := range safeSysctlList {
		if s.minKernel == "" || (kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.minKernel))) {
			names = append(names, s.name)
		}
	}
	return names
}

// sysctlPattern is what --allowed-unsafe-sysctls accepts: dot- or
// slash-separated segments, the last of which may end in '*'. The
// kubelet's pattern check (policy validation's IsValidSysctlPattern).
const sysctlPatternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`

var sysctlPattern = regexp.MustCompile("^" + sysctlPatternFmt + "$")

const sysctlMaxLength = 253

// ValidateSysctlPatterns checks --allowed-unsafe-sysctls as the kubelet
// does at start: each must be a valid pattern of a sysctl known to be
// namespaced (net.*, the IPC ones), since only those can be set for one
// pod alone.
func ValidateSysctlPatterns(patterns []string) error {
	_, err := newSysctlAllowlist(patterns)
	return err
}

// sysctlAllowlist is the kubelet's pattern allowlist: exact names and
// prefixes (a pattern ending in '*'), each with its kernel namespace.
type sysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

func newSysctlAllowlist(patterns []string) (*sysctlAllowlist, error) {
	w := &sysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > sysctlMaxLength || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPatternFmt)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.names[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// admit refuses a pod that sets a sysctl the list does not allow, or a
// namespaced one of a namespace it shares with the host (a net.* sysctl
// with hostNetwork would change the node's own).
func (w *sysctlAllowlist) admit(pod *corev1.Pod) Result {
	if pod.Spec.SecurityContext == nil {
		return Result{Admit: true}
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return Result{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return Result{Admit: true}
}

func (w *sysctlAllowlist) check(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	hostShared := func(ns utilsysctl.Namespace) error {
		if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) {
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		return nil
	}
	if ns, ok := w.names[name]; ok {
		return hostShared(ns)
	}
	for prefix, ns := range w.prefixes {
		if strings.HasPrefix(name, prefix) {
			return hostShared(ns)
		}
	}
	return fmt.Errorf("%q not allowlisted", name)
}
