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
#
# Beside the tarball, it writes a CycloneDX SBOM (JSON) of each of its two
# binaries, NAME.nodelet.cdx.json and NAME.nodelet-cni.cdx.json, made by
# cyclonedx-gomod from the module list the Go toolchain stamps into the
# binary (`go version -m`): exactly the modules linked in, at their
# versions. Then OUT_DIR/SHA256SUMS, in `sha256sum -c` form, over every
# tarball and SBOM of this version in OUT_DIR, so that releases of two
# architectures built into one folder share one. The SBOMs carry no serial
# number and no time, as the tarball carries no times: the same commit
# makes the same files and the same sums.
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

# For the build machine, before GOOS and GOARCH name the release's.
"$REPO_ROOT/hack/build-tools.sh" cyclonedx-gomod >&2 || die "could not build cyclonedx-gomod"

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

for bin in nodelet nodelet-cni; do
	"$BIN_DIR/cyclonedx-gomod" bin -json -noserial -notimestamp -version "$VERSION" \
		-output "$OUT_DIR/$NAME.$bin.cdx.json" "$root/bin/$bin" ||
		die "could not write the SBOM of $bin"
done
(cd "$OUT_DIR" && sha256sum -- nodelet-"$VERSION"-linux-*.tar.gz nodelet-"$VERSION"-linux-*.cdx.json >SHA256SUMS.new && mv SHA256SUMS.new SHA256SUMS)
log "Wrote $OUT_DIR/$NAME.nodelet.cdx.json, $OUT_DIR/$NAME.nodelet-cni.cdx.json and $OUT_DIR/SHA256SUMS"
echo "$OUT_DIR/$NAME.tar.gz"
