#!/usr/bin/env bash
# Builds the stack's images without a container engine and, given a
# profile, pushes them to that profile's registry.
#
#   hack/build-images.sh            build into .cache/images (when missing
#                                   or their inputs changed)
#   hack/build-images.sh PROFILE    build, then push to the profile's
#                                   registries (which must be running)
#                                   unless the same image is already there:
#                                   each image to the open one (the
#                                   add-ons' only with ADDONS), busybox
#                                   also to the one that requires a login
#   hack/build-images.sh --kubeadm [PROFILE]
#                                   also the images `kubeadm init` runs, and
#                                   push them with the add-ons' (built only
#                                   for the kubeadm test bed, so that the
#                                   gate's setup stays as fast)
#
# busybox:1.35  Debian's static busybox with its applets linked in /bin,
#               default command sh, and grpc-health-server
#               (hack/tools/cmd/grpc-health-server) for gRPC probe tests.
# pause:3.10    the static pause program (hack/tools/cmd/pause), the
#               sandbox image containerd is configured with.
# kube-proxy:v1.36.3  kube-proxy (hack/tools/cmd/kube-proxy) with this
#               machine's iptables, iptables-save and iptables-restore (and
#               ip6tables'), their xtables modules and the shared libraries
#               they all load: kube-proxy's iptables mode runs them, and
#               they are the very ones (and backend, nft or legacy) the CNI
#               plugins use for their rules on the host.
# coredns:1.14.7  the static CoreDNS (hack/tools/coredns).
# local-path-provisioner:v0.0.30  the static local-path-provisioner, built
#               from its module: the stack's default StorageClass.
#
# With --kubeadm, under the names and tags kubeadm v1.36.3 gives a custom
# imageRepository (cmd/kubeadm/app/images, constants):
# kube-apiserver, kube-controller-manager, kube-scheduler:v1.36.3  the
#               binaries of hack/tools, with their shared libraries, on
#               PATH: kubeadm's static pods run them by name.
# etcd:3.6.8-0  the etcd of hack/tools (3.6.8, the version kubeadm v1.36
#               pins), run by name too.
# pause:3.10.2  the stack's pause, under the tag kubeadm pulls it by.
# kube-proxy and coredns are the stack's own; kubeadm is told coredns's
# tag in its ClusterConfiguration (dns.imageTag).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=hack/image-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"

IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

populate_busybox() {
	local rootfs=$1 applet
	install -D -m 0755 /bin/busybox "$rootfs/bin/busybox"
	install -D -m 0755 "$BIN_DIR/grpc-health-server" "$rootfs/bin/grpc-health-server"
	for applet in $(/bin/busybox --list); do
		[[ $applet == busybox ]] || ln -s busybox "$rootfs/bin/$applet"
	done
	install -d -m 1777 "$rootfs/tmp"
	install -d -m 0700 "$rootfs/root"
	install -d -m 0755 "$rootfs/etc" "$rootfs/home" "$rootfs/var"
	# Users for tests that set runAsUser or read id's output.
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\n' >"$rootfs/etc/group"
}

populate_pause() {
	install -D -m 0755 "$BIN_DIR/pause" "$1/pause"
}

populate_kube-proxy() {
	local rootfs=$1
	install -D -m 0755 "$BIN_DIR/kube-proxy" "$rootfs/usr/local/bin/kube-proxy"
	copy_libraries "$rootfs" "$BIN_DIR/kube-proxy"
	install_iptables "$rootfs"
	install -d -m 1777 "$rootfs/tmp"
	install -d -m 0755 "$rootfs/run" "$rootfs/var/lib/kube-proxy"
	write_loader_cache "$rootfs"
}

populate_coredns() {
	install -D -m 0755 "$BIN_DIR/coredns" "$1/coredns"
}

# local-path-provisioner runs the helper pods' scripts itself, not in its
# own image, so the binary alone will do; /tmp for client-go's caches.
populate_local-path-provisioner() {
	install -D -m 0755 "$BIN_DIR/local-path-provisioner" "$1/usr/local/bin/local-path-provisioner"
	install -d -m 1777 "$1/tmp"
}

# The control plane's images, kubeadm's static pods' (--kubeadm).
KUBEADM_IMAGES=(kube-apiserver kube-controller-manager kube-scheduler etcd)
KUBEADM_ETCD_TAG=3.6.8-0
KUBEADM_PAUSE_TAG=3.10.2

# populate_control_plane ROOTFS NAME: the binary on PATH with its
# libraries, and a /tmp.
populate_control_plane() {
	local rootfs=$1 name=$2
	install -D -m 0755 "$BIN_DIR/$name" "$rootfs/usr/local/bin/$name"
	copy_libraries "$rootfs" "$BIN_DIR/$name"
	install -d -m 1777 "$rootfs/tmp"
	write_loader_cache "$rootfs"
}
populate_kube-apiserver() { populate_control_plane "$1" kube-apiserver; }
populate_kube-controller-manager() { populate_control_plane "$1" kube-controller-manager; }
populate_kube-scheduler() { populate_control_plane "$1" kube-scheduler; }
populate_etcd() { populate_control_plane "$1" etcd; }

# build_image NAME TAG INPUT... populates an image with populate_NAME when
# the hash of the INPUTs (the files it is made from) differs from the last
# build's.
build_image() {
	local name=$1 tag=$2
	shift 2
	local layout=$IMAGES_DIR/$name stamp=$IMAGES_DIR/$name.stamp hash
	hash=$({
		sha256sum "$@"
		declare -f "populate_$name"
		[[ " ${KUBEADM_IMAGES[*]} " != *" $name "* ]] || declare -f populate_control_plane
		echo "$IMAGE_PATH"
	} | sha256sum | cut -d' ' -f1)
	if [[ -f $layout/index.json && -f $stamp && $(<"$stamp") == "$hash" ]]; then
		return 0
	fi

	log "Building image $name:$tag in $layout"
	rm -rf "$layout" "$stamp"
	local work=$IMAGES_DIR/.work-$name
	rm -rf "$work"
	umoci init --layout "$layout"
	umoci new --image "$layout:$tag"
	umoci unpack --image "$layout:$tag" "$work/bundle"
	"populate_$name" "$work/bundle/rootfs"
	umoci repack --image "$layout:$tag" "$work/bundle"
	case "$name" in
	busybox) umoci config --image "$layout:$tag" --config.env "PATH=$IMAGE_PATH" --config.cmd sh ;;
	pause) umoci config --image "$layout:$tag" --config.env "PATH=$IMAGE_PATH" --config.entrypoint /pause ;;
	kube-proxy) umoci config --image "$layout:$tag" --config.env "PATH=$IMAGE_PATH" --config.entrypoint /usr/local/bin/kube-proxy ;;
	coredns) umoci config --image "$layout:$tag" --config.env "PATH=$IMAGE_PATH" --config.entrypoint /coredns ;;
	local-path-provisioner) umoci config --image "$layout:$tag" --config.env "PATH=$IMAGE_PATH" --config.entrypoint /usr/local/bin/local-path-provisioner ;;
	*) umoci config --image "$layout:$tag" --config.env "PATH=$IMAGE_PATH" ;;
	esac
	umoci gc --layout "$layout"
	rm -rf "$work"
	echo "$hash" >"$stamp"
}

# push_image NAME TAG REGISTRY REPOSITORY[:REMOTE_TAG] [USER:PASSWORD]
# copies the image to REGISTRY/REPOSITORY:TAG (or REMOTE_TAG), logging in
# when credentials are given, unless the registry already has the same
# manifest under that tag.
push_image() {
	local name=$1 tag=$2 registry=$3 repository=$4 creds=${5:-}
	local layout=$IMAGES_DIR/$name local_digest remote_digest remote_tag=$tag
	if [[ $repository == *:* ]]; then
		remote_tag=${repository#*:}
		repository=${repository%%:*}
	fi
	local -a curl_auth=() skopeo_auth=()
	if [[ -n $creds ]]; then
		curl_auth=(--user "$creds")
		skopeo_auth=(--dest-creds "$creds")
	fi
	local_digest=sha256:$(skopeo inspect --raw "oci:$layout:$tag" | sha256sum | cut -d' ' -f1)
	remote_digest=$(curl -fsS -I "${curl_auth[@]}" \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		-H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
		"http://$registry/v2/$repository/manifests/$remote_tag" 2>/dev/null |
		tr -d '\r' | awk -F': ' 'tolower($1) == "docker-content-digest" {print $2}' || true)
	if [[ $remote_digest == "$local_digest" ]]; then
		return 0
	fi
	log "Pushing $name:$tag to $registry/$repository:$remote_tag"
	skopeo --insecure-policy copy --quiet --dest-tls-verify=false "${skopeo_auth[@]}" \
		"oci:$layout:$tag" "docker://$registry/$repository:$remote_tag"
}

main() {
	local kubeadm=false name
	if [[ ${1:-} == --kubeadm ]]; then
		kubeadm=true
		shift
	fi
	mkdir -p "$IMAGES_DIR"
	"$REPO_ROOT/hack/build-tools.sh" pause grpc-health-server
	build_image busybox "$BUSYBOX_TAG" /bin/busybox "$BIN_DIR/grpc-health-server"
	build_image pause "$PAUSE_TAG" "$BIN_DIR/pause"
	"$REPO_ROOT/hack/build-tools.sh" kube-proxy coredns
	# shellcheck disable=SC2046  # one argument per file
	build_image kube-proxy "$KUBE_VERSION" "$BIN_DIR/kube-proxy" $(iptables_inputs)
	build_image coredns "$COREDNS_TAG" "$BIN_DIR/coredns"
	"$REPO_ROOT/hack/build-tools.sh" local-path-provisioner
	build_image local-path-provisioner "$LOCAL_PATH_PROVISIONER_TAG" "$BIN_DIR/local-path-provisioner"
	if $kubeadm; then
		"$REPO_ROOT/hack/build-tools.sh" "${KUBEADM_IMAGES[@]}"
		for name in "${KUBEADM_IMAGES[@]}"; do
			build_image "$name" "$(kubeadm_tag "$name")" "$BIN_DIR/$name"
		done
	fi
	if (($# > 0)); then
		profile_load "$1"
		push_image busybox "$BUSYBOX_TAG" "$REGISTRY" busybox
		push_image pause "$PAUSE_TAG" "$REGISTRY" pause
		if $kubeadm; then
			push_image pause "$PAUSE_TAG" "$REGISTRY" "pause:$KUBEADM_PAUSE_TAG"
			for name in "${KUBEADM_IMAGES[@]}"; do
				push_image "$name" "$(kubeadm_tag "$name")" "$REGISTRY" "$name"
			done
		fi
		if $ADDONS || $kubeadm; then
			push_image kube-proxy "$KUBE_VERSION" "$REGISTRY" kube-proxy
			push_image coredns "$COREDNS_TAG" "$REGISTRY" coredns
			push_image local-path-provisioner "$LOCAL_PATH_PROVISIONER_TAG" "$REGISTRY" local-path-provisioner
		fi
		# The same busybox, behind the registry that requires a login.
		push_image busybox "$BUSYBOX_TAG" "$PRIVATE_REGISTRY" "$PRIVATE_REPOSITORY" \
			"$PRIVATE_REGISTRY_USER:$(<"$PRIVATE_REGISTRY_PASSWORD_FILE")"
	fi
}

kubeadm_tag() {
	if [[ $1 == etcd ]]; then echo "$KUBEADM_ETCD_TAG"; else echo "$KUBE_VERSION"; fi
}

main "$@"
