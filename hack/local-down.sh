#!/usr/bin/env bash
# Stops a profile's stack and removes everything it made outside .cache:
#
#   hack/local-down.sh PROFILE [--purge]
#
# nodelet first, then every pod through CRI (so the runtime runs CNI DEL and
# the addresses, veths and network namespaces go), then containerd and its
# shims, the control plane, etcd and the registry, then whatever a crash may
# have left: processes naming the state folder, processes and folders in the
# profile's cgroups, mounts under the state folder, the bridge, iptables
# rules and libcni's cache entries for the profile's network. It then checks
# that nothing of the profile is left and fails if something is.
#
# The state folder itself (logs, certificates, etcd data, the registry's
# images) stays for post-mortems unless --purge is given.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	echo "usage: $0 up|e2e [--purge]" >&2
	exit 2
}

(($# >= 1)) || usage
profile_load "$1"
shift
PURGE=false
for arg in "$@"; do
	case "$arg" in
	--purge) PURGE=true ;;
	*) usage ;;
	esac
done
require_root

log "Stopping profile $PROFILE"
sweep
if $PURGE; then
	remove_tree "$STATE_DIR"
else
	# Sockets and pidfiles of stopped daemons would only mislead.
	rm -rf "$RUN_DIR"
	rm -f "$CONTAINERD_SOCK" "$CONTAINERD_SOCK.ttrpc"
fi

leaks=$(leftovers)
if [[ -n $leaks ]]; then
	log "Profile $PROFILE left behind:"
	echo "$leaks" >&2
	exit 1
fi
log "Profile $PROFILE is down; nothing of it is left running, mounted or on the network"
