#!/usr/bin/env bash
# Makes the guest a node of the kubelet v1.36, as a kubeadm-made node of a
# managed cluster is: the systemd cgroup driver on cgroup v2, containerd
# with SystemdCgroup (prepare-host.sh, run first), the kubelet under
# systemd with its configuration file, webhook authentication and
# authorization. Run in the guest as root, with:
#   NODE_IP      the kubelet's --node-ip (the guest's own address: the
#                kubelet refuses a loopback one)
#   API_SERVER   the API server's URL as the guest reaches it
#   SERVICE_IP   the `kubernetes` Service's ClusterIP
# and in /root: kubelet (the binary), ca.crt, kubelet.crt and kubelet.key
# (the node's client certificate, system:node:<name>).
set -euo pipefail

install -m 0755 /root/kubelet /usr/local/bin/kubelet
install -d -m 0755 /etc/kubernetes/pki /var/lib/kubelet/pki
install -m 0644 /root/ca.crt /etc/kubernetes/pki/ca.crt
install -m 0644 /root/kubelet.crt /var/lib/kubelet/pki/kubelet-client.crt
install -m 0600 /root/kubelet.key /var/lib/kubelet/pki/kubelet-client.key

cat >/etc/kubernetes/kubelet.conf <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: $API_SERVER
    certificate-authority: /etc/kubernetes/pki/ca.crt
users:
- name: kubelet
  user:
    client-certificate: /var/lib/kubelet/pki/kubelet-client.crt
    client-key: /var/lib/kubelet/pki/kubelet-client.key
contexts:
- name: default
  context:
    cluster: cluster
    user: kubelet
current-context: default
KUBECONFIG

cat >/var/lib/kubelet/config.yaml <<CONFIG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
resolvConf: /run/systemd/resolve/resolv.conf
rotateCertificates: false
CONFIG

cat >/etc/systemd/system/kubelet.service <<UNIT
[Unit]
Description=kubelet: The Kubernetes Node Agent
Wants=network-online.target
After=network-online.target containerd.service
[Service]
ExecStart=/usr/local/bin/kubelet --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/kubernetes/kubelet.conf --node-ip=$NODE_IP
Restart=always
RestartSec=5
[Install]
WantedBy=multi-user.target
UNIT

# The cluster's service proxy (kube-proxy's part on a real node) for the
# one Service the chart's pods use: the API server's, at 10.0.2.2 here.
api=${API_SERVER#https://}
for chain in OUTPUT PREROUTING; do
	iptables -t nat -A "$chain" -d "$SERVICE_IP/32" -p tcp --dport 443 -j DNAT --to-destination "$api"
done

systemctl daemon-reload
systemctl enable --now kubelet
