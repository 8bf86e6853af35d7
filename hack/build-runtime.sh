#!/usr/bin/env bash
# Builds the runtime that can give pods user namespaces into
# .cache/containerd2/bin: containerd 2.x with its runc shim, and runc 1.2+
# (Debian 12's containerd 1.6 and runc 1.1 cannot: neither does idmapped
# mounts). Built with `go install` from their own modules at pinned
# versions, outside any module, so neither nodelet's go.mod nor the tools
# module takes part; rebuilt only when a version, the tags or the Go
# version changed. About 3 minutes cold on 2 cores, seconds warm.
#
# Only the e2e stack of the user namespace tests runs it (local-up.sh with
# RUNTIME=containerd2); every other stack runs Debian's containerd.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# runc's version is the one containerd's own CI pins for this release
# (script/setup/runc-version in containerd's module).
CONTAINERD_PACKAGES="github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD2_VERSION github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD2_VERSION"
# Static, without the snapshotters this machine has no use for (btrfs
# would need its C headers) nor OpenTelemetry tracing, which cost build
# time.
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs no_tracing"
RUNC_PACKAGE=github.com/opencontainers/runc@$RUNC_VERSION
# seccomp needs cgo and libseccomp-dev (hack/install-deps.sh); runc's own
# build also links libpathrs, a Rust library Debian 12 does not have,
# which runc does without.
RUNC_TAGS="seccomp urfave_cli_no_docs"

stamp() { printf '%s %s %s %s %s\n' "$(go env GOVERSION)" "$CONTAINERD_PACKAGES" "$CONTAINERD_TAGS" "$RUNC_PACKAGE" "$RUNC_TAGS"; }

main() {
	local stamp_file=$CONTAINERD2_BIN_DIR/.stamp started=$SECONDS
	if [[ -f $stamp_file && $(<"$stamp_file") == "$(stamp)" ]] &&
		[[ -x $CONTAINERD2_BIN_DIR/containerd && -x $CONTAINERD2_BIN_DIR/containerd-shim-runc-v2 && -x $CONTAINERD2_BIN_DIR/runc ]]; then
		return 0
	fi
	mkdir -p "$CONTAINERD2_BIN_DIR"
	log "Building containerd $CONTAINERD2_VERSION and runc $RUNC_VERSION into $CONTAINERD2_BIN_DIR"
	# shellcheck disable=SC2086  # the package and tag lists split on purpose
	(cd / && GOBIN=$CONTAINERD2_BIN_DIR GOFLAGS= CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" -tags "$CONTAINERD_TAGS" $CONTAINERD_PACKAGES) ||
		die "could not build containerd $CONTAINERD2_VERSION"
	(cd / && GOBIN=$CONTAINERD2_BIN_DIR GOFLAGS= CGO_ENABLED=1 go install -trimpath -ldflags "-s -w" -tags "$RUNC_TAGS" "$RUNC_PACKAGE") ||
		die "could not build runc $RUNC_VERSION"
	stamp >"$stamp_file"
	log "Built containerd and runc in $((SECONDS - started))s"
}

main "$@"
