package runtime

import (
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// generateSandboxConfig maps a pod to the runtime's sandbox configuration:
// identity, hostname, DNS, log folder, host ports and the Linux settings
// shared by all its containers. Bad input is an error, never a panic.
func (m *Manager) generateSandboxConfig(pod *corev1.Pod, attempt uint32, env *PodEnv) (*runtimeapi.PodSandboxConfig, error) {
	if env == nil {
		env = &PodEnv{}
	}
	config := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: podLogDir(m.config.PodLogDir, pod.Namespace, pod.Name, pod.UID),
		Labels:       newSandboxLabels(pod),
		Annotations:  newSandboxAnnotations(pod),
	}

	// A host-network pod has the node's hostname; the runtime keeps it.
	if !pod.Spec.HostNetwork {
		hostname, domain, err := podHostnameAndDomain(pod, m.config.ClusterDNS.Domain)
		if err != nil {
			return nil, err
		}
		if config.Hostname, err = kernelHostname(hostname, domain, pod.Spec.SetHostnameAsFQDN); err != nil {
			return nil, err
		}
	}

	dns, err := m.dnsConfig(pod)
	if err != nil {
		return nil, err
	}
	config.DnsConfig = dns

	if config.PortMappings, err = PortMappings(pod); err != nil {
		return nil, err
	}

	security, err := sandboxSecurityContext(pod, env.userNamespace)
	if err != nil {
		return nil, err
	}
	config.Linux = &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    env.CgroupParent,
		SecurityContext: security,
		Sysctls:         podSysctls(pod),
	}
	return config, nil
}

// podLogDir is the folder of a pod's container logs:
// <root>/<namespace>_<name>_<uid>, the kubelet's layout that log shippers
// parse.
func podLogDir(root, namespace, name string, uid types.UID) string {
	return filepath.Join(root, strings.Join([]string{namespace, name, string(uid)}, "_"))
}

// PortMappings are the pod's host ports (podutil.HostPorts) as the runtime
// maps them.
func PortMappings(pod *corev1.Pod) ([]*runtimeapi.PortMapping, error) {
	var mappings []*runtimeapi.PortMapping
	for _, port := range podutil.HostPorts(pod) {
		protocol, err := runtimeProtocol(port.Protocol)
		if err != nil {
			return nil, fmt.Errorf("host port %d (container port %d): %w", port.HostPort, port.ContainerPort, err)
		}
		mappings = append(mappings, &runtimeapi.PortMapping{
			Protocol:      protocol,
			ContainerPort: port.ContainerPort,
			HostPort:      port.HostPort,
			HostIp:        port.HostIP,
		})
	}
	return mappings, nil
}

func runtimeProtocol(protocol corev1.Protocol) (runtimeapi.Protocol, error) {
	switch protocol {
	case corev1.ProtocolTCP:
		return runtimeapi.Protocol_TCP, nil
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP, nil
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP, nil
	}
	return 0, fmt.Errorf("unknown protocol %q", protocol)
}

// namespaceOptions are the Linux namespaces of the pod's sandbox, and of
// every container in it; userNs is the pod's user namespace (nil: the
// host's).
func namespaceOptions(pod *corev1.Pod, userNs *runtimeapi.UserNamespace) *runtimeapi.NamespaceOption {
	options := &runtimeapi.NamespaceOption{
		Network:       runtimeapi.NamespaceMode_POD,
		Pid:           runtimeapi.NamespaceMode_CONTAINER,
		Ipc:           runtimeapi.NamespaceMode_POD,
		UsernsOptions: userNs,
	}
	if pod.Spec.HostNetwork {
		options.Network = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		options.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		options.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		options.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return options
}

// sandboxSecurityContext carries the pod-level security settings that
// apply to the sandbox itself.
func sandboxSecurityContext(pod *corev1.Pod, userNs *runtimeapi.UserNamespace) (*runtimeapi.LinuxSandboxSecurityContext, error) {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: namespaceOptions(pod, userNs),
		// The runtime needs a privileged sandbox to run privileged
		// containers in it.
		Privileged: hasPrivilegedContainer(pod),
		// The sandbox's own process is the runtime's; confining it costs
		// nothing and lets pods choose least-privileged profiles.
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc, nil
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	sc.SupplementalGroups = podSupplementalGroups(psc)
	policy, err := supplementalGroupsPolicy(psc)
	if err != nil {
		return nil, err
	}
	sc.SupplementalGroupsPolicy = policy
	sc.SelinuxOptions = runtimeSELinuxOptions(psc.SELinuxOptions)
	return sc, nil
}

// podSupplementalGroups are the fsGroup, then the supplemental groups, as
// the kubelet orders them.
func podSupplementalGroups(psc *corev1.PodSecurityContext) []int64 {
	if psc == nil {
		return nil
	}
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return append(groups, psc.SupplementalGroups...)
}

func supplementalGroupsPolicy(psc *corev1.PodSecurityContext) (runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil || psc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	value, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(value), nil
}

func runtimeSELinuxOptions(opts *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if opts == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: opts.User, Role: opts.Role, Type: opts.Type, Level: opts.Level}
}

func podSysctls(pod *corev1.Pod) map[string]string {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	sysctls := make(map[string]string, len(pod.Spec.SecurityContext.Sysctls))
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		// As the kubelet: net/ipv4/ip_forward is net.ipv4.ip_forward.
		sysctls[utilsysctl.NormalizeName(s.Name)] = s.Value
	}
	return sysctls
}

func hasPrivilegedContainer(pod *corev1.Pod) bool {
	privileged := func(c *corev1.Container) bool {
		return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if privileged(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if privileged(&pod.Spec.Containers[i]) {
			return true
		}
	}
	// An ephemeral container added later is created against the sandbox
	// config made then, which must allow it.
	for i := range pod.Spec.EphemeralContainers {
		if privileged((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return true
		}
	}
	return false
}

// containerRef points an event at one container of the pod, as
// `kubectl describe pod` expects it: spec.containers{name} or
// spec.initContainers{name}.
func containerRef(pod *corev1.Pod, container *corev1.Container) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		Kind:            "Pod",
		APIVersion:      "v1",
		Namespace:       pod.Namespace,
		Name:            pod.Name,
		UID:             pod.UID,
		ResourceVersion: pod.ResourceVersion,
		FieldPath:       containerFieldPath(pod, container.Name),
	}
}

func containerFieldPath(pod *corev1.Pod, name string) string {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return fmt.Sprintf("spec.containers{%s}", name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	// As the kubelet names containers it starts on its own.
	return "implicitly required container " + name
}
