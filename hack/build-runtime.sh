#!/usr/bin/env bash
# Builds the runtime that can give pods user namespaces into the build
# cache (BUILD_CACHE_DIR, keyed by what goes into it) and links
# .cache/containerd2/bin to it: containerd 2.x with its runc shim, and runc 1.2+
# (Debian 12's containerd 1.6 and runc 1.1 cannot: neither does idmapped
# mounts). Built with `go install` from their own modules at pinned
# versions, outside any module, so neither nodelet's go.mod nor the tools
# module takes part; rebuilt only when a version, the tags or the Go
# version changed. About 3 minutes cold on 2 cores, seconds warm.
#
# The e2e stack of the user namespace tests runs it (local-up.sh with
# RUNTIME=containerd2), and nodelet's image carries it
# (hack/build-image.sh), for the chart's runtime pod; every other stack
# runs Debian's containerd.
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

build() {
	local out=$1
	log "Building containerd $CONTAINERD2_VERSION and runc $RUNC_VERSION"
	# shellcheck disable=SC2086  # the package and tag lists split on purpose
	(cd / && GOBIN=$out GOFLAGS= CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" -tags "$CONTAINERD_TAGS" $CONTAINERD_PACKAGES) &&
		(cd / && GOBIN=$out GOFLAGS= CGO_ENABLED=1 go install -trimpath -ldflags "-s -w" -tags "$RUNC_TAGS" "$RUNC_PACKAGE")
}

main() {
	local key dir out started=$SECONDS
	key=$(stamp | sha256sum | cut -c1-16)
	dir=$(build_dir containerd2 "$key")
	if [[ ! -x $dir/containerd || ! -x $dir/containerd-shim-runc-v2 || ! -x $dir/runc ]]; then
		mkdir -p "$BUILD_CACHE_DIR/builds"
		out=$(mktemp -d "$BUILD_CACHE_DIR/builds/.containerd2.XXXXXX")
		build "$out" || {
			rm -rf "$out"
			die "could not build containerd $CONTAINERD2_VERSION and runc $RUNC_VERSION"
		}
		keep_build containerd2 "$key" "$out" || die "could not keep the build in $dir"
		log "Built containerd and runc in $((SECONDS - started))s"
	fi
	mkdir -p "$(dirname "$CONTAINERD2_BIN_DIR")"
	# A clone from before the cache held the binaries in a real folder.
	[[ -L $CONTAINERD2_BIN_DIR || ! -e $CONTAINERD2_BIN_DIR ]] || rm -rf "$CONTAINERD2_BIN_DIR"
	ln -sfn "$dir" "$CONTAINERD2_BIN_DIR"
}

main "$@"
