package runtime

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The pod's hostname and domain, and the /etc/hosts its containers get, as
// the kubelet makes them.

const (
	// etcHostsPath is where containers find their hosts file.
	etcHostsPath = "/etc/hosts"
	// defaultHostsFile is the node's hosts file, read when Config.HostsFile
	// is empty.
	defaultHostsFile = "/etc/hosts"
	// hostsFileName is the pod's hosts file in its folder, the kubelet's
	// name: <root-dir>/pods/<uid>/etc-hosts.
	hostsFileName = "etc-hosts"

	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"

	// maxHostnameLength is the kernel's limit on a hostname: 64 bytes
	// with the final NUL.
	maxHostnameLength = 63
	// maxFQDNLength is the limit on a hostname that is the pod's FQDN
	// (setHostnameAsFQDN), the kubelet's: the kernel's nodename field.
	maxFQDNLength = 64
)

// podHostnameAndDomain are the pod's hostname and DNS domain:
// hostnameOverride (with no domain), else spec.hostname, else the pod's
// name, cut to the kernel's limit; with a subdomain, the domain is
// <subdomain>.<namespace>.svc.<cluster domain>, which a headless Service
// named after the subdomain makes resolvable.
func podHostnameAndDomain(pod *corev1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if pod.Spec.HostnameOverride != nil {
		hostname := *pod.Spec.HostnameOverride
		if msgs := validation.IsDNS1123Subdomain(hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", hostname, strings.Join(msgs, ";"))
		}
		hostname, err := truncateHostname(pod.Name, hostname)
		return hostname, "", err
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// truncateHostname cuts a long hostname (pod names may be 253 characters)
// and drops the '-' and '.' that a hostname cannot end with.
func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= maxHostnameLength {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:maxHostnameLength], "-.")
	if truncated == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return truncated, nil
}

// kernelHostname is the hostname the sandbox is given: the pod's FQDN when
// it asks for it (setHostnameAsFQDN) and has a domain, else its hostname.
// An FQDN the kernel cannot hold is an error, not cut: the pod asked for
// that name.
func kernelHostname(hostname, domain string, setHostnameAsFQDN *bool) (string, error) {
	if domain == "" || setHostnameAsFQDN == nil || !*setHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > maxFQDNLength {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxFQDNLength, len(fqdn))
	}
	return fqdn, nil
}

// shouldMountHostsFile tells whether the pod's containers get nodelet's
// hosts file: a pod on its own network once its IPs are known, a pod on
// the host's network always.
func shouldMountHostsFile(pod *corev1.Pod, podIPs []string) bool {
	return len(podIPs) > 0 || pod.Spec.HostNetwork
}

// mountsEtcHosts tells whether the container mounts a volume of its own at
// /etc/hosts, which it then keeps.
func mountsEtcHosts(container *corev1.Container) bool {
	for _, vm := range container.VolumeMounts {
		if vm.MountPath == etcHostsPath {
			return true
		}
	}
	return false
}

// managedHostsFileContent is the hosts file of a pod on its own network:
// the localhost entries, each pod IP with the pod's FQDN (when it has a
// domain) and hostname, then the pod's hostAliases.
func managedHostsFileContent(podIPs []string, hostname, domain string, hostAliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(hostAliases))
	return b.Bytes()
}

// nodeHostsFileContent is the hosts file of a pod on the host's network:
// the node's own, then the pod's hostAliases.
func nodeHostsFileContent(nodeHosts []byte, hostAliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderWithHostNetwork)
	b.Write(nodeHosts)
	b.Write(hostAliasEntries(hostAliases))
	return b.Bytes()
}

// hostAliasEntries are the lines of the pod's hostAliases, one per IP with
// all its names.
func hostAliasEntries(hostAliases []corev1.HostAlias) []byte {
	if len(hostAliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, alias := range hostAliases {
		fmt.Fprintf(&b, "%s\t%s\n", alias.IP, strings.Join(alias.Hostnames, "\t"))
	}
	return b.Bytes()
}

// hostsMount writes the pod's hosts file into its folder and mounts it at
// /etc/hosts, unless the container mounts something there itself or the
// pod's IPs are not known yet. The file is written at every container's
// creation, as the kubelet does: a later container sees the pod's current
// IPs, and undoes what an earlier one changed in it.
func (m *Manager) hostsMount(pod *corev1.Pod, container *corev1.Container, podIPs []string, podDir string) (*runtimeapi.Mount, error) {
	if podDir == "" || !shouldMountHostsFile(pod, podIPs) || mountsEtcHosts(container) {
		return nil, nil
	}
	hostname, domain, err := podHostnameAndDomain(pod, m.config.ClusterDNS.Domain)
	if err != nil {
		return nil, err
	}
	var content []byte
	if pod.Spec.HostNetwork {
		path := m.config.HostsFile
		if path == "" {
			path = defaultHostsFile
		}
		nodeHosts, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the node's hosts file: %w", err)
		}
		content = nodeHostsFileContent(nodeHosts, pod.Spec.HostAliases)
	} else {
		content = managedHostsFileContent(podIPs, hostname, domain, pod.Spec.HostAliases)
	}
	path := filepath.Join(podDir, hostsFileName)
	if err := ensureHostsFile(path, content); err != nil {
		return nil, fmt.Errorf("writing the hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path, SelinuxRelabel: true}, nil
}

// ensureHostsFile makes the file hold content. It is rewritten in place,
// never replaced: running containers have this very file (inode) mounted.
// An unchanged file is left alone, so that running containers never read
// it half written.
func ensureHostsFile(path string, content []byte) error {
	if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return err
	}
	// Readable by any user in the container, whatever the umask.
	return os.Chmod(path, 0o644)
}
