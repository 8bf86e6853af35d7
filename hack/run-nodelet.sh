#!/usr/bin/env bash
# Runs nodelet in the foreground against a profile's stack (default up),
# built from the working tree, with the flags local-up.sh wrote:
#
#   hack/run-nodelet.sh [PROFILE] [EXTRA NODELET FLAGS...]
#
# Starts the stack without nodelet first if it is not running, and stops
# the nodelet local-up.sh started, if any: two agents must never share a
# node or a runtime.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

profile=up
if (($# > 0)) && [[ $1 != -* ]]; then
	profile=$1
	shift
fi
profile_load "$profile"
require_root
# shellcheck disable=SC2153  # PROFILE is set by profile_load

if [[ ! -f $ENV_FILE || -z $(pid_of kube-apiserver) || -z $(pid_of containerd) ]]; then
	"$REPO_ROOT/hack/local-up.sh" "$PROFILE" --no-nodelet >/dev/null
fi
stop_daemon nodelet 30

if [[ -z $NODELET_BIN_GIVEN ]]; then
	log "Building nodelet"
	build_nodelet
fi
mapfile -t args <"$NODELET_ARGS_FILE"
log "Running nodelet for node $NODE_NAME; KUBECONFIG=$ADMIN_KUBECONFIG"
exec "$NODELET_BIN" "${args[@]}" "$@"
