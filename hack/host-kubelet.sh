#!/usr/bin/env bash
# Starts or stops, beside a running stack, a real kubelet as a second node
# of it: the host node a companion nodelet (charts/nodelet) is installed
# on, as on a cluster's machine. As root:
#
#   hack/host-kubelet.sh PROFILE up     after hack/local-up.sh PROFILE
#   hack/host-kubelet.sh PROFILE down   before hack/local-down.sh PROFILE
#
# up starts, all under <state>/host (their logs in <state>/logs/host):
# - a containerd of the node's own (its root, state, socket, CNI folder and
#   runc root its own; the stack's registry as a plain-HTTP mirror), the
#   runtime the host's kubelet runs its pods on;
# - the kubelet v1.36.3 (hack/build-tools.sh kubelet, from
#   k8s.io/kubernetes) as node $HOST_NODE_NAME (<node>-host), with a
#   client certificate of system:node:<name> from the stack's CA, the
#   machine's global address as its InternalIP (the kubelet refuses a
#   loopback one; the API server reaches its pods' node APIs there), the
#   cgroupfs driver with QoS cgroups (cgroupsPerQOS) under <cgroup
#   root>/host, the layout a DaemonSet pod's cgroup has on a kubeadm node
#   (<root>/kubepods/burstable/pod<uid>/<container>); its pods' network is
#   a bridge of its own, nlh-<profile>.
# Both run in a mount namespace of their own whose mounts are shared
# (<state>/host/mnt-ns), when the machine's are not: mount propagation
# (the Bidirectional and HostToContainer volumes of the chart's DaemonSet)
# needs them shared, as systemd makes them on every machine it boots, and
# this changes nothing of the machine's own.
# It waits for the Node to be Ready and writes <state>/host/env (HOST_*
# lines) for the tests. Everything it starts names the state folder and
# lives under the profile's cgroup root, so the profile's sweep
# (hack/local-down.sh) removes what `down` could not.
#
# The kubelet does on this machine what it does on every node it runs on:
# with protectKernelDefaults false (its default) it sets
# vm.overcommit_memory=1, vm.panic_on_oom=0, kernel.panic=10,
# kernel.panic_on_oops=1 and the root keyring limits.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=hack/kubelet-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubelet-lib.sh"

require_root
(($# == 2)) || die "usage: $(basename "$0") PROFILE up|down"
profile_load "$1"
ACTION=$2

# The host node's parts, under the profile's folders: its own runtime,
# CNI network and cgroup root, so that it never meets the stack's node.
STACK_PKI=$PKI_DIR
STACK_CGROUP_ROOT=$CGROUP_ROOT
HOST_DIR=$STATE_DIR/host
HOST_NODE_NAME=${HOST_NODE_NAME:-$NODE_NAME-host}
STATE_DIR_HOST_ENV=$HOST_DIR/env
LOG_DIR=$STATE_DIR/logs/host
RUN_DIR=$HOST_DIR/run
CONTAINERD_DIR=$HOST_DIR/containerd
CONTAINERD_CONFIG=$CONTAINERD_DIR/config.toml
CONTAINERD_SOCK=$CONTAINERD_DIR/containerd.sock
CRI_ENDPOINT=unix://$CONTAINERD_SOCK
CONTAINERD_METRICS_PORT=$((CONTAINERD_METRICS_PORT + 50))
CNI_CONF_DIR=$HOST_DIR/cni/net.d
CNI_BIN_DIR=$CNI_PLUGINS_DIR
CNI_NETWORK_NAME=nodelet-$PROFILE-host-net
CGROUP_ROOT=$STACK_CGROUP_ROOT/host
KUBELET_ROOT_DIR=$HOST_DIR/kubelet
KUBELET_POD_LOG_DIR=$HOST_DIR/pod-logs
# Beside the stack's node ports (the daemon port, kube-proxy's and the
# control plane's are 10249 to 10259 above the profile's offset).
HOST_BRIDGE=nlh-$PROFILE
# The kubelet's podPidsLimit: the companion's PID limit (TestCompanion).
HOST_POD_PIDS_LIMIT=4096
MOUNT_NS=$HOST_DIR/mnt-ns
# The command prefix that enters the host node's mount namespace, if any.
IN_MOUNT_NS=()
KUBELET_PORT=$((NODELET_PORT + 20))
KUBELET_HEALTH_PORT=$((NODELET_PORT + 21))
KUBELET_KUBECONFIG=$HOST_DIR/kubelet.kubeconfig
KUBELET_CONFIG=$HOST_DIR/kubelet-config.yaml

kubectl_admin() { "$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" "$@"; }

# start_daemon (hack/lib.sh's) starts the host node's daemons in its
# mount namespace.
eval "$(declare -f start_daemon | sed '1s/^start_daemon/lib_start_daemon/')"
start_daemon() {
	local name=$1
	shift
	lib_start_daemon "$name" "${IN_MOUNT_NS[@]}" "$@"
}

# make_mount_namespace makes, when / is not a shared mount, a mount
# namespace where every mount is (unshare --propagation shared), kept by a
# bind mount of it on MOUNT_NS, for the daemons to enter.
make_mount_namespace() {
	[[ $(findmnt -no PROPAGATION /) != shared ]] || return 0
	log "Mounts are private here; the host node gets a mount namespace where they are shared"
	touch "$MOUNT_NS"
	unshare --mount="$MOUNT_NS" --propagation shared true
	IN_MOUNT_NS=(nsenter --mount="$MOUNT_NS" --)
}

# node_client_certificate writes the kubelet's kubeconfig: a client
# certificate of system:node:NAME from the stack's CA, so the Node
# authorizer and NodeRestriction confine it as any kubelet.
node_client_certificate() {
	local key=$HOST_DIR/kubelet-client.key crt=$HOST_DIR/kubelet-client.crt
	openssl genrsa -out "$key" 2048 2>/dev/null
	openssl req -new -key "$key" -subj "/O=system:nodes/CN=system:node:$HOST_NODE_NAME" -out "$HOST_DIR/kubelet-client.csr" 2>/dev/null
	openssl x509 -req -in "$HOST_DIR/kubelet-client.csr" -CA "$STACK_PKI/ca.crt" -CAkey "$STACK_PKI/ca.key" \
		-CAcreateserial -CAserial "$HOST_DIR/ca.srl" -days 30 -sha256 -out "$crt" \
		-extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n') 2>/dev/null
	rm -f "$HOST_DIR/kubelet-client.csr"
	cat >"$KUBELET_KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: stack
  cluster:
    server: $API_SERVER_URL
    certificate-authority-data: $(base64 -w0 "$STACK_PKI/ca.crt")
users:
- name: system:node:$HOST_NODE_NAME
  user:
    client-certificate-data: $(base64 -w0 "$crt")
    client-key-data: $(base64 -w0 "$key")
contexts:
- name: stack
  context:
    cluster: stack
    user: system:node:$HOST_NODE_NAME
current-context: stack
EOF
	chmod 0600 "$KUBELET_KUBECONFIG" "$key"
}

up() {
	[[ -f $ADMIN_KUBECONFIG ]] || die "profile $PROFILE's stack is not up (hack/local-up.sh $PROFILE)"
	"$REPO_ROOT/hack/build-tools.sh" kubelet
	down
	remove_tree "$HOST_DIR"
	mkdir -p "$HOST_DIR" "$LOG_DIR" "$RUN_DIR" "$KUBELET_ROOT_DIR" "$KUBELET_POD_LOG_DIR"
	chmod 0700 "$HOST_DIR"
	for port in $CONTAINERD_METRICS_PORT $KUBELET_PORT $KUBELET_HEALTH_PORT; do
		port_free "$port" || die "port $port is taken: $(ss -Hltnp "sport = :$port" | head -n1)"
	done
	make_mount_namespace
	start_containerd

	HOST_IP=$(host_ip)
	[[ $HOST_IP != 127.* ]] || die "no global IPv4 address for the kubelet's node IP (it refuses a loopback one)"
	node_client_certificate
	write_kubelet_config "$KUBELET_CONFIG" "$CRI_ENDPOINT" true "$CGROUP_ROOT" "$HOST_IP" \
		"$KUBELET_PORT" "$KUBELET_HEALTH_PORT" "$STACK_PKI/ca.crt" "$KUBELET_POD_LOG_DIR" "$KUBELET_ROOT_DIR"
	# The companion's share: its Node's ephemeral-storage capacity is the
	# DaemonSet pod's request, which the scheduler admits only on a node
	# that reports ephemeral storage; its PID limit is the one this kubelet
	# puts on the pod's cgroup.
	sed -i 's/^localStorageCapacityIsolation: false$/localStorageCapacityIsolation: true/' "$KUBELET_CONFIG"
	echo "podPidsLimit: $HOST_POD_PIDS_LIMIT" >>"$KUBELET_CONFIG"
	make_cgroup_root
	log "Starting the kubelet for node $HOST_NODE_NAME on $CRI_ENDPOINT"
	start_daemon kubelet "$BIN_DIR/kubelet" \
		--config="$KUBELET_CONFIG" \
		--kubeconfig="$KUBELET_KUBECONFIG" \
		--hostname-override="$HOST_NODE_NAME" \
		--node-ip="$HOST_IP" \
		--root-dir="$KUBELET_ROOT_DIR"

	pod_cidr() { kubectl_admin get node "$HOST_NODE_NAME" -o jsonpath='{.spec.podCIDR}' 2>/dev/null | grep -q .; }
	wait_daemon 120 kubelet pod_cidr
	write_kubelet_conflist "$CNI_CONF_DIR" "$CNI_NETWORK_NAME" "$HOST_BRIDGE" "$(kubectl_admin get node "$HOST_NODE_NAME" -o jsonpath='{.spec.podCIDR}')"
	node_ready() {
		[[ $(kubectl_admin get node "$HOST_NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
	}
	wait_daemon 120 kubelet node_ready
	log "Node $HOST_NODE_NAME is Ready (kubelet $KUBE_VERSION, log $LOG_DIR/kubelet.log)"

	cat >"$STATE_DIR_HOST_ENV" <<EOF
HOST_NODE_NAME=$HOST_NODE_NAME
HOST_NODE_IP=$HOST_IP
HOST_CRI_ENDPOINT=$CRI_ENDPOINT
HOST_CGROUP_ROOT=$CGROUP_ROOT
HOST_POD_PIDS_LIMIT=$HOST_POD_PIDS_LIMIT
HOST_MOUNT_NS=${IN_MOUNT_NS[*]:+$MOUNT_NS}
HOST_DIR=$HOST_DIR
HOST_KUBELET_LOG=$LOG_DIR/kubelet.log
HOST_CONTAINERD_LOG=$LOG_DIR/containerd.log
EOF
}

# down stops the kubelet, removes its runtime's pods through CRI (their
# containers' processes, network, mounts) and stops the runtime; the
# Node stays in the API server, which the stack's sweep stops anyway.
down() {
	stop_daemon kubelet 30
	if [[ -S $CONTAINERD_SOCK ]] && "$BIN_DIR/cri-sweep" -check -endpoint "$CRI_ENDPOINT" -timeout 5s >/dev/null 2>&1; then
		log "Removing the host node's pods through CRI"
		"$BIN_DIR/cri-sweep" -endpoint "$CRI_ENDPOINT" -timeout 3m >&2 ||
			log "Some of the host node's pods could not be removed through CRI; the sweep removes what they left"
	fi
	stop_daemon containerd 15
	local mount
	for mount in $(mounts_under "$HOST_DIR"); do
		umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || log "Could not unmount $mount"
	done
	rm -rf /var/lib/cni/networks/"$CNI_NETWORK_NAME" /var/lib/cni/results/"$CNI_NETWORK_NAME"-*
	if ip link show "$HOST_BRIDGE" >/dev/null 2>&1; then
		ip link delete "$HOST_BRIDGE" || log "Could not delete bridge $HOST_BRIDGE"
	fi
	sweep_iptables
}

case "$ACTION" in
up) up ;;
down) down ;;
*) die "unknown action '$ACTION' (want up or down)" ;;
esac
