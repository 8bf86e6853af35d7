#!/usr/bin/env bash
# Benchmarks nodelet against the kubelet, side by side on one stack, as root:
#
#   hack/bench.sh [BENCH AGENTS FLAGS...]      (make bench BENCH_FLAGS=...)
#
# 1. profile bench: etcd, the control plane, the registry and a containerd,
#    with nodelet (built from the working tree) as node `nodelet`;
# 2. profile bench-ref: a second containerd with its own CNI folder,
#    network, bridge, subnet, IPAM folder, cgroup root and ports, and the
#    kubelet v1.36.3 (built from k8s.io/kubernetes in hack/tools) as node
#    `ref`, with the KubeletConfiguration of hack/kubelet-lib.sh;
# 3. hack/tools/cmd/bench runs the workloads on both nodes, alternating
#    (`bench agents -h` lists its flags: runs, burst sizes, idle time);
#    after each pair of single-pod runs it pauses both agents (SIGSTOP)
#    and starts the same pod straight through CRI on each containerd: the
#    runtime's single floor, taken beside the runs it is set against;
#    after each round of bursts (one burst of a size by each agent) it
#    starts the same pods straight through CRI on each containerd, both
#    agents paused, at the parallelism it found fastest before the first
#    burst of their kind: the burst floor, taken beside the bursts too;
# 4. both agents are stopped and, only when the agents' run had no
#    single-pod runs, $BENCH_FLOOR_RUNS single floor runs are taken;
#    in 3. and 4., with BENCH_CPUS=split (the default on a machine of 2
#    CPUs or more), the control plane, the registries and the bench's
#    client run on the first half of the CPUs and the node (both
#    containerds, their shims and pods, both agents, and the bench's
#    client while it stands in for an agent as the floor's) on the other
#    half, as a node of a cluster does not share its CPUs with the
#    control plane; BENCH_CPUS=shared lets everything run anywhere, as
#    before;
# 5. the table goes to stdout and, with the raw JSON and a PNG chart, to
#    bench/results (or $BENCH_OUT);
# 6. with both profiles stopped, hack/bench-network.sh times sandbox
#    creation with the pod network in each network mode, on profile e2e-9
#    (so that it never meets a `make test` running beside), into
#    network.txt there; BENCH_NETWORK=false leaves it out.
#
# Both profiles are stopped at the end whatever happened; their state
# folders stay for post-mortems (logs/kubelet.log, logs/nodelet.log). It
# fails only when the stack or an agent cannot run, never on a timing.
#
# The kubelet does on this machine what it does on every node it runs on:
# with protectKernelDefaults false (its default) it sets vm.overcommit_memory=1,
# vm.panic_on_oom=0, kernel.panic=10, kernel.panic_on_oops=1 and the root
# keyring limits, and links container logs in /var/log/containers (the
# sweep removes those links).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=hack/kubelet-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/kubelet-lib.sh"

require_root
OUT_DIR=${BENCH_OUT:-$REPO_ROOT/bench/results}
FLOOR_RUNS=${BENCH_FLOOR_RUNS:-20}
# BENCH_NETWORK=false leaves out step 6, for a quick run of the rest.
BENCH_NETWORK=${BENCH_NETWORK:-true}
CPU_COUNT=$(nproc)
BENCH_CPUS=${BENCH_CPUS:-$( ((CPU_COUNT >= 2)) && echo split || echo shared)}
case $BENCH_CPUS in
split)
	((CPU_COUNT >= 2)) || die "BENCH_CPUS=split needs 2 CPUs or more; this machine has $CPU_COUNT"
	CONTROL_CPUS=0-$((CPU_COUNT / 2 - 1))
	NODE_CPUS=$((CPU_COUNT / 2))-$((CPU_COUNT - 1))
	SPLIT_FLAGS=(-node-cpus "$NODE_CPUS")
	;;
shared) CONTROL_CPUS=0-$((CPU_COUNT - 1)) NODE_CPUS=$CONTROL_CPUS SPLIT_FLAGS=() ;;
*) die "BENCH_CPUS=$BENCH_CPUS: want split or shared" ;;
esac
AGENTS_FLAGS=("$@")
STARTED=$SECONDS

stop_stacks() {
	"$REPO_ROOT/hack/local-down.sh" bench-ref || true
	"$REPO_ROOT/hack/local-down.sh" bench || true
}
trap stop_stacks EXIT

log "Load before the bench: $(cut -d' ' -f1-3 /proc/loadavg)"
"$REPO_ROOT/hack/build-tools.sh"
"$REPO_ROOT/hack/build-tools.sh" kubelet bench

# An earlier run's kubelet must not meet the new control plane.
profile_load bench-ref
sweep

# --- 1. the stack, nodelet's containerd and nodelet ----------------------------

# nodelet counts its CPUs when it starts, before it is confined to the
# node's: it is told the sandbox starts at once its default gives on them.
node_args=()
[[ $BENCH_CPUS == shared ]] || node_args=("--parallel-sandbox-starts=$((2 * (CPU_COUNT - CPU_COUNT / 2)))")
# Both agents know the cluster's DNS, as on a cluster: without it each
# pod's sandbox costs them two MissingClusterDNS events (the pod's and the
# node's) that no user's node sends. Nothing answers there; no bench pod
# resolves a name.
node_args+=("--cluster-dns=$CLUSTER_DNS_IP" "--cluster-domain=$CLUSTER_DOMAIN")
# The bench freezes its agents for up to a minute at a time while it takes
# the runtime's floor: the node controller waits two minutes for a Lease
# renewal before it calls a node unreachable, so that a frozen node is not
# tainted and marked NotReady in the middle of a run.
NODE_MONITOR_GRACE_PERIOD=2m NODELET_EXTRA_ARGS="${NODELET_EXTRA_ARGS:-} ${node_args[*]}" \
	"$REPO_ROOT/hack/local-up.sh" bench >/dev/null
profile_load bench
BENCH_ENV=$ENV_FILE
BENCH_PKI=$PKI_DIR
ADMIN=$ADMIN_KUBECONFIG
BENCH_AUDIT_LOG=$AUDIT_LOG
kubectl_admin() { "$KUBECTL" --kubeconfig="$ADMIN" "$@"; }

# --- 2. the kubelet's containerd and the kubelet ---------------------------------

profile_load bench-ref
if [[ -d $STATE_DIR ]]; then
	remove_tree "$STATE_DIR"
fi
leaks=$(leftovers)
[[ -z $leaks ]] || die "the sweep of bench-ref left: $leaks"
for port in $CONTAINERD_METRICS_PORT $NODELET_PORT $NODELET_HEALTH_PORT; do
	port_free "$port" || die "port $port is taken: $(ss -Hltnp "sport = :$port" | head -n1)"
done
mkdir -p "$PKI_DIR" "$KUBECONFIG_DIR" "$LOG_DIR" "$RUN_DIR" "$KUBELET_ROOT_DIR" "$POD_LOG_DIR"
chmod 0700 "$PKI_DIR" "$KUBECONFIG_DIR"
start_containerd

# The kubelet refuses a loopback node IP: give it the host's own address.
# Nothing is sent to it; the API server is never asked to reach the node.
route_dev=$(ip -4 -o route show default | awk '{print $5; exit}')
HOST_IP=$(ip -4 -o addr show dev "$route_dev" scope global | awk '{split($4, a, "/"); print a[1]; exit}')
[[ -n $HOST_IP ]] || die "no global IPv4 address on $route_dev for the kubelet's node IP"

# Its identity: a client certificate of system:node:ref from the stack's CA,
# so the Node authorizer and NodeRestriction confine it as they do nodelet.
log "Starting the kubelet for node $NODE_NAME on $CRI_ENDPOINT"
openssl genrsa -out "$PKI_DIR/kubelet-client.key" 2048 2>/dev/null
openssl req -new -key "$PKI_DIR/kubelet-client.key" -subj "/O=system:nodes/CN=system:node:$NODE_NAME" \
	-out "$PKI_DIR/kubelet-client.csr" 2>/dev/null
openssl x509 -req -in "$PKI_DIR/kubelet-client.csr" -CA "$BENCH_PKI/ca.crt" -CAkey "$BENCH_PKI/ca.key" \
	-CAserial "$BENCH_PKI/ca.srl" -days 30 -sha256 -out "$PKI_DIR/kubelet-client.crt" \
	-extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n') 2>/dev/null
rm -f "$PKI_DIR/kubelet-client.csr"
KUBELET_KUBECONFIG=$KUBECONFIG_DIR/kubelet.kubeconfig
cat >"$KUBELET_KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nodelet-bench
  cluster:
    server: $API_SERVER_URL
    certificate-authority-data: $(base64 -w0 "$BENCH_PKI/ca.crt")
users:
- name: system:node:$NODE_NAME
  user:
    client-certificate-data: $(base64 -w0 "$PKI_DIR/kubelet-client.crt")
    client-key-data: $(base64 -w0 "$PKI_DIR/kubelet-client.key")
contexts:
- name: nodelet-bench
  context:
    cluster: nodelet-bench
    user: system:node:$NODE_NAME
current-context: nodelet-bench
EOF
chmod 0600 "$KUBELET_KUBECONFIG"

KUBELET_CONFIG=$STATE_DIR/kubelet-config.yaml
write_kubelet_config "$KUBELET_CONFIG" "$CRI_ENDPOINT" true "$CGROUP_ROOT" 127.0.0.1 \
	"$NODELET_PORT" "$NODELET_HEALTH_PORT" "$BENCH_PKI/ca.crt" "$POD_LOG_DIR" "$KUBELET_ROOT_DIR"
# The cluster's DNS, as nodelet is told it (see node_args).
printf 'clusterDNS: [%s]\nclusterDomain: %s\n' "$CLUSTER_DNS_IP" "$CLUSTER_DOMAIN" >>"$KUBELET_CONFIG"
make_cgroup_root
start_daemon kubelet "$BIN_DIR/kubelet" \
	--config="$KUBELET_CONFIG" \
	--kubeconfig="$KUBELET_KUBECONFIG" \
	--hostname-override="$NODE_NAME" \
	--node-ip="$HOST_IP" \
	--root-dir="$KUBELET_ROOT_DIR"

# The controller-manager gives the Node its subnet; the runtime then gets
# the same conflist nodelet writes for its own node: bridge with host-local
# addresses, portmap, bandwidth.
pod_cidr() { kubectl_admin get node "$NODE_NAME" -o jsonpath='{.spec.podCIDR}' 2>/dev/null | grep -q .; }
wait_daemon 120 kubelet pod_cidr
POD_CIDR=$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.spec.podCIDR}')
write_kubelet_conflist "$CNI_CONF_DIR" "$CNI_NETWORK_NAME" "$CNI_BRIDGE" "$POD_CIDR"
node_ready() {
	[[ $(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}
wait_daemon 120 kubelet node_ready

REF_ENV=$ENV_FILE
cat >"$REF_ENV" <<EOF
PROFILE=$PROFILE
STATE_DIR=$STATE_DIR
ADMIN_KUBECONFIG=$ADMIN
NODE_NAME=$NODE_NAME
NODE_IP=$HOST_IP
CRI_ENDPOINT=$CRI_ENDPOINT
CONTAINERD_METRICS_ADDR=127.0.0.1:$CONTAINERD_METRICS_PORT
CGROUP_ROOT=$CGROUP_ROOT
CNI_CONF_DIR=$CNI_CONF_DIR
CNI_NETWORK_NAME=$CNI_NETWORK_NAME
CNI_BRIDGE=$CNI_BRIDGE
POD_CIDR=$POD_CIDR
BUSYBOX_IMAGE=$BUSYBOX_IMAGE
PAUSE_IMAGE=$PAUSE_IMAGE
AUDIT_LOG=$BENCH_AUDIT_LOG
KUBELET_CONFIG=$KUBELET_CONFIG
KUBELET_LOG=$LOG_DIR/kubelet.log
EOF

# --- 3. to 5. the workloads, the floor, the report ----------------------------------

# pin CPULIST PID... confines every thread of each process to CPULIST;
# what a process starts later inherits it (shims, runc, pods, CNI plugins).
pin() {
	local cpus=$1 pid
	shift
	for pid in "$@"; do
		# A process may exit between the listing and here.
		taskset -a -c -p "$cpus" "$pid" >/dev/null 2>&1 || [[ ! -d /proc/$pid ]] ||
			die "cannot confine process $pid to CPUs $cpus"
	done
}

# with_descendants PID... prints the PIDs and those of all their descendants.
with_descendants() {
	ps -e -o pid=,ppid= | awk -v roots="$*" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
		{ parent[$1] = $2 }
		END {
			do {
				grew = 0
				for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
			} while (grew)
			for (p in keep) print p
		}'
}

# The node first (every process of both profiles, their shims' pods with
# them), then the control plane's daemons of profile bench out of it.
if [[ $BENCH_CPUS == split ]]; then
	log "Confining the control plane to CPUs $CONTROL_CPUS and the node to CPUs $NODE_CPUS"
	node_pids=()
	for profile in bench bench-ref; do
		profile_load "$profile"
		mapfile -t -O "${#node_pids[@]}" node_pids < <(state_pids)
	done
	mapfile -t node_pids < <(with_descendants "${node_pids[@]}")
	pin "$NODE_CPUS" "${node_pids[@]}"
	profile_load bench
	for daemon in etcd kube-apiserver kube-controller-manager kube-scheduler registry registry-private; do
		pid=$(pid_of "$daemon")
		[[ -z $pid ]] || pin "$CONTROL_CPUS" "$pid"
	done
fi

mkdir -p "$OUT_DIR"
RESULTS=$OUT_DIR/bench.json
log "Running the workloads on nodelet and the kubelet"
taskset -c "$CONTROL_CPUS" "$BIN_DIR/bench" agents -agent "nodelet=$BENCH_ENV" -agent "kubelet=$REF_ENV" -out "$RESULTS" \
	"${SPLIT_FLAGS[@]}" "${AGENTS_FLAGS[@]}"

log "Stopping both agents for the runtime's floor"
profile_load bench
stop_daemon nodelet 30
profile_load bench-ref
stop_daemon kubelet 30
# The floor's client stands in for an agent: it runs on the node.
taskset -c "$NODE_CPUS" "$BIN_DIR/bench" floor -agent "nodelet=$BENCH_ENV" -agent "kubelet=$REF_ENV" -in "$RESULTS" -runs "$FLOOR_RUNS"

"$BIN_DIR/bench" report -in "$RESULTS" -out-dir "$OUT_DIR"

# --- 6. sandbox creation with the pod network, in each network mode --------------

stop_stacks
if [[ $BENCH_NETWORK == true ]]; then
	log "Timing sandbox creation with the pod network in each network mode"
	E2E_PROFILE=${BENCH_NETWORK_PROFILE:-e2e-9} BENCH_NETWORK_OUT=$OUT_DIR/network.txt \
		"$REPO_ROOT/hack/bench-network.sh"
fi
log "The bench took $((SECONDS - STARTED))s; results in $OUT_DIR"
