#!/usr/bin/env bash
# Measures what N nodes cost the control plane with nodelet and with the
# kubelet, as root:
#
#   hack/bench-scale.sh [BENCH SCALE FLAGS...]      (make bench-scale BENCH_SCALE_FLAGS=...)
#
# For each agent in turn (nodelet, then the kubelet):
# 1. a stack with no node of its own (profile $BENCH_SCALE_PROFILE, bench
#    by default): etcd, kube-apiserver with its audit log (every request,
#    Metadata level), kube-controller-manager and kube-scheduler with their
#    client limits lifted to $BENCH_SCALE_QPS requests per second, so that
#    the burst is not paced by them;
# 2. hack/tools/cmd/bench (`bench scale -h` lists its flags) gives
#    $BENCH_SCALE_NODES hollow nodes (100 by default) an identity each, a
#    client certificate of system:node:NAME, measures the control plane
#    alone, starts the nodes (nodelet: cmd/hollow-nodelet, every node in one
#    process; the kubelet: kubemark's hollow kubelet from k8s.io/kubernetes
#    v1.36.3, one process per node; both over a fake CRI), measures them
#    idle, then through a Deployment of 30 pods per node created at once,
#    run, and scaled to zero; the nodes reach the API server through a
#    proxy that counts their bytes;
# 3. the stack is stopped.
# The table goes to stdout and, with both runs' JSON, to bench/results (or
# $BENCH_OUT): scale.txt, scale-nodelet.json, scale-kubelet.json. It fails
# only when the stack or the nodes cannot run, never on a figure.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
OUT_DIR=${BENCH_OUT:-$REPO_ROOT/bench/results}
SCALE_PROFILE=${BENCH_SCALE_PROFILE:-bench}
NODES=${BENCH_SCALE_NODES:-100}
QPS=${BENCH_SCALE_QPS:-200}
SCALE_FLAGS=("$@")
STARTED=$SECONDS

stop_stack() { "$REPO_ROOT/hack/local-down.sh" "$SCALE_PROFILE" >/dev/null || true; }
trap stop_stack EXIT

log "Load before the bench: $(cut -d' ' -f1-3 /proc/loadavg)"
"$REPO_ROOT/hack/build-tools.sh"
"$REPO_ROOT/hack/build-tools.sh" kubemark bench
log "Building hollow-nodelet into $BIN_DIR"
(cd "$REPO_ROOT" && go build -ldflags "-X main.version=v0.1.0-hollow+$(nodelet_commit)" -o "$BIN_DIR/hollow-nodelet" ./cmd/hollow-nodelet)

mkdir -p "$OUT_DIR"
for agent in nodelet kubelet; do
	log "Starting profile $SCALE_PROFILE for $NODES hollow nodes of the $agent"
	# No node disk, no addons: no node of the stack's own runs pods.
	NODE_DISK_SIZE='' ADDONS=false CONTROL_PLANE_QPS=$QPS \
		"$REPO_ROOT/hack/local-up.sh" "$SCALE_PROFILE" --no-nodelet >/dev/null
	profile_load "$SCALE_PROFILE"
	"$BIN_DIR/bench" scale -agent "$agent" -nodes "$NODES" \
		-kubeconfig "$ADMIN_KUBECONFIG" -state-dir "$STATE_DIR" \
		-hollow-nodelet "$BIN_DIR/hollow-nodelet" -kubemark "$BIN_DIR/kubemark" \
		-out "$OUT_DIR/scale-$agent.json" "${SCALE_FLAGS[@]}"
	stop_stack
done

"$BIN_DIR/bench" scale-report -in "$OUT_DIR/scale-nodelet.json" -in "$OUT_DIR/scale-kubelet.json" -out-dir "$OUT_DIR"
log "The bench took $((SECONDS - STARTED))s; results in $OUT_DIR"
