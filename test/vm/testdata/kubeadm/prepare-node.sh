#!/usr/bin/env bash
# What a node's owner does before `kubeadm init` or `kubeadm join`, as
# kubeadm's installation guide asks: the kernel's forwarding and bridge
# netfilter, a CRI runtime with the systemd cgroup driver (containerd 2,
# which answers the CRI's RuntimeConfig call kubeadm v1.36 asks for), a
# pod network in /etc/cni/net.d (kubeadm installs none), kubeadm, crictl
# and kubectl on PATH, and the kubelet's unit with kubeadm's drop-in as
# Kubernetes' packages install them, enabled (it restarts until kubeadm
# writes its configuration). Run in the guest as root from the folder that
# holds the files, with:
#   AGENT         kubelet: the kubelet binary ./kubelet becomes /usr/bin/kubelet;
#                 nodelet: nodelet's release tarball ./nodelet-*.tar.gz is
#                 installed as deploy/host/INSTALL.md says and
#                 /usr/bin/kubelet is a link to /usr/local/bin/nodelet, so
#                 that the packaged unit, and kubeadm's `kubelet --version`
#                 preflight check, run it
#   REGISTRY      the registry's host:port, plain HTTP (kubeadm's imageRepository)
#   PAUSE_IMAGE   the sandbox image, the pause kubeadm names
#   POD_RANGE     this node's pods' addresses (host-local's range); the
#                 other node's are routed over the nodes' network
set -euo pipefail

# Forwarding (kubeadm's preflight checks it) and bridged traffic through
# iptables (kube-proxy's Service rules for pods on the bridge).
cat >/etc/modules-load.d/k8s.conf <<MODULES
overlay
br_netfilter
MODULES
modprobe overlay
modprobe br_netfilter
cat >/etc/sysctl.d/k8s.conf <<SYSCTL
net.ipv4.ip_forward = 1
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
SYSCTL
sysctl -q --system

mkdir -p /etc/containerd "/etc/containerd/certs.d/$REGISTRY"
cat >"/etc/containerd/certs.d/$REGISTRY/hosts.toml" <<HOSTS
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
HOSTS
cat >/etc/containerd/config.toml <<CONFIG
version = 3
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$PAUSE_IMAGE"
[plugins."io.containerd.cri.v1.images".registry]
  config_path = "/etc/containerd/certs.d"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
    BinaryName = "/opt/containerd2/bin/runc"
    SystemdCgroup = true
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = "/etc/cni/net.d"
CONFIG
# Debian's unit with containerd 2's binaries, its shim first on PATH.
mkdir -p /etc/systemd/system/containerd.service.d
cat >/etc/systemd/system/containerd.service.d/containerd2.conf <<UNIT
[Service]
Environment=PATH=/opt/containerd2/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=
ExecStart=/opt/containerd2/bin/containerd
UNIT

mkdir -p /etc/cni/net.d
cat >/etc/cni/net.d/10-bridge.conflist <<CNI
{
  "cniVersion": "1.0.0",
  "name": "pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_RANGE"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI

install -m 0755 kubeadm crictl kubectl /usr/bin/
cat >/etc/crictl.yaml <<CRICTL
runtime-endpoint: unix:///run/containerd/containerd.sock
image-endpoint: unix:///run/containerd/containerd.sock
CRICTL

case $AGENT in
kubelet) install -m 0755 kubelet /usr/bin/kubelet ;;
nodelet)
	tarball=$(ls nodelet-*.tar.gz)
	tar -xzf "$tarball"
	install -m 0755 "${tarball%.tar.gz}"/bin/nodelet "${tarball%.tar.gz}"/bin/nodelet-cni /usr/local/bin/
	ln -sfn /usr/local/bin/nodelet /usr/bin/kubelet
	;;
*)
	echo "AGENT must be kubelet or nodelet, not $AGENT" >&2
	exit 2
	;;
esac
install -D -m 0644 kubelet.service /usr/lib/systemd/system/kubelet.service
install -D -m 0644 10-kubeadm.conf /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf

systemctl daemon-reload
systemctl enable --now containerd
systemctl restart containerd
systemctl enable kubelet
