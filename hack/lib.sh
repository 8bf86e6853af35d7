# shellcheck shell=bash
# Shared by the hack/ scripts: paths, the two stack profiles, logging,
# waiting, and the sweep that removes everything a profile's stack leaves
# behind. Source it; it sets `set -euo pipefail`.
#
# Profiles run side by side without sharing anything but the machine:
#   up          what `make up` starts for a person to use;
#   e2e         what `make test` starts for the e2e suite;
#   e2e-1..9    more e2e stacks, for e2e suites run at once (E2E_PROFILE);
#   bench       the benchmark's stack (`make bench`), nodelet's node `nodelet`;
#   bench-ref   the benchmark's reference node `ref`, run by the kubelet: a
#               runtime, network and cgroups of its own on bench's control
#               plane (hack/bench.sh starts it; local-up.sh does not).
#   vm          the control plane of the systemd + cgroup v2 guests
#               (hack/vm.sh), whose nodes run in the guests.
# e2e's ports are up's plus 10000; e2e-N's are e2e's plus N*100; bench's are
# up's plus 20000, and bench-ref's node ports bench's plus 100; vm's are
# up's plus 30000.
#
# shellcheck disable=SC2034  # the variables are for the scripts sourcing this

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="$REPO_ROOT/.cache"
BIN_DIR="$CACHE_DIR/bin"
IMAGES_DIR="$CACHE_DIR/images"
TOOLS_DIR="$REPO_ROOT/hack/tools"
# BUILD_CACHE_DIR holds what is built from pinned inputs and is worth
# keeping across clones: Go's build cache (content-addressed, so any clone
# may share it), golangci-lint's analysis cache, and the tools, images and
# runtime binaries, each in a folder keyed by the hash of what went into it
# (build_cache_dir). A fresh clone on a machine that already ran the
# scripts links them instead of building them again; a fresh machine
# builds everything. Safe to delete at any time (`make clean-cache`).
BUILD_CACHE_DIR=${NODELET_BUILD_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/nodelet}
export GOCACHE="$BUILD_CACHE_DIR/go-build"
export GOLANGCI_LINT_CACHE="$BUILD_CACHE_DIR/golangci-lint"

KUBE_VERSION=v1.36.3
BUSYBOX_TAG=1.35
PAUSE_TAG=3.10
# CoreDNS's version is hack/tools/coredns/go.mod's; its image is tagged so.
COREDNS_TAG=1.14.7
# local-path-provisioner's, as hack/build-tools.sh pins it.
LOCAL_PATH_PROVISIONER_TAG=v0.0.30
# The runtime of the user namespace tests (hack/build-runtime.sh): Debian
# 12's containerd 1.6 and runc 1.1 cannot give pods user namespaces. The
# chart's runtime, nodelet's image's, is the same (hack/build-image.sh,
# and the Dockerfile's runtime stage, whose ARG defaults must be these).
CONTAINERD2_VERSION=v2.4.2
RUNC_VERSION=v1.5.2
CONTAINERD2_BIN_DIR="$CACHE_DIR/containerd2/bin"
# Where Debian's containernetworking-plugins installs the CNI plugins.
CNI_PLUGINS_DIR=/usr/lib/cni
KUBECTL="$BIN_DIR/kubectl"
# A nodelet binary given in the environment is used as it is; otherwise the
# scripts build the working tree into .cache/bin/nodelet.
NODELET_BIN_GIVEN=${NODELET_BIN:+true}
NODELET_BIN=${NODELET_BIN:-$BIN_DIR/nodelet}

# nodelet_commit is the commit stamped into nodelet (main.commit); the
# Node's nodeInfo.kubeletVersion shows it after the version of version.go.
nodelet_commit() { git -C "$REPO_ROOT" describe --always --dirty --exclude '*' 2>/dev/null || true; }

# STATIC_GO_FLAGS are build_nodelet's go flags beside CGO_ENABLED=0,
# given with it to go vet and to the e2e and chaos test binaries too, so
# that they compile nodelet's dependencies once for all of them.
STATIC_GO_FLAGS=-trimpath

# build_nodelet builds the working tree into $NODELET_BIN, stamped with
# its commit: static (CGO_ENABLED=0) and -trimpath, as the image and the
# release build it, so the stacks run what users run and the three builds
# share their compiled packages (a flag that differs compiles everything
# again: minutes on a cold machine).
build_nodelet() {
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build "$STATIC_GO_FLAGS" -ldflags "-X main.commit=$(nodelet_commit)" -o "$NODELET_BIN" .)
	# The CNI shim of the agent network mode, beside nodelet, where it
	# looks for it.
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build "$STATIC_GO_FLAGS" -o "$(dirname "$NODELET_BIN")/nodelet-cni" ./cmd/nodelet-cni)
}

# --- builds kept outside the clone ------------------------------------------

# build_dir NAME KEY prints the folder of BUILD_CACHE_DIR that holds the
# build of NAME whose inputs hash to KEY: another key (a version, a flag,
# the Go toolchain changed) is another folder, so a clone on another
# commit never takes a build that is not its own.
build_dir() { echo "$BUILD_CACHE_DIR/builds/$1/$2"; }

# keep_build NAME KEY FROM moves a finished build (the folder FROM) to its
# place in the cache. Two runs that built the same at once keep one.
keep_build() {
	local dir
	dir=$(build_dir "$1" "$2")
	mkdir -p "$(dirname "$dir")"
	mv -T "$3" "$dir" 2>/dev/null || rm -rf "$3"
	[[ -d $dir ]]
}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

require_root() {
	[[ $(id -u) -eq 0 ]] || die "$(basename "$0") must run as root (it runs containerd, mounts and network devices)"
}

# profile_load PROFILE sets every name, path and port of a profile.
profile_load() {
	PROFILE=${1:-}
	local offset control_plane_offset='' bridge=''
	# The size of the node's pod CIDR. The e2e stacks take a /25: 125
	# addresses hold the suite's pods with room to spare, and the churn
	# test wraps host-local's range with half the pods a /24 would need.
	NODE_CIDR_MASK_SIZE=24
	case "$PROFILE" in
	up)
		offset=0
		CLUSTER_CIDR=10.244.0.0/16
		SERVICE_CIDR=10.96.0.0/16
		SERVICE_IP=10.96.0.1
		NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}
		;;
	e2e)
		offset=10000
		CLUSTER_CIDR=10.245.0.0/16
		SERVICE_CIDR=10.97.0.0/16
		SERVICE_IP=10.97.0.1
		NODE_NAME=${NODE_NAME:-e2e-node}
		NODE_CIDR_MASK_SIZE=25
		;;
	e2e-[1-9])
		# More e2e stacks, for running several e2e suites at once: each
		# shifts e2e's ports by a hundred and its CIDRs by one.
		local n=${PROFILE#e2e-}
		offset=$((10000 + n * 100))
		CLUSTER_CIDR=10.$((245 + n)).0.0/16
		SERVICE_CIDR=10.$((97 + n)).0.0/16
		SERVICE_IP=10.$((97 + n)).0.1
		NODE_NAME=${NODE_NAME:-e2e-node}
		NODE_CIDR_MASK_SIZE=25
		;;
	bench)
		offset=20000
		CLUSTER_CIDR=10.240.0.0/16
		SERVICE_CIDR=10.90.0.0/16
		SERVICE_IP=10.90.0.1
		NODE_NAME=${NODE_NAME:-nodelet}
		;;
	bench-ref)
		# Shares bench's control plane, registry and cluster CIDR; the
		# controller-manager gives its Node a subnet of its own.
		offset=20100
		control_plane_offset=20000
		CLUSTER_CIDR=10.240.0.0/16
		SERVICE_CIDR=10.90.0.0/16
		SERVICE_IP=10.90.0.1
		NODE_NAME=${NODE_NAME:-ref}
		# nodelet-bench-ref is longer than a link name may be.
		bridge=kubelet-bench
		;;
	vm)
		# The control plane of the systemd + cgroup v2 guests
		# (hack/vm.sh): the node is the guest, nodelet runs in it.
		offset=30000
		CLUSTER_CIDR=10.230.0.0/16
		SERVICE_CIDR=10.110.0.0/16
		SERVICE_IP=10.110.0.1
		NODE_NAME=${NODE_NAME:-vm}
		;;
	*) die "unknown profile '$PROFILE' (want up, e2e, e2e-1 to e2e-9, bench, bench-ref or vm)" ;;
	esac
	control_plane_offset=${control_plane_offset:-$offset}

	# ADDONS: the stack runs kube-proxy (a DaemonSet on the host's
	# network, iptables mode) and CoreDNS (a Deployment behind the kube-dns
	# Service), both as pods nodelet runs, so that pods reach Services by
	# IP and by name. kube-proxy owns the host's KUBE-* iptables chains:
	# one profile at a time may run it, and the benchmark's does not.
	case "$PROFILE" in
	bench | bench-ref | vm) ADDONS=${ADDONS:-false} ;;
	*) ADDONS=${ADDONS:-true} ;;
	esac
	[[ $ADDONS == true || $ADDONS == false ]] || die "ADDONS must be true or false, not '$ADDONS'"
	# AUDIT_STATUS_BODIES: the audit log holds the nodes' status patches
	# with their bodies, from which the e2e tests time a start by the API
	# server's clock; the other stacks log every request at Metadata level,
	# the benchmarks' as on every run before.
	case "$PROFILE" in
	e2e | e2e-[1-9]) AUDIT_STATUS_BODIES=true ;;
	*) AUDIT_STATUS_BODIES=false ;;
	esac
	# The kube-dns Service's ClusterIP (the tenth of the service CIDR, as
	# kubeadm's) and the cluster's domain: nodelet's --cluster-dns and
	# --cluster-domain.
	CLUSTER_DNS_IP=${SERVICE_IP%.*}.10
	CLUSTER_DOMAIN=cluster.local

	# How long the certificates the controller-manager signs for approved
	# CSRs last (nodelet's serving certificate with
	# --rotate-server-certificates). The e2e stacks sign for two minutes,
	# so that a test sees nodelet renew its certificate.
	case "$PROFILE" in
	up) CLUSTER_SIGNING_DURATION=8760h ;;
	# A guest's client certificate outlives the VM tests.
	vm) CLUSTER_SIGNING_DURATION=24h ;;
	*) CLUSTER_SIGNING_DURATION=2m ;;
	esac

	STATE_DIR=${NODELET_STATE_DIR:-/var/lib/nodelet-local/$PROFILE}
	# The sweep deletes this folder: refuse anything that is not a
	# dedicated folder at least two levels below /.
	[[ $STATE_DIR == /*/* && $STATE_DIR != *..* && $STATE_DIR != */ ]] ||
		die "state folder '$STATE_DIR' must be an absolute path at least two levels deep, without a trailing /"

	ETCD_PORT=$((2379 + control_plane_offset))
	ETCD_PEER_PORT=$((2380 + control_plane_offset))
	APISERVER_PORT=$((6443 + control_plane_offset))
	CONTROLLER_MANAGER_PORT=$((10257 + control_plane_offset))
	SCHEDULER_PORT=$((10259 + control_plane_offset))
	# Not 5000: Debian's docker-registry package configures a system
	# registry there.
	REGISTRY_PORT=$((5100 + control_plane_offset))
	# A second registry, which requires a login, for imagePullSecrets.
	PRIVATE_REGISTRY_PORT=$((5101 + control_plane_offset))
	CONTAINERD_METRICS_PORT=$((1338 + offset))
	NODELET_METRICS_PORT=$((8080 + offset))
	NODELET_HEALTH_PORT=$((8081 + offset))
	# Where the e2e tests serve the node's static pods from (its
	# --manifest-url): nothing answers there until a test does.
	STATIC_POD_URL_PORT=$((8082 + offset))
	# The node's daemon endpoint (the kubelet's 10250).
	NODELET_PORT=$((10250 + offset))
	# A guest's ssh, forwarded from this port of the host's loopback
	# (hack/vm.sh).
	VM_SSH_PORT_DEFAULT=$((2222 + offset))
	# kube-proxy's, on the host's network, on loopback.
	KUBE_PROXY_METRICS_PORT=$((10249 + offset))
	KUBE_PROXY_HEALTH_PORT=$((10256 + offset))

	# The node's static pod manifests (its --pod-manifest-path).
	STATIC_POD_DIR=$STATE_DIR/manifests
	PKI_DIR=$STATE_DIR/pki
	KUBECONFIG_DIR=$STATE_DIR/kubeconfig
	ADMIN_KUBECONFIG=$KUBECONFIG_DIR/admin.kubeconfig
	NODE_KUBECONFIG=$KUBECONFIG_DIR/node.kubeconfig
	LOG_DIR=$STATE_DIR/logs
	RUN_DIR=$STATE_DIR/run
	AUDIT_LOG=$LOG_DIR/audit.log
	CONTAINERD_DIR=$STATE_DIR/containerd
	CONTAINERD_CONFIG=$CONTAINERD_DIR/config.toml
	CONTAINERD_SOCK=$CONTAINERD_DIR/containerd.sock
	CRI_ENDPOINT=unix://$CONTAINERD_SOCK
	CNI_CONF_DIR=$STATE_DIR/cni/net.d
	# Who runs CNI (nodelet's --network-mode): runtime, or agent, where
	# nodelet installs its shim plugin into the runtime's CNI bin folder,
	# which is then a folder of the profile's own holding links to the
	# plugins (the shared plugin folder is never written to).
	# CNI_BIN_LINKS=true gives the runtime mode such a folder too (the
	# chaos run wraps plugins there to make them fail).
	NETWORK_MODE=${NETWORK_MODE:-runtime}
	case "$NETWORK_MODE" in
	runtime)
		CNI_BIN_DIR=$CNI_PLUGINS_DIR
		[[ ${CNI_BIN_LINKS:-false} != true ]] || CNI_BIN_DIR=$STATE_DIR/cni/bin
		;;
	agent) CNI_BIN_DIR=$STATE_DIR/cni/bin ;;
	*) die "NETWORK_MODE must be runtime or agent, not '$NETWORK_MODE'" ;;
	esac
	# libcni's result files start with the network's name: the "-net"
	# suffix keeps one profile's name from being the prefix of another's.
	CNI_NETWORK_NAME=nodelet-$PROFILE-net
	CNI_BRIDGE=${bridge:-nodelet-$PROFILE}
	CGROUP_ROOT=/nodelet-$PROFILE
	# How the node makes cgroups: cgroupfs, or systemd, where the stack
	# runs a systemd of its own for the runtime and nodelet (see
	# start_node_systemd) and the pods' cgroups are its slices.
	CGROUP_DRIVER=${CGROUP_DRIVER:-cgroupfs}
	[[ $CGROUP_DRIVER == cgroupfs || $CGROUP_DRIVER == systemd ]] || die "CGROUP_DRIVER must be cgroupfs or systemd, not '$CGROUP_DRIVER'"
	NODE_SYSTEMD_DIR=$STATE_DIR/systemd
	NODELET_ROOT_DIR=$STATE_DIR/nodelet
	POD_LOG_DIR=$STATE_DIR/pod-logs
	CONTAINER_LOG_DIR=$STATE_DIR/containers
	NODELET_LOG=$LOG_DIR/nodelet.log
	# NODE_DISK_SIZE (say 4G) gives the node a file system of its own: a
	# sparse ext4 image, loop-mounted at NODE_DISK_DIR, holds nodelet's root
	# dir and containerd's root (bind-mounted where they always are), so
	# that nodefs and imagefs are the node's alone and not the host's disk,
	# whose free space other work moves by gigabytes. The e2e stacks have
	# one, which their disk eviction test fills; NODE_DISK_SIZE= (empty)
	# keeps the host's disk.
	case "$PROFILE" in
	e2e | e2e-[1-9]) NODE_DISK_SIZE=${NODE_DISK_SIZE-4G} ;;
	*) NODE_DISK_SIZE=${NODE_DISK_SIZE:-} ;;
	esac
	NODE_DISK_DIR=$STATE_DIR/node-disk
	NODE_DISK_IMAGE=$STATE_DIR/node-disk.img
	# The reference kubelet's (profile bench-ref).
	KUBELET_ROOT_DIR=$STATE_DIR/kubelet
	NODELET_ARGS_FILE=$STATE_DIR/nodelet.args
	ENV_FILE=$STATE_DIR/env
	API_SERVER_URL=https://127.0.0.1:$APISERVER_PORT
	# The API server's address in the guests of profile vm: the host's
	# loopback as qemu's user networking shows it to them; its serving
	# certificate names it too.
	GUEST_HOST_IP=10.0.2.2
	APISERVER_GUEST_URL=https://$GUEST_HOST_IP:$APISERVER_PORT
	REGISTRY=127.0.0.1:$REGISTRY_PORT
	BUSYBOX_IMAGE=$REGISTRY/busybox:$BUSYBOX_TAG
	PRIVATE_REGISTRY=127.0.0.1:$PRIVATE_REGISTRY_PORT
	PRIVATE_REGISTRY_USER=puller
	# The password is made anew by each `up`; its htpasswd line sits beside.
	PRIVATE_REGISTRY_PASSWORD_FILE=$PKI_DIR/registry-private.password
	PRIVATE_REPOSITORY=private/busybox
	PRIVATE_IMAGE=$PRIVATE_REGISTRY/$PRIVATE_REPOSITORY:$BUSYBOX_TAG
	PAUSE_IMAGE=$REGISTRY/pause:$PAUSE_TAG
	KUBE_PROXY_IMAGE=$REGISTRY/kube-proxy:$KUBE_VERSION
	COREDNS_IMAGE=$REGISTRY/coredns:$COREDNS_TAG
	LOCAL_PATH_PROVISIONER_IMAGE=$REGISTRY/local-path-provisioner:$LOCAL_PATH_PROVISIONER_TAG
	# Where local-path-provisioner makes the node's volumes.
	LOCAL_PATH_DIR=$STATE_DIR/local-path-provisioner
	ADDONS_DIR=$STATE_DIR/addons

	((${#CNI_BRIDGE} <= 15)) || die "bridge name $CNI_BRIDGE is longer than 15 characters"
	# A unix socket path must fit in 108 bytes; the runtime adds ".ttrpc".
	((${#CONTAINERD_SOCK} <= 100)) || die "state folder $STATE_DIR is too long for containerd's socket path"
}

# host_ip prints the host's address that pods reach it at (the source of
# its default route, else its first global IPv4 address): the API server
# advertises it, as the `kubernetes` Service's endpoint.
host_ip() {
	local ip
	ip=$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
	[[ -n $ip ]] || ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1)
	echo "${ip:-127.0.0.1}"
}

# --- processes -------------------------------------------------------------

# ancestors prints this shell's PID and its ancestors', which a sweep must
# never kill even when their command lines name the state folder (make
# recipes and `bash -c` lines often do).
ancestors() {
	local pid=$$
	while [[ $pid -gt 1 ]]; do
		echo "$pid"
		pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || break
	done
}

# state_pids prints the PIDs of processes whose command line names the state
# folder: every daemon of the stack does, and so do containerd's shims
# (through -address).
state_pids() {
	local skip file pid cmdline
	skip=" $(ancestors | tr '\n' ' ') $BASHPID "
	# grep narrows the candidates in one pass; the exact test follows.
	# shellcheck disable=SC2013  # /proc paths have no spaces
	for file in $(grep -laF -- "$STATE_DIR" /proc/[0-9]*/cmdline 2>/dev/null); do
		pid=${file#/proc/}
		pid=${pid%/cmdline}
		[[ $skip == *" $pid "* ]] && continue
		cmdline=$(cmdline_of "$pid")
		[[ $cmdline == *"$STATE_DIR/"* || $cmdline == *"$STATE_DIR "* ]] && echo "$pid"
	done
	return 0
}

# pid_of NAME prints the live PID recorded for daemon NAME, if its command
# line still names the state folder (so a recycled PID is never signalled).
pid_of() {
	local pidfile=$RUN_DIR/$1.pid pid cmdline state tries=0
	[[ -f $pidfile ]] || return 0
	pid=$(<"$pidfile")
	# An empty command line is a process that has exited (a zombie, or
	# gone), or one in the middle of an exec (setsid becoming the daemon),
	# which /proc shows without one for a moment: that one is read again.
	while cmdline=$(cmdline_of "$pid") && [[ -z $cmdline ]] && ((tries++ < 50)); do
		state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 0
		[[ -n $state && $state != Z ]] || return 0
		sleep 0.02
	done
	[[ $cmdline == *"$STATE_DIR"* ]] && echo "$pid"
	return 0
}

# cmdline_of PID prints the command line of PID, arguments joined by spaces.
cmdline_of() {
	{ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null || true
}

# terminate SECONDS PID... sends SIGTERM, waits, then SIGKILLs what is left.
terminate() {
	local timeout=$1
	shift
	(($# > 0)) || return 0
	kill -TERM "$@" 2>/dev/null || true
	local deadline=$((SECONDS + timeout)) pid alive
	while :; do
		alive=()
		for pid in "$@"; do
			[[ -d /proc/$pid ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] && alive+=("$pid")
		done
		((${#alive[@]} == 0)) && return 0
		if ((SECONDS >= deadline)); then
			kill -KILL "${alive[@]}" 2>/dev/null || true
			sleep 0.2
			return 0
		fi
		sleep 0.1
	done
}

# stop_daemon NAME [SECONDS] stops a daemon started by start_daemon.
stop_daemon() {
	local pid
	pid=$(pid_of "$1")
	if [[ -n $pid ]]; then
		log "Stopping $1 (pid $pid)"
		terminate "${2:-10}" "$pid"
	fi
	rm -f "$RUN_DIR/$1.pid"
}

# start_daemon NAME COMMAND... starts COMMAND in its own session, logging to
# LOG_DIR/NAME.log, and records its PID.
start_daemon() {
	local name=$1
	shift
	mkdir -p "$LOG_DIR" "$RUN_DIR"
	setsid "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$RUN_DIR/$name.pid"
	# Until the child has called exec, /proc shows this script's command
	# line in its place, and pid_of would take the daemon for gone. A
	# child that has exited already shows an empty one.
	local deadline=$((SECONDS + 10)) cmdline
	while cmdline=$(cmdline_of "$pid") && [[ -n $cmdline && $cmdline != *"$STATE_DIR"* ]] && ((SECONDS < deadline)); do
		sleep 0.02
	done
}

# daemon_alive NAME fails, showing the end of its log, once NAME has exited.
daemon_alive() {
	if [[ -z $(pid_of "$1") ]]; then
		log "$1 exited; the end of $LOG_DIR/$1.log:"
		tail -n 30 "$LOG_DIR/$1.log" >&2 || true
		return 1
	fi
}

# wait_daemon SECONDS NAME COMMAND... waits for COMMAND to succeed while
# NAME is running.
wait_daemon() {
	local timeout=$1 name=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		daemon_alive "$name" || return 1
		if ((SECONDS >= deadline)); then
			log "Timed out after ${timeout}s waiting for $name; the end of $LOG_DIR/$name.log:"
			tail -n 30 "$LOG_DIR/$name.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
}

port_free() {
	[[ -z $(ss -Hltn "sport = :$1") ]]
}

# --- containerd ------------------------------------------------------------

# start_containerd starts the profile's private containerd (config, root,
# state, socket, metrics port, CNI folder and runc root all its own), with
# the stack's registry as a plain-HTTP mirror and its pause image, and waits
# until it answers CRI.
start_containerd() {
	log "Starting containerd${RUNTIME:+ ($RUNTIME)} at $CONTAINERD_SOCK"
	mkdir -p "$CONTAINERD_DIR" "$CNI_CONF_DIR"
	if [[ ${RUNTIME:-} == containerd2 ]]; then
		start_containerd2
		return
	fi
	cat >"$CONTAINERD_CONFIG" <<EOF
# containerd for the nodelet-local profile $PROFILE: every path under
# $STATE_DIR, so that two profiles (and a system containerd) never meet.
version = 2
root = "$CONTAINERD_DIR/root"
state = "$CONTAINERD_DIR/state"
# Snapshotters this machine has no use for; they only probe and complain.
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "$CONTAINERD_SOCK"

[metrics]
  address = "127.0.0.1:$CONTAINERD_METRICS_PORT"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$CONTAINERD_DIR/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    # Lowering a process's oom_score_adj is denied on these machines; without
    # this every RunPodSandbox fails in runc.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    systemd_cgroup = false
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "$CONTAINERD_DIR/runc"
      # The same runc under a second handler name, for RuntimeClasses to
      # name (test/e2e's runtimeHandlerAlt).
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc-alt]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc-alt.options]
          SystemdCgroup = false
          Root = "$CONTAINERD_DIR/runc"

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$CNI_BIN_DIR"
      conf_dir = "$CNI_CONF_DIR"

    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REGISTRY"]
      endpoint = ["http://$REGISTRY"]
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$PRIVATE_REGISTRY"]
      endpoint = ["http://$PRIVATE_REGISTRY"]
EOF
	if [[ $CGROUP_DRIVER == systemd ]]; then
		# runc makes each container's scope through the node's systemd,
		# in the pod's slice.
		sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' "$CONTAINERD_CONFIG"
	fi
	start_node_daemon containerd containerd --config="$CONTAINERD_CONFIG" --log-level=info
	wait_daemon 30 containerd "$BIN_DIR/cri-sweep" -check -endpoint "$CRI_ENDPOINT" -timeout 2s
}

# start_containerd2 starts, in place of Debian's containerd 1.6, the
# containerd 2.x and runc of hack/build-runtime.sh, which give pods user
# namespaces (RUNTIME=containerd2: the user namespace tests' stack). The
# same private paths and settings as start_containerd's, in containerd
# 2's configuration format; its shim and runc come first on its PATH, so
# Debian's are never used.
start_containerd2() {
	"$REPO_ROOT/hack/build-runtime.sh"
	local registry
	for registry in "$REGISTRY" "$PRIVATE_REGISTRY"; do
		mkdir -p "$CONTAINERD_DIR/certs.d/$registry"
		printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' \
			"$registry" "$registry" >"$CONTAINERD_DIR/certs.d/$registry/hosts.toml"
	done
	cat >"$CONTAINERD_CONFIG" <<EOF
# containerd 2 for the nodelet-local profile $PROFILE: every path under
# $STATE_DIR, so that two profiles (and a system containerd) never meet.
version = 3
root = "$CONTAINERD_DIR/root"
state = "$CONTAINERD_DIR/state"
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.erofs",
]

[grpc]
  address = "$CONTAINERD_SOCK"

[metrics]
  address = "127.0.0.1:$CONTAINERD_METRICS_PORT"

[plugins]
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "$PAUSE_IMAGE"
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = "$CONTAINERD_DIR/certs.d"

  [plugins."io.containerd.cri.v1.runtime"]
    # As start_containerd's: lowering oom_score_adj is denied here.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "$CONTAINERD2_BIN_DIR/runc"
          SystemdCgroup = false
          Root = "$CONTAINERD_DIR/runc"
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["$CNI_BIN_DIR"]
      conf_dir = "$CNI_CONF_DIR"

  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
EOF
	PATH=$CONTAINERD2_BIN_DIR:$PATH start_daemon containerd "$CONTAINERD2_BIN_DIR/containerd" --config="$CONTAINERD_CONFIG" --log-level=info
	wait_daemon 30 containerd "$BIN_DIR/cri-sweep" -check -endpoint "$CRI_ENDPOINT" -timeout 2s
}

# --- the node's systemd (CGROUP_DRIVER=systemd) ------------------------------

# With the systemd cgroup driver, the runtime (containerd's SystemdCgroup)
# and nodelet make the pods' cgroups as slices and scopes through systemd,
# which these machines do not run as PID 1. The stack runs one of its own,
# as containers run it: PID 1 of a PID namespace, in a mount namespace of
# its own (its /proc, /run/systemd and cgroup mounts) and a cgroup
# namespace whose root is the profile's cgroup ($CGROUP_ROOT in every
# hierarchy), so that what it makes stays below that cgroup and the sweep
# removes it with the rest. It boots an empty default target and no unit
# of the host's ($SYSTEMD_UNIT_PATH holds only that target). containerd
# and nodelet run in its namespaces (start_node_daemon) and reach it on its
# private D-Bus socket, /run/systemd/private, as runc and the kubelet do;
# the host sees the node's cgroups under $CGROUP_ROOT.
NODE_SYSTEMD_BIN=/lib/systemd/systemd

# start_node_systemd starts the profile's systemd and waits until it has
# booted. Its PID (on the host) is in $RUN_DIR/systemd-init.pid.
start_node_systemd() {
	[[ -x $NODE_SYSTEMD_BIN ]] || die "$NODE_SYSTEMD_BIN is missing: the systemd cgroup driver's stack needs Debian's systemd package (hack/install-deps.sh)"
	log "Starting the node's systemd in namespaces of its own, its cgroups under $CGROUP_ROOT"
	mkdir -p "$NODE_SYSTEMD_DIR/units"
	printf '[Unit]\nDescription=The node of the nodelet-local profile %s\n' "$PROFILE" >"$NODE_SYSTEMD_DIR/units/default.target"
	local line mount_point fstype options option controllers=() mounts=() tmpfs=false
	# The host's cgroup mounts, mounted again inside, where they are
	# rooted at the namespace's cgroup.
	while read -r line; do
		mount_point=$(awk '{print $5}' <<<"${line%% - *}")
		read -r fstype _ options <<<"${line#* - }"
		case "$fstype" in
		cgroup2) mounts+=("cgroup2 $mount_point -") ;;
		cgroup)
			controllers=()
			for option in ${options//,/ }; do
				case "$option" in rw | ro | nosuid | nodev | noexec | relatime | clone_children | xattr) ;; *) controllers+=("$option") ;; esac
			done
			options=$(
				IFS=,
				echo "${controllers[*]}"
			)
			# A named hierarchy alone carries no controller.
			[[ $options == name=* ]] && options=none,$options
			mounts+=("cgroup $mount_point $options")
			;;
		tmpfs) [[ $mount_point == /sys/fs/cgroup ]] && tmpfs=true ;;
		esac
	done < <(awk '$5 == "/sys/fs/cgroup" || index($5, "/sys/fs/cgroup/") == 1' /proc/self/mountinfo)
	((${#mounts[@]} > 0)) || die "no cgroup hierarchy is mounted under /sys/fs/cgroup"

	# boot.sh moves itself into the profile's cgroup, then unshares;
	# init.sh, PID 1 of the new namespaces, mounts and becomes systemd.
	{
		echo '#!/bin/bash'
		echo 'set -euo pipefail'
		local entry
		for entry in "${mounts[@]}"; do
			read -r fstype mount_point options <<<"$entry"
			echo "mkdir -p $mount_point$CGROUP_ROOT"
			if [[ $options == *cpuset* ]]; then
				echo "[[ -n \$(<$mount_point$CGROUP_ROOT/cpuset.cpus) ]] || cat $mount_point/cpuset.cpus >$mount_point$CGROUP_ROOT/cpuset.cpus"
				echo "[[ -n \$(<$mount_point$CGROUP_ROOT/cpuset.mems) ]] || cat $mount_point/cpuset.mems >$mount_point$CGROUP_ROOT/cpuset.mems"
			fi
			echo "echo \$\$ >$mount_point$CGROUP_ROOT/cgroup.procs"
		done
		# If this shell dies, systemd and all it runs die with it.
		echo "exec unshare --pid --fork --kill-child=SIGKILL --mount --cgroup --propagation private $NODE_SYSTEMD_DIR/init.sh"
	} >"$NODE_SYSTEMD_DIR/boot.sh"
	{
		echo '#!/bin/bash'
		echo 'set -euo pipefail'
		echo 'mount -t proc proc /proc'
		# The namespace got a copy of every mount of the host's: those of
		# the other profiles' stacks (their node disks) would stay busy,
		# and their loop devices attached, as long as it lives.
		echo "awk -v dir=$(dirname "$STATE_DIR") -v own=$STATE_DIR '\$5 != own && index(\$5, own \"/\") != 1 && index(\$5, dir \"/\") == 1 { print length(\$5), \$5 }' /proc/self/mountinfo | sort -rn | cut -d' ' -f2- | xargs -r -n1 umount -l"
		$tmpfs && echo 'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup'
		for entry in "${mounts[@]}"; do
			read -r fstype mount_point options <<<"$entry"
			echo "mkdir -p $mount_point"
			if [[ $fstype == cgroup2 ]]; then
				echo "mount -t cgroup2 cgroup2 $mount_point"
			else
				echo "mount -t cgroup -o $options cgroup $mount_point"
			fi
		done
		# /run a mount point, so systemd mounts no tmpfs over the host's
		# (the runtime's shims keep their sockets in /run/containerd,
		# iptables its lock in /run/xtables.lock); the folders systemd
		# writes in private.
		echo 'mount --bind /run /run'
		echo 'for dir in /run/systemd /run/credentials; do mkdir -p $dir; mount -t tmpfs -o mode=755 tmpfs $dir; done'
		echo "export container=nodelet-local SYSTEMD_UNIT_PATH=$NODE_SYSTEMD_DIR/units"
		echo "exec $NODE_SYSTEMD_BIN --log-target=console"
	} >"$NODE_SYSTEMD_DIR/init.sh"
	chmod +x "$NODE_SYSTEMD_DIR/boot.sh" "$NODE_SYSTEMD_DIR/init.sh"

	start_daemon systemd "$NODE_SYSTEMD_DIR/boot.sh"
	adopt_child systemd "$RUN_DIR/systemd-init.pid"
	wait_daemon 60 systemd in_node systemctl is-system-running
}

# stop_node_systemd kills the node's systemd, PID 1 of its namespace, so
# that all in it die (unshare, its parent, ignores SIGTERM while it
# waits); its cgroups go with the profile's in the sweep.
stop_node_systemd() {
	local pid
	if [[ -f $RUN_DIR/systemd-init.pid ]]; then
		pid=$(<"$RUN_DIR/systemd-init.pid")
		if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == systemd ]]; then
			log "Stopping the node's systemd (pid $pid)"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		rm -f "$RUN_DIR/systemd-init.pid"
	fi
	stop_daemon systemd 10
}

# in_node COMMAND... runs COMMAND in the node's systemd's namespaces.
in_node() {
	nsenter --target "$(<"$RUN_DIR/systemd-init.pid")" --mount --pid --cgroup -- "$@"
}

# adopt_child NAME PIDFILE waits for daemon NAME (nsenter or unshare,
# which fork the command into the new PID namespace) to have its child,
# and writes the child's PID to PIDFILE.
adopt_child() {
	local pid comm deadline=$((SECONDS + 10)) child=''
	pid=$(<"$RUN_DIR/$1.pid")
	while [[ -z $child ]]; do
		# Only once it is nsenter or unshare: the script before them
		# has children of its own.
		comm=$(cat "/proc/$pid/comm" 2>/dev/null) || true
		if [[ $comm == nsenter || $comm == unshare ]]; then
			child=$(awk '{print $1}' "/proc/$pid/task/$pid/children" 2>/dev/null) || true
			[[ -n $child ]] && break
		fi
		daemon_alive "$1" || return 1
		((SECONDS < deadline)) || die "$1 (pid $pid) started no child in 10s"
		sleep 0.05
	done
	echo "$child" >"$2"
}

# start_node_daemon NAME COMMAND... starts COMMAND as start_daemon does,
# in the node's systemd's namespaces with the systemd cgroup driver; the
# PID recorded is then the command's own, which nsenter forks, so that
# stopping it stops the command.
start_node_daemon() {
	local name=$1
	shift
	if [[ $CGROUP_DRIVER != systemd ]]; then
		start_daemon "$name" "$@"
		return
	fi
	start_daemon "$name" nsenter --target "$(<"$RUN_DIR/systemd-init.pid")" --mount --pid --cgroup -- "$@"
	adopt_child "$name" "$RUN_DIR/$name.pid.child"
	mv "$RUN_DIR/$name.pid.child" "$RUN_DIR/$name.pid"
}

# --- the node's disk ---------------------------------------------------------

# mount_node_disk makes and mounts the node's own file system when
# NODE_DISK_SIZE asks for one (see profile_load). The image is sparse and
# mounted with discard, so files removed in it give the host its space
# back; the sweep unmounts it, detaches its loop device and removes it.
mount_node_disk() {
	[[ -n $NODE_DISK_SIZE ]] || return 0
	log "Giving the node a file system of its own: $NODE_DISK_SIZE of ext4 at $NODE_DISK_DIR"
	rm -f "$NODE_DISK_IMAGE"
	truncate -s "$NODE_DISK_SIZE" "$NODE_DISK_IMAGE"
	# -m 0: no blocks reserved for root, whose share would make the free
	# space nodelet sees (statfs's available) differ from df's.
	mkfs.ext4 -q -F -m 0 -E nodiscard "$NODE_DISK_IMAGE"
	mkdir -p "$NODE_DISK_DIR" "$NODELET_ROOT_DIR" "$CONTAINERD_DIR/root"
	mount -o loop,discard "$NODE_DISK_IMAGE" "$NODE_DISK_DIR"
	mkdir -p "$NODE_DISK_DIR/nodelet" "$NODE_DISK_DIR/containerd-root"
	mount --bind "$NODE_DISK_DIR/nodelet" "$NODELET_ROOT_DIR"
	mount --bind "$NODE_DISK_DIR/containerd-root" "$CONTAINERD_DIR/root"
}

# node_disk_loops prints the loop devices backed by the node's disk image.
node_disk_loops() {
	[[ -e $NODE_DISK_IMAGE ]] || return 0
	losetup -j "$NODE_DISK_IMAGE" | cut -d: -f1
}

# remove_node_disk detaches the node's disk image, once unmounted, and
# removes it: what was written to it is the host's disk space.
# A mount taken down lazily (umount -l) keeps its loop device busy until
# the kernel lets go of it, which on a loaded machine takes seconds: the
# detach is tried again for a while before it is reported.
remove_node_disk() {
	local dev loops deadline=$((SECONDS + 15))
	while loops=$(node_disk_loops) && [[ -n $loops ]]; do
		for dev in $loops; do
			losetup -d "$dev" 2>/dev/null || true
		done
		[[ -z $(node_disk_loops) ]] && break
		if ((SECONDS >= deadline)); then
			log "Could not detach $(node_disk_loops | tr '\n' ' ')($NODE_DISK_IMAGE)"
			break
		fi
		sleep 0.5
	done
	[[ -n $(node_disk_loops) ]] || rm -f "$NODE_DISK_IMAGE"
}

# --- the sweep -------------------------------------------------------------

cgroup_dirs() {
	local dir
	for dir in /sys/fs/cgroup/*"$CGROUP_ROOT"; do
		[[ -d $dir ]] && echo "$dir"
	done
	return 0
}

cgroup_procs() {
	local dir
	for dir in $(cgroup_dirs); do
		find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null || true
	done | sort -u
}

# mounts_under DIR prints the mount points at or below DIR, deepest first.
mounts_under() {
	awk -v dir="$1" '$5 == dir || index($5, dir "/") == 1 { print $5 }' /proc/self/mountinfo |
		awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

# runtime_leftovers prints the files our containerd may have left in the
# fixed places containerd 1.6 does not let us move, for the pods and tasks
# its state folder still records (a crash skips their removal):
#   /run/containerd/s/HASH  a shim's socket, HASH = sha256 of containerd's
#                           address, the namespace and the shim's ID (the
#                           pod sandbox's ID);
#   /var/lib/cni/results/cni-loopback-ID-lo  libcni's cache for the
#                           loopback network containerd adds to every pod
#                           (the entries of our own network go by its name).
runtime_leftovers() {
	local dir id namespace hash
	for dir in "$CONTAINERD_DIR"/state/io.containerd.runtime.v2.task/*/* \
		"$CONTAINERD_DIR"/{root,state}/io.containerd.grpc.v1.cri/sandboxes/*; do
		[[ -d $dir ]] || continue
		id=$(basename "$dir")
		namespace=$(basename "$(dirname "$dir")")
		[[ $namespace == sandboxes ]] && namespace=k8s.io
		hash=$(printf '%s' "$CONTAINERD_SOCK/$namespace/$id" | sha256sum | cut -d' ' -f1)
		[[ -e /run/containerd/s/$hash ]] && echo "/run/containerd/s/$hash"
		[[ -e /var/lib/cni/results/cni-loopback-$id-lo ]] && echo "/var/lib/cni/results/cni-loopback-$id-lo"
	done
	return 0
}

# sweep_iptables removes the rules the CNI plugins (bridge's ipMasq, portmap)
# made for our network, found by the comment they tag them with, and the
# per-pod chains those rules jump to.
sweep_iptables() {
	command -v iptables-save >/dev/null || return 0
	local table line chain
	local pattern="name: \\\"$CNI_NETWORK_NAME\\\""
	for table in nat filter mangle; do
		local -a rules=() chains=()
		mapfile -t rules < <(iptables-save -t "$table" 2>/dev/null | grep -F -- "$pattern" || true)
		((${#rules[@]} > 0)) || continue
		for line in "${rules[@]}"; do
			chain=$(grep -oE -- '-j CNI-(DN-|SN-)?[0-9a-f]{24}$' <<<"$line" | cut -d' ' -f2 || true)
			[[ -n $chain ]] && chains+=("$chain")
		done
		for line in "${rules[@]}"; do
			chain=$(awk '{print $2}' <<<"$line")
			[[ " ${chains[*]} " == *" $chain "* ]] && continue
			eval "iptables -t $table -D ${line#-A }" 2>/dev/null || true
		done
		for chain in "${chains[@]}"; do
			iptables -t "$table" -F "$chain" 2>/dev/null || true
			iptables -t "$table" -X "$chain" 2>/dev/null || true
		done
	done
}

# sweep removes everything a run of this profile may have left: nodelet,
# the runtime's pods (through CRI, so CNI DEL runs), the runtime and its
# shims, the control plane, the registry, then whatever a crash left behind
# regardless of how it got there: processes naming the state folder,
# processes in our cgroups, mounts under the state folder, our bridge and its
# veths, our iptables rules and our entries in libcni's fixed cache.
sweep() {
	stop_daemon nodelet 30
	# The benchmark's kubelet (bench-ref), before the runtime's pods go, or
	# it would start them again.
	stop_daemon kubelet 30
	local pid
	for pid in $(state_pids); do
		if [[ $(cmdline_of "$pid") == *"--root-dir=$NODELET_ROOT_DIR"* ]]; then
			log "Stopping nodelet (pid $pid)"
			terminate 30 "$pid"
		fi
	done

	if [[ -S $CONTAINERD_SOCK && -x $BIN_DIR/cri-sweep ]] &&
		"$BIN_DIR/cri-sweep" -check -endpoint "$CRI_ENDPOINT" -timeout 5s >/dev/null 2>&1; then
		log "Removing the runtime's pods through CRI"
		"$BIN_DIR/cri-sweep" -endpoint "$CRI_ENDPOINT" -timeout 3m >&2 ||
			log "Some pods could not be removed through CRI; sweeping what they left"
	fi
	local -a runtime_files
	mapfile -t runtime_files < <(runtime_leftovers)
	stop_daemon containerd 15
	stop_node_systemd

	local name
	for name in registry registry-private kube-scheduler kube-controller-manager kube-apiserver etcd; do
		stop_daemon "$name" 15
	done

	local -a pids
	mapfile -t pids < <(state_pids)
	if ((${#pids[@]} > 0)); then
		log "Stopping leftover processes: ${pids[*]}"
		terminate 5 "${pids[@]}"
	fi

	local dir procs
	if [[ -n $(cgroup_dirs) ]]; then
		for dir in $(cgroup_dirs); do
			# A frozen process cannot die.
			if [[ -f $dir/freezer.state ]]; then
				find "$dir" -name freezer.state -exec sh -c 'echo THAWED >"$1"' _ {} \; 2>/dev/null || true
			fi
		done
		local deadline=$((SECONDS + 10))
		while :; do
			procs=$(cgroup_procs | tr '\n' ' ')
			[[ -z ${procs// /} ]] && break
			((SECONDS >= deadline)) && {
				log "Processes still in $CGROUP_ROOT: $procs"
				break
			}
			# shellcheck disable=SC2086
			kill -KILL $procs 2>/dev/null || true
			sleep 0.2
		done
		for dir in $(cgroup_dirs); do
			find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		done
	fi

	local mount
	for mount in $(mounts_under "$STATE_DIR"); do
		umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || log "Could not unmount $mount"
	done
	remove_node_disk

	if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
		local link
		for link in $(ip -o link show master "$CNI_BRIDGE" | awk -F': ' '{print $2}' | cut -d@ -f1); do
			ip link delete "$link" 2>/dev/null || true
		done
		ip link delete "$CNI_BRIDGE" 2>/dev/null || true
	fi
	sweep_iptables
	# kube-proxy's rules outlive it: they go with its own --cleanup. They
	# are the host's one set of KUBE-* chains, so only a profile that ran
	# kube-proxy removes them, and only when no other profile's kube-proxy
	# (this one's went with its pods) still needs them: removed under it,
	# that stack's pods lose their Services until its next resync.
	if pgrep -x kube-proxy >/dev/null; then
		log "Leaving kube-proxy's iptables rules to the kube-proxy still running"
	elif [[ -d $ADDONS_DIR && -x $BIN_DIR/kube-proxy ]]; then
		log "Removing kube-proxy's iptables rules"
		mkdir -p "$LOG_DIR"
		"$BIN_DIR/kube-proxy" --cleanup >>"$LOG_DIR/kube-proxy-cleanup.log" 2>&1 ||
			log "kube-proxy --cleanup failed; see $LOG_DIR/kube-proxy-cleanup.log"
		# --cleanup leaves KUBE-FIREWALL, which kubelets may share: it
		# goes only when no rule is left in it.
		if iptables -S KUBE-FIREWALL >/dev/null 2>&1 && ! iptables -S KUBE-FIREWALL | grep -q -- '^-A'; then
			iptables -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
			iptables -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
			iptables -X KUBE-FIREWALL 2>/dev/null || true
		fi
	fi

	rm -f /var/lib/cni/results/"$CNI_NETWORK_NAME"-* "${runtime_files[@]}"
	# The kubelet links its containers' logs from a folder it does not let
	# us move.
	if [[ -d /var/log/containers ]]; then
		find /var/log/containers -maxdepth 1 -type l -lname "$STATE_DIR/*" -delete 2>/dev/null || true
	fi
	rm -rf /var/lib/cni/networks/"$CNI_NETWORK_NAME"
}

# leftovers prints what of this profile is still on the machine, if anything.
leftovers() {
	local pids mounts
	pids=$(state_pids | tr '\n' ' ')
	[[ -n $pids ]] && echo "processes: $pids"
	mounts=$(mounts_under "$STATE_DIR" | tr '\n' ' ')
	[[ -n $mounts ]] && echo "mounts: $mounts"
	local loops
	loops=$(node_disk_loops | tr '\n' ' ')
	[[ -n $loops ]] && echo "loop devices: $loops"
	ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && echo "bridge: $CNI_BRIDGE"
	[[ -n $(cgroup_dirs) ]] && echo "cgroups: $(cgroup_dirs | tr '\n' ' ')"
	local results
	results=$(compgen -G "/var/lib/cni/results/$CNI_NETWORK_NAME-*" | tr '\n' ' ' || true)
	[[ -n $results ]] && echo "CNI results: $results"
	local files
	files=$(runtime_leftovers | tr '\n' ' ')
	[[ -n $files ]] && echo "runtime files: $files"
	command -v iptables-save >/dev/null && iptables-save 2>/dev/null | grep -F -- "name: \\\"$CNI_NETWORK_NAME\\\"" | sed 's/^/iptables: /'
	return 0
}

# remove_tree DIR removes DIR unless something is still mounted below it, and
# never crosses into another filesystem.
remove_tree() {
	local dir=$1
	[[ -e $dir ]] || return 0
	if [[ -n $(mounts_under "$dir") ]]; then
		die "not removing $dir: still mounted below it: $(mounts_under "$dir" | tr '\n' ' ')"
	fi
	rm -rf --one-file-system "$dir"
}
