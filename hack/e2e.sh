#!/usr/bin/env bash
# Runs e2e tests against an e2e stack that stays up between runs: the inner
# loop while working on one test (`make e2e RUN=TestDNS`).
#
#   hack/e2e.sh [RUN [GO TEST FLAGS...]]
#
# runs `go test -run RUN` (every test when RUN is empty) of test/e2e against
# E2E_PROFILE's stack (default e2e), bringing the stack up without nodelet
# first when it is not running, and leaving it up: the next run starts in
# seconds. `make down PROFILE=e2e` stops it. A stack is brought up with the
# settings in the environment (NETWORK_MODE, RUNTIME, CGROUP_DRIVER,
# ADDONS: `NETWORK_MODE=agent make e2e RUN=TestNetwork`); one already up
# keeps those it was started with. nodelet is built from the working tree
# on every run and the test binary starts it, as in CI. TIER=full builds
# the full tier's tests too (`//go:build full`).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit

RUN=${1:-}
shift || true
profile_load "${E2E_PROFILE:-e2e}"
require_root

if [[ ! -f $ENV_FILE || -z $(pid_of kube-apiserver) || -z $(pid_of containerd) ]]; then
	log "Bringing up stack $PROFILE without nodelet; it stays up (make down PROFILE=$PROFILE)"
	"$REPO_ROOT/hack/local-up.sh" "$PROFILE" --no-nodelet
fi
if grep -qx 'NODELET_STARTED=true' "$ENV_FILE"; then
	die "stack $PROFILE runs a nodelet of its own, and the suite starts one: two must never share a node (bring it up with --no-nodelet, or use an e2e profile)"
fi
if [[ -z $NODELET_BIN_GIVEN ]]; then
	log "Building nodelet"
	build_nodelet
fi
tags=()
[[ ${TIER:-gate} == gate ]] || tags=(-tags full)
CGO_ENABLED=0 NODELET_E2E_ENV=$ENV_FILE exec go test "$STATIC_GO_FLAGS" "${tags[@]}" -count=1 -v ${RUN:+-run "$RUN"} "$@" ./test/e2e/
