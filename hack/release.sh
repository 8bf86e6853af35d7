#!/usr/bin/env bash
# Builds the host install's release tarball (what `make release` runs):
#
#   hack/release.sh [OUT_DIR]     default OUT_DIR: .cache/release
#
# writes OUT_DIR/nodelet-<version>-linux-<arch>.tar.gz, whose one folder
# holds what deploy/host/INSTALL.md lists: nodelet and nodelet-cni (the
# agent network mode's CNI shim, which nodelet looks for beside itself),
# static (CGO_ENABLED=0), without the build machine's paths (-trimpath),
# without DWARF and symbol tables (-s -w: a third smaller; stack traces
# keep their names) and stamped with the commit; the systemd unit; the
# example configuration and environment files; INSTALL.md. The version is
# version.go's baseVersion unless VERSION is set; the architecture is
# GOARCH's (the build machine's unless set).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT_DIR=${1:-$CACHE_DIR/release}
VERSION=${VERSION:-$(sed -n 's/^const baseVersion = "\(.*\)"$/\1/p' "$REPO_ROOT/version.go")}
[[ -n $VERSION ]] || die "no baseVersion in version.go"
ARCH=${GOARCH:-$(go env GOARCH)}
NAME=nodelet-$VERSION-linux-$ARCH
HOST_DIR=$REPO_ROOT/deploy/host

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$NAME
mkdir -p "$root/bin" "$root/systemd" "$root/etc/nodelet" "$root/etc/default" "$OUT_DIR"

log "Building nodelet $VERSION ($(nodelet_commit)) for linux/$ARCH"
export CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH
(cd "$REPO_ROOT" && go build -trimpath -ldflags "-s -w -X main.commit=$(nodelet_commit)" -o "$root/bin/nodelet" .)
(cd "$REPO_ROOT" && go build -trimpath -ldflags "-s -w" -o "$root/bin/nodelet-cni" ./cmd/nodelet-cni)

install -m 0644 "$HOST_DIR/nodelet.service" "$root/systemd/nodelet.service"
install -m 0644 "$HOST_DIR/config.yaml" "$root/etc/nodelet/config.yaml"
install -m 0644 "$HOST_DIR/nodelet.env" "$root/etc/default/nodelet"
install -m 0644 "$HOST_DIR/INSTALL.md" "$root/INSTALL.md"

# Owned by root, in name order, without the build's times of day: the
# same tree makes the same listing.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
	-C "$stage" -czf "$OUT_DIR/$NAME.tar.gz" "$NAME"
log "Wrote $OUT_DIR/$NAME.tar.gz"
echo "$OUT_DIR/$NAME.tar.gz"
