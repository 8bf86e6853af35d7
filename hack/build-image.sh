#!/usr/bin/env bash
# Builds nodelet's container image without a Docker engine, as an OCI layout
# in .cache/images/nodelet, and pushes it to a registry when given one.
# (hack/build-images.sh builds the local stack's test images.)
#
#   hack/build-image.sh                  build only
#   hack/build-image.sh PROFILE          build, then push to that profile's
#                                        registry (up or e2e; it must be running)
#   hack/build-image.sh HOST:PORT        build, then push to that registry
#
# The image is REGISTRY/nodelet:VERSION. VERSION defaults to the release's
# version (baseVersion in version.go, e.g. v0.1.0), the tag the chart's
# appVersion names; the binary is stamped with its commit (main.commit).
#
# MODE says how to build (default auto: the first that can work here):
#   dockerfile  `buildah bud` of the Dockerfile. Needs both of its base
#               images from their registry.
#   local-go    the binary from the local Go toolchain, on the Dockerfile's
#               final base with the packages its final stage installs, by
#               buildah. Needs only the final base image.
#   no-base     the static binaries on a minimal root filesystem (Debian's
#               static busybox for a shell and mount(8)), with the runtime
#               hack/build-runtime.sh builds, and this machine's CNI
#               plugins and iptables (and the libraries they load),
#               assembled with umoci. Needs no registry.
#
# Every mode gives the image what a companion node's pod runs: nodelet,
# nodelet-cni, nodelet-approver, and the runtime the pod brings (the
# chart's containerd container): containerd 2 with its runc shim, and
# runc, built from their Go modules at CONTAINERD2_VERSION and
# RUNC_VERSION (hack/lib.sh), the versions the tests run (the dockerfile
# mode builds them in the Dockerfile's runtime stage, whose defaults must
# be these; the other modes take hack/build-runtime.sh's build), in
# /usr/local/bin; the CNI plugins bridge, host-local, loopback, portmap and bandwidth (the
# node conflist nodelet writes names them) in /usr/lib/cni
# (where Debian puts them), iptables for those plugins, and blkid and
# mkfs.ext4 and mkfs.xfs for the local volumes on block devices nodelet
# formats.
#
# Beside the layout, SBOM_DIR (.cache/images/nodelet.sbom) holds a CycloneDX
# SBOM (JSON) of each of the image's Go programs, nodelet.cdx.json,
# nodelet-cni.cdx.json and nodelet-approver.cdx.json, and containerd's,
# its shim's and runc's, made by cyclonedx-gomod from the module list
# stamped into the binaries, built as the image's are. They cover the Go
# modules linked into those programs, not the base image's packages (the
# CNI plugins, iptables, busybox, libseccomp), which their distributions
# account for.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=hack/image-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"

MODE=${MODE:-auto}
# The release's version, version.go's baseVersion: the tag the chart's
# appVersion names.
VERSION=${VERSION:-$(sed -n 's/^const baseVersion = "\(.*\)"$/\1/p' "$REPO_ROOT/version.go")}
DOCKERFILE=$REPO_ROOT/Dockerfile
LAYOUT=$IMAGES_DIR/nodelet
SBOM_DIR=$IMAGES_DIR/nodelet.sbom
# The CNI plugins the image carries, as the Dockerfile's.
CNI_PLUGINS="bridge host-local loopback portmap bandwidth"
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# buildah keeps its images and containers under .cache, on vfs: no overlay
# mounts to leave behind, and nothing in the machine's own storage.
BUILDAH=(buildah --storage-driver vfs --root "$CACHE_DIR/buildah/storage" --runroot "$CACHE_DIR/buildah/run")
export BUILDAH_ISOLATION=chroot

# The Dockerfile is the one description of the image; the other modes read
# its base images and the packages of its final stage from it.
build_base() { awk '$1 == "FROM" && tolower($NF) == "build" { for (i = 2; i <= NF; i++) if ($i !~ /^--/) { print $i; exit } }' "$DOCKERFILE"; }
final_base() { awk '$1 == "FROM" { for (i = 2; i <= NF; i++) if ($i !~ /^--/) { image = $i; break } } END { print image }' "$DOCKERFILE"; }
final_packages() { sed -n 's/.*apt-get install -y --no-install-recommends \(.*\) \\$/\1/p' "$DOCKERFILE" | tail -n 1; }
# dockerfile_arg NAME is the default of the Dockerfile's ARG NAME.
dockerfile_arg() { sed -n "s/^ARG $1=\(.*\)$/\1/p" "$DOCKERFILE" | head -n 1; }
# The programs of the runtime the image carries, from hack/build-runtime.sh.
RUNTIME_PROGRAMS="containerd containerd-shim-runc-v2 runc"

# check_runtime_versions fails unless the Dockerfile builds the runtime
# the tests run: one version, written in hack/lib.sh, for both.
check_runtime_versions() {
	local arg want
	for arg in CONTAINERD_VERSION:$CONTAINERD2_VERSION RUNC_VERSION:$RUNC_VERSION; do
		want=${arg#*:}
		[[ $(dockerfile_arg "${arg%%:*}") == "$want" ]] ||
			die "the Dockerfile's ARG ${arg%%:*} is '$(dockerfile_arg "${arg%%:*}")', not hack/lib.sh's $want: make them one"
	done
}

# build_runtime builds (or finds in the build cache) the runtime the image
# carries, into CONTAINERD2_BIN_DIR.
build_runtime() {
	"$REPO_ROOT/hack/build-runtime.sh" || die "could not build containerd $CONTAINERD2_VERSION and runc $RUNC_VERSION"
}

ensure_packages() {
	local missing=() package
	for package in "$@"; do
		dpkg -s "$package" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$package")
	done
	((${#missing[@]} == 0)) && return 0
	log "Installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
}

pullable() {
	timeout 60 skopeo inspect --raw "docker://$1" >/dev/null 2>&1
}

pick_mode() {
	local build final
	build=$(build_base)
	final=$(final_base)
	[[ -n $build && -n $final ]] || die "cannot read the base images from $DOCKERFILE"
	if pullable "$build" && pullable "$final"; then
		echo dockerfile
		return
	fi
	log "Cannot pull $build; not building from the Dockerfile"
	if pullable "$final"; then
		echo local-go
		return
	fi
	log "Cannot pull $final either; building an image without a base"
	echo no-base
}

# build_binary FILE builds nodelet as the Dockerfile's build stage does.
build_binary() {
	log "Building nodelet $VERSION with $(go env GOVERSION)"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=linux go build -trimpath \
		-ldflags "-s -w -X main.commit=$(nodelet_commit)" -o "$1" .)
	# The agent network mode's CNI shim, beside nodelet.
	(cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=linux go build -trimpath \
		-ldflags "-s -w" -o "$(dirname "$1")/nodelet-cni" ./cmd/nodelet-cni)
	# The approver of the DaemonSet pods' certificates, run by the chart's
	# Deployment from the same image.
	(cd "$REPO_ROOT" && CGO_ENABLED=0 GOOS=linux go build -trimpath \
		-ldflags "-s -w" -o "$(dirname "$1")/nodelet-approver" ./cmd/nodelet-approver)
}

labels() {
	printf '%s\n' \
		org.opencontainers.image.title=nodelet \
		"org.opencontainers.image.description=A Kubernetes node agent built as a controller-runtime operator" \
		org.opencontainers.image.source=https://github.com/nodelet/nodelet \
		"org.opencontainers.image.version=$VERSION"
}

build_dockerfile() {
	ensure_packages buildah
	# buildah 1.28 does not set TARGETARCH by itself as BuildKit does.
	"${BUILDAH[@]}" bud --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$(nodelet_commit)" --build-arg "TARGETARCH=$(go env GOARCH)" \
		--build-arg "CONTAINERD_VERSION=$CONTAINERD2_VERSION" --build-arg "RUNC_VERSION=$RUNC_VERSION" \
		-f "$DOCKERFILE" -t "nodelet:$VERSION" "$REPO_ROOT"
	"${BUILDAH[@]}" push "nodelet:$VERSION" "oci:$LAYOUT:$VERSION"
}

build_local_go() {
	ensure_packages buildah
	local packages container label config=()
	packages=$(final_packages)
	[[ -n $packages ]] || die "cannot read the final stage's packages from $DOCKERFILE"
	build_binary "$work/nodelet"
	build_runtime
	container=$("${BUILDAH[@]}" from --pull "$(final_base)")
	# shellcheck disable=SC2064 # the container's name is known now
	trap "${BUILDAH[*]} rm $container >/dev/null 2>&1 || true; rm -rf $work" EXIT
	"${BUILDAH[@]}" run "$container" -- sh -c \
		"export DEBIAN_FRONTEND=noninteractive && apt-get update && apt-get install -y --no-install-recommends $packages && rm -rf /var/lib/apt/lists/*"
	"${BUILDAH[@]}" copy --chmod 0755 "$container" "$work/nodelet" /usr/local/bin/nodelet
	"${BUILDAH[@]}" copy --chmod 0755 "$container" "$work/nodelet-cni" /usr/local/bin/nodelet-cni
	"${BUILDAH[@]}" copy --chmod 0755 "$container" "$work/nodelet-approver" /usr/local/bin/nodelet-approver
	local program
	for program in $RUNTIME_PROGRAMS; do
		"${BUILDAH[@]}" copy --chmod 0755 "$container" "$CONTAINERD2_BIN_DIR/$program" "/usr/local/bin/$program"
	done
	while IFS= read -r label; do config+=(--label "$label"); done < <(labels)
	# As in a Dockerfile, a new entrypoint drops the base's command.
	"${BUILDAH[@]}" config --cmd '' "$container"
	"${BUILDAH[@]}" config "${config[@]}" --user 0:0 --entrypoint '["/usr/local/bin/nodelet"]' "$container"
	"${BUILDAH[@]}" commit "$container" "oci:$LAYOUT:$VERSION"
}

populate_no_base() {
	local rootfs=$1 applet
	install -D -m 0755 "$work/nodelet" "$rootfs/usr/local/bin/nodelet"
	install -D -m 0755 "$work/nodelet-cni" "$rootfs/usr/local/bin/nodelet-cni"
	install -D -m 0755 "$work/nodelet-approver" "$rootfs/usr/local/bin/nodelet-approver"
	# The runtime the pod brings, hack/build-runtime.sh's (the Dockerfile
	# builds the same), in /usr/local/bin, with runc's libraries
	# (libseccomp, the C library).
	local program
	for program in $RUNTIME_PROGRAMS; do
		install -D -m 0755 "$CONTAINERD2_BIN_DIR/$program" "$rootfs/usr/local/bin/$program"
		copy_libraries "$rootfs" "$CONTAINERD2_BIN_DIR/$program"
	done
	for program in $CNI_PLUGINS; do
		[[ -x $CNI_PLUGINS_DIR/$program ]] || die "no CNI plugin $program in $CNI_PLUGINS_DIR (Debian package containernetworking-plugins)"
		copy_with_libraries "$rootfs" "$CNI_PLUGINS_DIR/$program"
	done
	install_iptables "$rootfs"
	install_format_tools "$rootfs"
	write_loader_cache "$rootfs"
	install -D -m 0755 /bin/busybox "$rootfs/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[[ $applet == busybox ]] || ln -s busybox "$rootfs/bin/$applet"
	done
	install -d -m 1777 "$rootfs/tmp"
	install -d -m 0700 "$rootfs/root"
	install -d -m 0755 "$rootfs/etc" "$rootfs/run" "$rootfs/var" "$rootfs/var/lib"
	ln -s ../run "$rootfs/var/run"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\n' >"$rootfs/etc/group"
}

# install_format_tools ROOTFS copies what a local volume on a block device
# needs (internal/volume/local_device_linux.go) and busybox does not have: the
# host's blkid, to see what is on the device, mke2fs under the names
# nodelet runs it by (mkfs.<fsType>) and mkfs.xfs, with their libraries
# and mke2fs's configuration, as Debian's util-linux, e2fsprogs and
# xfsprogs give them to the Dockerfile's image.
install_format_tools() {
	local rootfs=$1 program name
	for program in blkid mke2fs mkfs.xfs; do
		command -v "$program" >/dev/null || die "no $program on this machine (Debian packages util-linux, e2fsprogs and xfsprogs)"
		copy_with_libraries "$rootfs" "$(readlink -f "$(command -v "$program")")"
	done
	program=$(readlink -f "$(command -v mke2fs)")
	for name in mkfs.ext2 mkfs.ext3 mkfs.ext4; do
		ln -sf "$(basename "$program")" "$rootfs$(dirname "$program")/$name"
	done
	if [[ -f /etc/mke2fs.conf ]]; then
		install -D -m 0644 /etc/mke2fs.conf "$rootfs/etc/mke2fs.conf"
	fi
	# mke2fs refuses a device that is mounted, which it reads from mtab.
	install -d -m 0755 "$rootfs/etc"
	ln -sf ../proc/self/mounts "$rootfs/etc/mtab"
}

build_no_base() {
	# busybox-static's /bin/busybox: the image has no libc of its own; the
	# runtime's and iptables' libraries are copied with them.
	ensure_packages umoci busybox-static containernetworking-plugins iptables util-linux e2fsprogs xfsprogs
	build_binary "$work/nodelet"
	build_runtime
	umoci init --layout "$LAYOUT"
	umoci new --image "$LAYOUT:$VERSION"
	umoci unpack --image "$LAYOUT:$VERSION" "$work/bundle"
	populate_no_base "$work/bundle/rootfs"
	umoci repack --image "$LAYOUT:$VERSION" "$work/bundle"
	local label config=()
	while IFS= read -r label; do config+=(--config.label "$label"); done < <(labels)
	umoci config --image "$LAYOUT:$VERSION" "${config[@]}" \
		--config.env "PATH=$IMAGE_PATH" --config.user 0:0 --config.entrypoint /usr/local/bin/nodelet
	umoci gc --layout "$LAYOUT"
}

# write_sbom writes SBOM_DIR from the binaries the local modes built in
# $work, or builds them so when the Dockerfile built the image's.
write_sbom() {
	local bin
	[[ -x $work/nodelet ]] || build_binary "$work/nodelet"
	rm -rf "$SBOM_DIR"
	mkdir -p "$SBOM_DIR"
	for bin in nodelet nodelet-cni nodelet-approver; do
		"$BIN_DIR/cyclonedx-gomod" bin -json -noserial -notimestamp -version "$VERSION" \
			-output "$SBOM_DIR/$bin.cdx.json" "$work/$bin" || return 1
	done
	# The runtime's, at the versions the Dockerfile builds too.
	[[ -x $CONTAINERD2_BIN_DIR/runc ]] || build_runtime
	for bin in $RUNTIME_PROGRAMS; do
		"$BIN_DIR/cyclonedx-gomod" bin -json -noserial -notimestamp \
			-output "$SBOM_DIR/$bin.cdx.json" "$CONTAINERD2_BIN_DIR/$bin" || return 1
	done
	log "Wrote the SBOMs of the image's programs in $SBOM_DIR"
}

push() {
	local registry=$1
	curl -fsS -o /dev/null "http://$registry/v2/" ||
		die "no registry answers at $registry (start the stack first, e.g. hack/local-up.sh e2e)"
	log "Pushing nodelet:$VERSION to $registry"
	skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
		"oci:$LAYOUT:$VERSION" "docker://$registry/nodelet:$VERSION"
}

main() {
	local target=${1:-} registry=""
	if [[ -n $target ]]; then
		if [[ $target == *:* ]]; then
			registry=$target
		else
			profile_load "$target"
			registry=$REGISTRY
		fi
	fi
	require_root
	[[ $VERSION =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "VERSION '$VERSION' is not a valid image tag"
	ensure_packages skopeo
	check_runtime_versions
	"$REPO_ROOT/hack/build-tools.sh" cyclonedx-gomod || die "could not build cyclonedx-gomod"

	local mode=$MODE
	[[ $mode == auto ]] && mode=$(pick_mode)
	case "$mode" in
	dockerfile | local-go | no-base) ;;
	*) die "unknown MODE '$mode' (want auto, dockerfile, local-go or no-base)" ;;
	esac

	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$IMAGES_DIR"
	rm -rf "$LAYOUT"
	local started=$SECONDS
	log "Building image nodelet:$VERSION ($mode)"
	"build_${mode//-/_}"
	log "Built nodelet:$VERSION in $LAYOUT in $((SECONDS - started))s ($mode)"
	write_sbom || die "could not write the image's SBOMs"

	if [[ -n $registry ]]; then
		push "$registry"
	fi
	local digest
	digest=sha256:$(skopeo inspect --raw "oci:$LAYOUT:$VERSION" | sha256sum | cut -d' ' -f1)
	if [[ -n $registry ]]; then
		echo "$registry/nodelet:$VERSION@$digest"
	else
		echo "oci:$LAYOUT:$VERSION@$digest"
	fi
}

main "$@"
