#!/usr/bin/env bash
# Benchmarks sandbox creation with pod networking in each network mode:
# for runtime, then agent, it brings the e2e stack up in that mode, runs
# BenchmarkSandboxCreation (test/e2e) 50 times against it with nodelet
# running, and stops the stack. Prints the median and 99th percentile.
#
#   hack/bench-network.sh            (E2E_PROFILE picks the stack, default e2e)
#
# With BENCH_NETWORK_OUT set, the figures also go to that file (make bench
# runs this after the agents' bench, into bench/results/network.txt).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit
require_root

E2E_PROFILE=${E2E_PROFILE:-e2e}
BENCH_COUNT=${BENCH_COUNT:-50}
STACK_UP=false
stop_stack() {
	if $STACK_UP; then
		STACK_UP=false
		"$REPO_ROOT/hack/local-down.sh" "$E2E_PROFILE"
	fi
}
trap stop_stack EXIT

[[ -n $NODELET_BIN_GIVEN ]] || build_nodelet
OUT=${BENCH_NETWORK_OUT:-/dev/null}
{
	echo "$(date -u '+%Y-%m-%d, %H:%M UTC'): RunPodSandbox with the pod network, $BENCH_COUNT sandboxes in each network mode"
	echo "1-minute load average at the start: $(cut -d' ' -f1 /proc/loadavg)"
} | tee "$OUT"
rc=0
for mode in runtime agent; do
	NETWORK_MODE=$mode
	profile_load "$E2E_PROFILE"
	STACK_UP=true
	# Without kube-proxy and CoreDNS: the figure is the sandbox's network alone.
	ADDONS=false NETWORK_MODE=$mode "$REPO_ROOT/hack/local-up.sh" "$E2E_PROFILE" --no-nodelet || { rc=1; stop_stack; continue; }
	NODELET_E2E_ENV=$ENV_FILE go test -count=1 -run '^$' -bench '^BenchmarkSandboxCreation$' \
		-benchtime "${BENCH_COUNT}x" -v ./test/e2e/ | grep -E 'Benchmark|network mode|^(ok|FAIL)' | tee -a "$OUT" || rc=1
	stop_stack
done
exit $rc
