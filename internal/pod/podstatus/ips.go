package podstatus

import (
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/utils/net"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// podIPs are the IPs of the newest sandbox while it is ready, at most one
// per family, the node's family first. While no sandbox is ready (the pod
// is between sandboxes, or done) the IPs the pod had are kept. A pod on the
// host network has the node's IPs.
func (v statusView) podIPs(hostIPs []corev1.HostIP) (string, []corev1.PodIP) {
	var ips []corev1.PodIP
	if active := v.activeSandbox(); active != nil {
		primaryIPv6 := len(hostIPs) > 0 && utilnet.IsIPv6String(hostIPs[0].IP)
		for _, ip := range sortIPsByFamily(active.IPs, primaryIPv6) {
			ips = append(ips, corev1.PodIP{IP: ip})
		}
	} else if !v.anySandboxReady() {
		ips = append(ips, v.pod.Status.PodIPs...)
		if len(ips) == 0 && v.pod.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: v.pod.Status.PodIP}}
		}
	}

	if v.pod.Spec.HostNetwork && len(hostIPs) > 0 {
		if len(ips) == 0 {
			ips = []corev1.PodIP{{IP: hostIPs[0].IP}}
		}
		if len(hostIPs) == 2 && len(ips) == 1 && utilnet.IsIPv6String(ips[0].IP) != utilnet.IsIPv6String(hostIPs[1].IP) {
			ips = append(ips, corev1.PodIP{IP: hostIPs[1].IP})
		}
	}
	if len(ips) == 0 {
		return "", nil
	}
	return ips[0].IP, ips
}

func (v statusView) anySandboxReady() bool {
	for _, sb := range v.rt.Sandboxes {
		if sb != nil && sb.State == kubecontainer.SandboxReady {
			return true
		}
	}
	return false
}

// sortIPsByFamily picks the first IP of the primary family, then the first
// of the other, in canonical form.
func sortIPsByFamily(ips []string, primaryIPv6 bool) []string {
	var sorted []string
	for _, wantIPv6 := range []bool{primaryIPv6, !primaryIPv6} {
		for _, s := range ips {
			ip := utilnet.ParseIPSloppy(s)
			if ip != nil && utilnet.IsIPv6(ip) == wantIPv6 {
				sorted = append(sorted, ip.String())
				break
			}
		}
	}
	return sorted
}

// podHostIPs are the node's primary IP and, on a dual-stack node, its first
// IP of the other family.
func podHostIPs(nodeIPs []string) (string, []corev1.HostIP) {
	var ips []corev1.HostIP
	for _, s := range nodeIPs {
		ip := utilnet.ParseIPSloppy(s)
		if ip == nil {
			continue
		}
		if len(ips) == 0 || utilnet.IsIPv6String(ips[0].IP) != utilnet.IsIPv6(ip) {
			ips = append(ips, corev1.HostIP{IP: ip.String()})
		}
		if len(ips) == 2 {
			break
		}
	}
	if len(ips) == 0 {
		return "", nil
	}
	return ips[0].IP, ips
}
