#!/usr/bin/env bash
# Starts a real single-node cluster on this machine, as root:
#
#   hack/local-up.sh PROFILE [--no-nodelet]
#
# PROFILE is `up` (for people) or `e2e` (for the e2e suite); both can run at
# once. It first sweeps whatever an earlier run of the same profile left,
# then starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# an OCI registry holding the test images, a second one that requires a
# login (for imagePullSecrets), a private containerd and, unless
# --no-nodelet, nodelet itself. Everything it writes lives under the state
# folder (/var/lib/nodelet-local/PROFILE, or $NODELET_STATE_DIR), apart from
# the entries containerd 1.6 keeps in fixed places (/var/lib/cni/results,
# /run/containerd/s), which the sweep removes by name.
#
# With ADDONS=true (the default but for the benchmark's profile) it also
# starts kube-proxy and CoreDNS as pods nodelet runs (hack/addons.sh), gives
# nodelet --cluster-dns and --cluster-domain, and, when nodelet runs, waits
# until DNS answers. The API server then listens on every address and
# advertises the host's, where pods reach it through the `kubernetes`
# Service.
#
# NETWORK_MODE=agent has nodelet run CNI itself behind its shim plugin
# (--network-mode=agent); the default, runtime, lets containerd run it.
#
# NODE_RESTRICTION=false starts kube-apiserver without the NodeRestriction
# admission plugin (on by default): the Node authorizer alone, and
# whatever admission policies are installed, then confine the nodes, as
# on a cluster that left the plugin off.
#
# RUNTIME=containerd2 runs containerd 2 and runc 1.5 (hack/build-runtime.sh)
# in place of Debian's containerd 1.6 and runc 1.1: a runtime that gives
# pods user namespaces (hostUsers: false), for the tests of those.
#
# nodelet is built from the working tree into .cache/bin/nodelet, unless
# $NODELET_BIN names a binary to run instead; $NODELET_EXTRA_ARGS (flags
# separated by spaces) adds to its flags, e.g. to compare settings in
# `make bench`. The node is named after the
# machine (profile up) or e2e-node (profile e2e), unless $NODE_NAME says.
#
# It writes STATE/env, one VAR=value per line, for the e2e suite and for
# people, and STATE/nodelet.args, nodelet's flags one per line, and ends by
# printing `export KUBECONFIG=...`.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	echo "usage: $0 up|e2e [--no-nodelet]" >&2
	exit 2
}

(($# >= 1)) || usage
profile_load "$1"
shift
# bench-ref is a node on bench's control plane; hack/bench.sh starts it.
[[ $PROFILE != bench-ref ]] || die "profile bench-ref has no stack of its own: hack/bench.sh starts it"
START_NODELET=true
for arg in "$@"; do
	case "$arg" in
	--no-nodelet) START_NODELET=false ;;
	*) usage ;;
	esac
done

require_root
trap 'log "local-up.sh failed; hack/local-down.sh $PROFILE stops what it started"' ERR
"$REPO_ROOT/hack/install-deps.sh"
"$REPO_ROOT/hack/build-tools.sh"
"$REPO_ROOT/hack/build-images.sh"

# --- 0. sweep ----------------------------------------------------------------

log "Sweeping what an earlier run of profile $PROFILE left behind"
sweep
# Start from an empty state folder, keeping the registries' storage so the
# images need not be pushed again.
if [[ -d $STATE_DIR ]]; then
	for entry in "$STATE_DIR"/* "$STATE_DIR"/.[!.]*; do
		[[ -e $entry && $entry != "$STATE_DIR/registry" && $entry != "$STATE_DIR/registry-private" ]] &&
			remove_tree "$entry"
	done
fi
leaks=$(leftovers)
[[ -z $leaks ]] || die "the sweep left: $leaks"

for port in $ETCD_PORT $ETCD_PEER_PORT $APISERVER_PORT $CONTROLLER_MANAGER_PORT $SCHEDULER_PORT \
	$REGISTRY_PORT $PRIVATE_REGISTRY_PORT $CONTAINERD_METRICS_PORT $NODELET_METRICS_PORT $NODELET_HEALTH_PORT $NODELET_PORT \
	$KUBE_PROXY_METRICS_PORT $KUBE_PROXY_HEALTH_PORT; do
	port_free "$port" || die "port $port is taken: $(ss -Hltnp "sport = :$port" | head -n1)"
done

mkdir -p "$PKI_DIR" "$KUBECONFIG_DIR" "$LOG_DIR" "$RUN_DIR" "$CONTAINERD_DIR" "$CNI_CONF_DIR" \
	"$NODELET_ROOT_DIR" "$POD_LOG_DIR" "$CONTAINER_LOG_DIR" "$STATE_DIR/registry" "$STATE_DIR/registry-private"
chmod 0700 "$PKI_DIR" "$KUBECONFIG_DIR"
mount_node_disk
if [[ $CNI_BIN_DIR != "$CNI_PLUGINS_DIR" ]]; then
	# The runtime's CNI bin folder: the plugins, and nodelet's shim once
	# nodelet installs it (agent mode) or the chaos run's wrappers.
	mkdir -p "$CNI_BIN_DIR"
	ln -sf "$CNI_PLUGINS_DIR"/* "$CNI_BIN_DIR"/
fi

# --- 1. keys, certificates, tokens, kubeconfigs ------------------------------

log "Generating keys, certificates and tokens in $PKI_DIR"
openssl_quiet() { openssl "$@" 2>/dev/null; }

# sign NAME SUBJECT EXTENSIONS makes NAME.key and NAME.crt signed by the CA.
sign() {
	local name=$1 subject=$2 extensions=$3
	openssl_quiet genrsa -out "$PKI_DIR/$name.key" 2048
	openssl_quiet req -new -key "$PKI_DIR/$name.key" -subj "$subject" -out "$PKI_DIR/$name.csr"
	openssl_quiet x509 -req -in "$PKI_DIR/$name.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" \
		-CAcreateserial -CAserial "$PKI_DIR/ca.srl" -days 3650 -sha256 \
		-extfile <(printf '%b' "$extensions") -out "$PKI_DIR/$name.crt"
	rm -f "$PKI_DIR/$name.csr"
}

openssl_quiet genrsa -out "$PKI_DIR/ca.key" 2048
openssl_quiet req -x509 -new -key "$PKI_DIR/ca.key" -subj "/CN=nodelet-local-$PROFILE-ca" -days 3650 -sha256 \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
	-out "$PKI_DIR/ca.crt"
# Pods reach the API server at the host's address (through the
# `kubernetes` Service), which must not be a loopback one.
if $ADDONS; then
	APISERVER_BIND=0.0.0.0
	APISERVER_ADVERTISE=$(host_ip)
else
	APISERVER_BIND=127.0.0.1
	APISERVER_ADVERTISE=127.0.0.1
fi
# Profile vm's nodes are guests, which reach the API server at
# $GUEST_HOST_IP.
[[ $PROFILE != vm ]] || GUEST_SAN="IP:$GUEST_HOST_IP,"
sign apiserver "/CN=kube-apiserver" \
	"subjectAltName=IP:127.0.0.1,IP:$APISERVER_ADVERTISE,${GUEST_SAN:-}IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
# The API server's identity towards node agents (logs, exec, port-forward).
sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" \
	"extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
openssl_quiet genrsa -out "$PKI_DIR/sa.key" 2048
openssl_quiet rsa -in "$PKI_DIR/sa.key" -pubout -out "$PKI_DIR/sa.pub"

ADMIN_TOKEN=$(openssl rand -hex 16)
NODE_TOKEN=$(openssl rand -hex 16)
CONTROLLER_MANAGER_TOKEN=$(openssl rand -hex 16)
SCHEDULER_TOKEN=$(openssl rand -hex 16)
cat >"$PKI_DIR/tokens.csv" <<EOF
$ADMIN_TOKEN,admin,admin,system:masters
$NODE_TOKEN,system:node:$NODE_NAME,$NODE_NAME,system:nodes
$CONTROLLER_MANAGER_TOKEN,system:kube-controller-manager,system:kube-controller-manager
$SCHEDULER_TOKEN,system:kube-scheduler,system:kube-scheduler
EOF
chmod 0600 "$PKI_DIR"/*.key "$PKI_DIR/tokens.csv"

# write_kubeconfig FILE USER TOKEN
write_kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nodelet-$PROFILE
  cluster:
    server: $API_SERVER_URL
    certificate-authority-data: $(base64 -w0 "$PKI_DIR/ca.crt")
users:
- name: $2
  user:
    token: $3
contexts:
- name: nodelet-$PROFILE
  context:
    cluster: nodelet-$PROFILE
    user: $2
current-context: nodelet-$PROFILE
EOF
	chmod 0600 "$1"
}
write_kubeconfig "$ADMIN_KUBECONFIG" admin "$ADMIN_TOKEN"
write_kubeconfig "$NODE_KUBECONFIG" "system:node:$NODE_NAME" "$NODE_TOKEN"
write_kubeconfig "$KUBECONFIG_DIR/controller-manager.kubeconfig" system:kube-controller-manager "$CONTROLLER_MANAGER_TOKEN"
write_kubeconfig "$KUBECONFIG_DIR/scheduler.kubeconfig" system:kube-scheduler "$SCHEDULER_TOKEN"

# --- 2. etcd and the control plane -----------------------------------------

log "Starting etcd on 127.0.0.1:$ETCD_PORT"
start_daemon etcd "$BIN_DIR/etcd" \
	--name="$PROFILE" \
	--data-dir="$STATE_DIR/etcd" \
	--listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
	--advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster="$PROFILE=http://127.0.0.1:$ETCD_PEER_PORT" \
	--log-level=warn
wait_daemon 30 etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

status_bodies_rule=''
if $AUDIT_STATUS_BODIES; then
	status_bodies_rule='- level: Request
  userGroups: ["system:nodes"]
  verbs: ["patch"]
  resources: [{group: "", resources: ["pods/status"]}]'
fi
cat >"$STATE_DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
$status_bodies_rule
- level: Metadata
EOF

# Bootstrap tokens (Secrets of type bootstrap.kubernetes.io/token in
# kube-system) authenticate, as on a kubeadm cluster: a host's nodelet
# requests its first certificate with one (--bootstrap-kubeconfig).
#
# The audit log is written in batch mode: each event is queued and written
# by the log's own goroutine. In the default (blocking) mode the API server
# writes the event in the request's path after taking its time stamp and
# before it answers, so a slow disk delays every answer behind the stamp
# the tests time against (the start breakdown's end). The queue is large
# enough that no burst the benches make fills it: a full queue drops
# events, which the e2e tests that read the log check did not happen.
log "Starting kube-apiserver on $API_SERVER_URL"
NODE_RESTRICTION=${NODE_RESTRICTION:-true}
[[ $NODE_RESTRICTION == true || $NODE_RESTRICTION == false ]] || die "NODE_RESTRICTION must be true or false, not '$NODE_RESTRICTION'"
if $NODE_RESTRICTION; then
	admission_plugins=(--enable-admission-plugins=NodeRestriction)
else
	admission_plugins=(--disable-admission-plugins=NodeRestriction)
fi
start_daemon kube-apiserver "$BIN_DIR/kube-apiserver" \
	--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
	--bind-address="$APISERVER_BIND" \
	--advertise-address="$APISERVER_ADVERTISE" \
	--secure-port="$APISERVER_PORT" \
	--cert-dir="$PKI_DIR/apiserver-generated" \
	--tls-cert-file="$PKI_DIR/apiserver.crt" \
	--tls-private-key-file="$PKI_DIR/apiserver.key" \
	--client-ca-file="$PKI_DIR/ca.crt" \
	--token-auth-file="$PKI_DIR/tokens.csv" \
	--enable-bootstrap-token-auth \
	--service-account-key-file="$PKI_DIR/sa.pub" \
	--service-account-signing-key-file="$PKI_DIR/sa.key" \
	--service-account-issuer=https://kubernetes.default.svc \
	--authorization-mode=Node,RBAC \
	"${admission_plugins[@]}" \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	--allow-privileged=true \
	--kubelet-preferred-address-types=InternalIP \
	--kubelet-client-certificate="$PKI_DIR/apiserver-kubelet-client.crt" \
	--kubelet-client-key="$PKI_DIR/apiserver-kubelet-client.key" \
	--audit-policy-file="$STATE_DIR/audit-policy.yaml" \
	--audit-log-path="$AUDIT_LOG" \
	--audit-log-maxsize=200 \
	--audit-log-maxbackup=1 \
	--audit-log-mode=batch \
	--audit-log-batch-buffer-size=100000
wait_daemon 60 kube-apiserver curl -fsS --cacert "$PKI_DIR/ca.crt" "$API_SERVER_URL/readyz"

log "Starting kube-controller-manager and kube-scheduler"
# CONTROL_PLANE_QPS lifts both clients' limits (burst twice it) for bursts
# of thousands of pods (hack/bench-scale.sh); unset, their defaults.
client_limits=()
[[ -z ${CONTROL_PLANE_QPS:-} ]] || client_limits=(--kube-api-qps="$CONTROL_PLANE_QPS" --kube-api-burst="$((CONTROL_PLANE_QPS * 2))")
# NODE_MONITOR_GRACE_PERIOD is how long a node's Lease may go unrenewed
# before the node controller calls it unreachable (hack/bench.sh freezes
# its agents while it takes the runtime's floor); unset, its default.
node_monitor=()
[[ -z ${NODE_MONITOR_GRACE_PERIOD:-} ]] || node_monitor=(--node-monitor-grace-period="$NODE_MONITOR_GRACE_PERIOD")
start_daemon kube-controller-manager "$BIN_DIR/kube-controller-manager" \
	--kubeconfig="$KUBECONFIG_DIR/controller-manager.kubeconfig" \
	--authentication-kubeconfig="$KUBECONFIG_DIR/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$KUBECONFIG_DIR/controller-manager.kubeconfig" \
	--bind-address=127.0.0.1 \
	--secure-port="$CONTROLLER_MANAGER_PORT" \
	--leader-elect=false \
	--use-service-account-credentials \
	--service-account-private-key-file="$PKI_DIR/sa.key" \
	--root-ca-file="$PKI_DIR/ca.crt" \
	--cluster-signing-cert-file="$PKI_DIR/ca.crt" \
	--cluster-signing-key-file="$PKI_DIR/ca.key" \
	--cluster-signing-duration="$CLUSTER_SIGNING_DURATION" \
	--allocate-node-cidrs \
	--cluster-cidr="$CLUSTER_CIDR" \
	--node-cidr-mask-size="$NODE_CIDR_MASK_SIZE" \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	"${client_limits[@]}" "${node_monitor[@]}"
start_daemon kube-scheduler "$BIN_DIR/kube-scheduler" \
	--kubeconfig="$KUBECONFIG_DIR/scheduler.kubeconfig" \
	--authentication-kubeconfig="$KUBECONFIG_DIR/scheduler.kubeconfig" \
	--authorization-kubeconfig="$KUBECONFIG_DIR/scheduler.kubeconfig" \
	--bind-address=127.0.0.1 \
	--secure-port="$SCHEDULER_PORT" \
	--leader-elect=false \
	"${client_limits[@]}"
wait_daemon 60 kube-controller-manager curl -fsSk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
wait_daemon 60 kube-scheduler curl -fsSk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
# Pods cannot be created before the namespace's default ServiceAccount.
wait_daemon 60 kube-controller-manager "$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" get serviceaccount default --namespace=default

# --- 3. the registry and its images ----------------------------------------

log "Starting the registry on $REGISTRY"
cat >"$STATE_DIR/registry.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $STATE_DIR/registry
  delete:
    enabled: true
http:
  addr: $REGISTRY
EOF
start_daemon registry docker-registry serve "$STATE_DIR/registry.yml"
wait_daemon 30 registry curl -fsS "http://$REGISTRY/v2/"

# The second registry answers only to PRIVATE_REGISTRY_USER: pods pull
# from it with imagePullSecrets, which nodelet hands the runtime as CRI
# auth. containerd itself is given no credentials for it.
log "Starting the registry that requires a login on $PRIVATE_REGISTRY"
openssl rand -hex 16 >"$PRIVATE_REGISTRY_PASSWORD_FILE"
chmod 0600 "$PRIVATE_REGISTRY_PASSWORD_FILE"
"$BIN_DIR/htpasswd" "$PRIVATE_REGISTRY_USER" <"$PRIVATE_REGISTRY_PASSWORD_FILE" >"$PKI_DIR/registry-private.htpasswd"
cat >"$STATE_DIR/registry-private.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $STATE_DIR/registry-private
  delete:
    enabled: true
http:
  addr: $PRIVATE_REGISTRY
auth:
  htpasswd:
    realm: nodelet-$PROFILE
    path: $PKI_DIR/registry-private.htpasswd
EOF
start_daemon registry-private docker-registry serve "$STATE_DIR/registry-private.yml"
wait_daemon 30 registry-private curl -fsS --user "$PRIVATE_REGISTRY_USER:$(<"$PRIVATE_REGISTRY_PASSWORD_FILE")" "http://$PRIVATE_REGISTRY/v2/"
"$REPO_ROOT/hack/build-images.sh" "$PROFILE"

# --- 4. containerd -----------------------------------------------------------

# With the systemd cgroup driver, in the node's own systemd's namespaces.
[[ $CGROUP_DRIVER != systemd ]] || start_node_systemd
start_containerd

# --- 5. kube-proxy and CoreDNS, which nodelet will run ---------------------

if $ADDONS; then
	"$REPO_ROOT/hack/addons.sh" "$PROFILE" apply
fi

# --- 6. nodelet's flags and the env file -----------------------------------

# Both are written before nodelet starts, so that a failed start can be
# looked into with them. The disk eviction thresholds are off, as kind
# turns them off: a local stack shares the developer's disk, whose free
# space says nothing of the stack's pods. The memory one stays the
# kubelet's.

# With the systemd driver nodelet runs in the node's systemd's cgroup
# namespace, whose root is the profile's cgroup: its tree goes at the top
# there (kubepods.slice), as on a systemd node; the host sees it under
# CGROUP_NAMESPACE.
NODELET_CGROUP_ROOT=$CGROUP_ROOT CGROUP_NAMESPACE='' SYSTEMD_PID=''
if [[ $CGROUP_DRIVER == systemd ]]; then
	NODELET_CGROUP_ROOT=/ CGROUP_NAMESPACE=$CGROUP_ROOT SYSTEMD_PID=$(<"$RUN_DIR/systemd-init.pid")
fi
cat >"$NODELET_ARGS_FILE" <<EOF
--kubeconfig=$NODE_KUBECONFIG
--node-name=$NODE_NAME
--node-ip=127.0.0.1
--container-runtime-endpoint=$CRI_ENDPOINT
--root-dir=$NODELET_ROOT_DIR
--pod-log-dir=$POD_LOG_DIR
--container-log-dir=$CONTAINER_LOG_DIR
--cgroup-root=$NODELET_CGROUP_ROOT
--cgroup-driver=$CGROUP_DRIVER
--cni-conf-dir=$CNI_CONF_DIR
--cni-bin-dir=$CNI_BIN_DIR
--cni-network-name=$CNI_NETWORK_NAME
--cni-bridge=$CNI_BRIDGE
--network-mode=$NETWORK_MODE
--cni-check-period=5s
--metrics-bind-address=127.0.0.1:$NODELET_METRICS_PORT
--health-probe-bind-address=127.0.0.1:$NODELET_HEALTH_PORT
--port=$NODELET_PORT
--address=127.0.0.1
--client-ca-file=$PKI_DIR/ca.crt
--resolv-conf=/etc/resolv.conf
--eviction-hard=memory.available<100Mi,nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%,imagefs.inodesFree<0%
--pod-manifest-path=$STATIC_POD_DIR
--manifest-url=http://127.0.0.1:$STATIC_POD_URL_PORT/pods
--http-check-frequency=2s
EOF
mkdir -p "$STATIC_POD_DIR"
if $ADDONS; then
	printf '%s\n' "--cluster-dns=$CLUSTER_DNS_IP" "--cluster-domain=$CLUSTER_DOMAIN" >>"$NODELET_ARGS_FILE"
fi
read -r -a extra_args <<<"${NODELET_EXTRA_ARGS:-}"
if ((${#extra_args[@]})); then
	printf '%s\n' "${extra_args[@]}" >>"$NODELET_ARGS_FILE"
fi

cat >"$ENV_FILE" <<EOF
PROFILE=$PROFILE
STATE_DIR=$STATE_DIR
ADMIN_KUBECONFIG=$ADMIN_KUBECONFIG
NODE_KUBECONFIG=$NODE_KUBECONFIG
NODE_NAME=$NODE_NAME
NODE_IP=127.0.0.1
CRI_ENDPOINT=$CRI_ENDPOINT
NODELET_ROOT_DIR=$NODELET_ROOT_DIR
POD_LOG_DIR=$POD_LOG_DIR
CONTAINER_LOG_DIR=$CONTAINER_LOG_DIR
CGROUP_ROOT=$NODELET_CGROUP_ROOT
CGROUP_DRIVER=$CGROUP_DRIVER
CGROUP_NAMESPACE=$CGROUP_NAMESPACE
SYSTEMD_PID=$SYSTEMD_PID
CNI_CONF_DIR=$CNI_CONF_DIR
CNI_BIN_DIR=$CNI_BIN_DIR
CNI_PLUGINS_DIR=$CNI_PLUGINS_DIR
NETWORK_MODE=$NETWORK_MODE
NODE_RESTRICTION=$NODE_RESTRICTION
CNI_NETWORK_NAME=$CNI_NETWORK_NAME
CNI_BRIDGE=$CNI_BRIDGE
CLUSTER_CIDR=$CLUSTER_CIDR
SERVICE_CIDR=$SERVICE_CIDR
SERVICE_IP=$SERVICE_IP
ADDONS=$ADDONS
CLUSTER_DNS=$($ADDONS && echo "$CLUSTER_DNS_IP")
CLUSTER_DOMAIN=$CLUSTER_DOMAIN
REGISTRY=$REGISTRY
BUSYBOX_IMAGE=$BUSYBOX_IMAGE
PRIVATE_REGISTRY=$PRIVATE_REGISTRY
PRIVATE_REGISTRY_USER=$PRIVATE_REGISTRY_USER
PRIVATE_REGISTRY_PASSWORD=$(<"$PRIVATE_REGISTRY_PASSWORD_FILE")
PRIVATE_IMAGE=$PRIVATE_IMAGE
PAUSE_IMAGE=$PAUSE_IMAGE
NODELET_METRICS_ADDR=127.0.0.1:$NODELET_METRICS_PORT
NODELET_HEALTH_ADDR=127.0.0.1:$NODELET_HEALTH_PORT
NODELET_PORT=$NODELET_PORT
NODELET_LOG=$NODELET_LOG
NODELET_BIN=$NODELET_BIN
NODELET_ARGS_FILE=$NODELET_ARGS_FILE
STATIC_POD_DIR=$STATIC_POD_DIR
STATIC_POD_URL=http://127.0.0.1:$STATIC_POD_URL_PORT/pods
NODELET_STARTED=$START_NODELET
KUBECTL=$KUBECTL
API_SERVER_URL=$API_SERVER_URL
APISERVER_GUEST_URL=$APISERVER_GUEST_URL
GUEST_HOST_IP=$GUEST_HOST_IP
CA_FILE=$PKI_DIR/ca.crt
KUBELET_CLIENT_CERT=$PKI_DIR/apiserver-kubelet-client.crt
KUBELET_CLIENT_KEY=$PKI_DIR/apiserver-kubelet-client.key
AUDIT_LOG=$AUDIT_LOG
LOG_DIR=$LOG_DIR
CONTAINERD_CONFIG=$CONTAINERD_CONFIG
CONTAINERD_ROOT=$CONTAINERD_DIR/root
CONTAINERD_STATE=$CONTAINERD_DIR/state
CONTAINERD_LOG=$LOG_DIR/containerd.log
CONTAINERD_METRICS_ADDR=127.0.0.1:$CONTAINERD_METRICS_PORT
EOF

# --- 7. nodelet --------------------------------------------------------------

node_ready() {
	local ready taints
	ready=$("$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" get node "$NODE_NAME" \
		-o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') || return 1
	taints=$("$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" get node "$NODE_NAME" -o jsonpath='{.spec.taints[*].key}') || return 1
	[[ $ready == True && $taints != *node.kubernetes.io/not-ready* ]]
}

if $START_NODELET; then
	if [[ -z $NODELET_BIN_GIVEN ]]; then
		log "Building nodelet"
		build_nodelet
	fi
	log "Starting nodelet for node $NODE_NAME (log: $NODELET_LOG)"
	mapfile -t nodelet_args <"$NODELET_ARGS_FILE"
	start_node_daemon nodelet "$NODELET_BIN" "${nodelet_args[@]}"
	wait_daemon 120 nodelet node_ready
	if $ADDONS; then
		"$REPO_ROOT/hack/addons.sh" "$PROFILE" wait-dns
	fi
fi

log "Profile $PROFILE is up ($NETWORK_MODE network mode): node $NODE_NAME, API $API_SERVER_URL, runtime $CRI_ENDPOINT, env $ENV_FILE"
echo "export KUBECONFIG=$ADMIN_KUBECONFIG"
