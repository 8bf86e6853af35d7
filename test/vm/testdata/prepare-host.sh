#!/usr/bin/env bash
# What a node's owner has done before deploy/host/INSTALL.md (its "What
# the host and the cluster need"): containerd configured for the cluster
# (the pause image and the registry, the cgroup driver nodelet is given), a
# pod network in /etc/cni/net.d, and the cluster's CA in /etc/nodelet. Run
# in the guest as root, with:
#   RUNTIME         containerd (Debian's 1.6) or containerd2 (2.x and runc
#                   1.5, in /opt/containerd2/bin)
#   CGROUP_DRIVER   cgroupfs or systemd
#   REGISTRY        the registry's name in image references (127.0.0.1:PORT)
#   REGISTRY_URL    where the guest reaches it (http://10.0.2.2:PORT)
#   PAUSE_IMAGE     the sandbox image
# and the CA at /root/ca.crt.
set -euo pipefail

systemd_cgroup=false
[[ $CGROUP_DRIVER == systemd ]] && systemd_cgroup=true

mkdir -p /etc/containerd "/etc/containerd/certs.d/$REGISTRY"
cat >"/etc/containerd/certs.d/$REGISTRY/hosts.toml" <<HOSTS
server = "$REGISTRY_URL"
[host."$REGISTRY_URL"]
  capabilities = ["pull", "resolve"]
HOSTS

case $RUNTIME in
containerd)
	cat >/etc/containerd/config.toml <<CONFIG
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = $systemd_cgroup
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
CONFIG
	;;
containerd2)
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
    SystemdCgroup = $systemd_cgroup
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
	;;
*)
	echo "RUNTIME must be containerd or containerd2, not $RUNTIME" >&2
	exit 2
	;;
esac

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
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI

systemctl daemon-reload
systemctl enable --now containerd
systemctl restart containerd

install -d -m 0755 /etc/nodelet
install -m 0644 /root/ca.crt /etc/nodelet/ca.crt
