#!/usr/bin/env bash
# Writes a release's deployment manifests, pinned to the image it built
# (what `make release` runs after hack/release.sh):
#
#   hack/release-manifests.sh [OUT_DIR]     default OUT_DIR: .cache/release
#
# reads the manifest digest of the image tagged VERSION in the OCI layout
# hack/build-image.sh writes (IMAGE_LAYOUT, default .cache/images/nodelet)
# and writes into OUT_DIR:
#   nodelet-<chart version>.tgz      charts/nodelet packaged, its values'
#                                    image.digest set to that digest (and
#                                    image.repository to IMAGE_REPOSITORY
#                                    when given)
#   nodelet-<version>-config.tar.gz  config/ as it is, but for an images
#                                    entry in config/default pinning
#                                    ghcr.io/nodelet/nodelet to the digest
# so that both install exactly that image, by digest, by default. Then it
# writes OUT_DIR/SHA256SUMS again over every file of this version there
# (hack/release.sh's tarballs and SBOMs, and these two). The tarball
# carries no times and no owners, as hack/release.sh's.
#
# The image must have been built first (hack/build-image.sh; VERSION the
# same). Needs helm (.cache/bin, hack/build-tools.sh helm builds it) and
# python3.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT_DIR=${1:-$CACHE_DIR/release}
VERSION=${VERSION:-$(sed -n 's/^const baseVersion = "\(.*\)"$/\1/p' "$REPO_ROOT/version.go")}
[[ -n $VERSION ]] || die "no baseVersion in version.go"
IMAGE_LAYOUT=${IMAGE_LAYOUT:-$IMAGES_DIR/nodelet}
# The chart's default repository unless another is given.
CHART_REPOSITORY=ghcr.io/nodelet/nodelet
IMAGE_REPOSITORY=${IMAGE_REPOSITORY:-}
CHART_DIR=$REPO_ROOT/charts/nodelet
HELM=$BIN_DIR/helm

# layout_digest LAYOUT TAG prints the digest of the manifest index.json
# tags TAG (org.opencontainers.image.ref.name), as skopeo and umoci name
# it: the digest a registry serves the image by once pushed.
layout_digest() {
	python3 - "$1" "$2" <<'EOF'
import json, re, sys
layout, tag = sys.argv[1:3]
try:
    with open(layout + "/index.json") as f:
        index = json.load(f)
except OSError as e:
    sys.exit(f"no OCI layout at {layout}: {e.strerror}")
found = [m["digest"] for m in index.get("manifests", [])
         if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
if len(found) != 1:
    sys.exit(f"{layout} has {len(found)} manifests tagged {tag}, want one")
if not re.fullmatch(r"sha256:[a-f0-9]{64}", found[0]):
    sys.exit(f"{layout}: the manifest tagged {tag} has digest {found[0]!r}, not sha256:<64 hex>")
print(found[0])
EOF
}

# set_image_values VALUES DIGEST REPOSITORY sets image.digest (and
# image.repository when REPOSITORY is not empty) in the chart's
# values.yaml, its comments kept: exactly one line each, or it fails.
set_image_values() {
	python3 - "$@" <<'EOF'
import re, sys
path, digest, repository = sys.argv[1:4]
text = open(path).read()
block = re.search(r"^image:\n((?:(?:  .*)?\n)+)", text, re.M)
if not block:
    sys.exit(f"{path}: no image: block")
body = block.group(1)
body, n = re.subn(r'^  digest: ""$', f"  digest: {digest}", body, flags=re.M)
if n != 1:
    sys.exit(f'{path}: want one `  digest: ""` line under image:, found {n}')
if repository:
    body, n = re.subn(r"^  repository: .*$", f"  repository: {repository}", body, flags=re.M)
    if n != 1:
        sys.exit(f"{path}: want one repository line under image:, found {n}")
open(path, "w").write(text[:block.start(1)] + body + text[block.end(1):])
EOF
}

main() {
	[[ -x $HELM ]] || "$REPO_ROOT/hack/build-tools.sh" helm >&2 || die "could not build helm"
	local digest
	digest=$(layout_digest "$IMAGE_LAYOUT" "$VERSION") ||
		die "no image nodelet:$VERSION to pin (build it first: hack/build-image.sh)"
	log "Pinning the manifests of $VERSION to ${IMAGE_REPOSITORY:-$CHART_REPOSITORY}@$digest"

	stage=$(mktemp -d)
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$OUT_DIR"

	cp -r "$CHART_DIR" "$stage/nodelet"
	set_image_values "$stage/nodelet/values.yaml" "$digest" "$IMAGE_REPOSITORY" || die "could not set the chart's image"
	local chart
	chart=$("$HELM" package "$stage/nodelet" --destination "$stage/chart" | sed -n 's/^Successfully packaged chart and saved it to: //p')
	[[ -f $chart ]] || die "helm package wrote no chart"
	mv "$chart" "$OUT_DIR/"
	chart=$OUT_DIR/${chart##*/}
	log "Wrote $chart"

	local config=nodelet-$VERSION-config
	mkdir -p "$stage/$config"
	cp -r "$REPO_ROOT/config" "$stage/$config/config"
	{
		echo "images:"
		echo "- name: $CHART_REPOSITORY"
		[[ -z $IMAGE_REPOSITORY ]] || echo "  newName: $IMAGE_REPOSITORY"
		echo "  digest: $digest"
	} >>"$stage/$config/config/default/kustomization.yaml"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C "$stage/$config" -czf "$OUT_DIR/$config.tar.gz" config
	log "Wrote $OUT_DIR/$config.tar.gz"

	(cd "$OUT_DIR" && shopt -s nullglob &&
		sha256sum -- nodelet-"$VERSION"-linux-*.tar.gz nodelet-"$VERSION"-linux-*.cdx.json "$config.tar.gz" "${chart##*/}" >SHA256SUMS.new &&
		mv SHA256SUMS.new SHA256SUMS)
	log "Wrote $OUT_DIR/SHA256SUMS"
	echo "$chart"
	echo "$OUT_DIR/$config.tar.gz"
}

main "$@"
