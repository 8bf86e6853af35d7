#!/usr/bin/env bash
# Builds the local stack's binaries, each from pinned inputs, into the build
# cache outside the clone (BUILD_CACHE_DIR, hack/lib.sh), in a folder keyed
# by the hash of what went into it (the Go version, the flags, the module's
# go.mod and go.sum, its source), and links each into .cache/bin. A tool
# already in the cache under its key is only linked: a new clone on a
# machine that built it before takes seconds.
#
#   hack/build-tools.sh              etcd, the control plane, kubectl,
#                                    kube-proxy, coredns, and the small
#                                    helpers (pause, cri-sweep, cri-smoke,
#                                    grpc-health-server, htpasswd),
#                                    local-path-provisioner, golangci-lint
#                                    and helm
#   hack/build-tools.sh NAME...      only those, e.g. `kubelet` or
#                                    `kubemark` (built only on demand, for
#                                    the benchmarks and the companion
#                                    tests), `kubeadm` and `crictl` (for
#                                    the kubeadm test bed) or `golangci-lint`
#
# cyclonedx-gomod (the release's SBOMs) and govulncheck (the lint's
# vulnerability check) are built on demand by the scripts that use them.
#
# golangci-lint, local-path-provisioner, crictl, cyclonedx-gomod and
# govulncheck are not in the tools module: each is built from its own
# module at a pinned version with `go install`, so its dependencies never
# enter hack/tools/go.mod's module graph
# (crictl's would move the Kubernetes staging modules past v1.36). CoreDNS and helm
# have modules of their own under hack/tools.
#
# The Kubernetes binaries take about 6 minutes cold on 2 cores.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELPER_BINARIES=(pause cri-sweep cri-smoke grpc-health-server htpasswd)
DEFAULT=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kube-proxy coredns helm "${HELPER_BINARIES[@]}" golangci-lint local-path-provisioner)
# CoreDNS has a module of its own (hack/tools/coredns), so that its
# dependencies do not move the control plane's; static, for its image.
COREDNS_MODULE=$TOOLS_DIR/coredns
HELM_MODULE=$TOOLS_DIR/helm

# Tools built from their own modules: name -> package@version.
declare -A GO_INSTALLED=(
	[golangci-lint]=github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	[local-path-provisioner]=github.com/rancher/local-path-provisioner@v0.0.30
	# The newest the module proxy serves that builds on this Go; the CRI
	# is v1 on both sides, so it talks to any runtime of v1.36's.
	[crictl]=sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
	# The release's SBOMs (hack/release.sh).
	[cyclonedx-gomod]=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
	# The lint phase's vulnerability check (hack/govulncheck.sh).
	[govulncheck]=golang.org/x/vuln/cmd/govulncheck@v1.9.0
)
# Their linker flags, where they stamp a version.
declare -A GO_INSTALLED_LDFLAGS=(
	[crictl]="-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=v1.37.0"
)
# Those of them that run in an image of their own, which has no C library,
# or in a guest: built static.
GO_INSTALLED_STATIC=(local-path-provisioner crictl)

KUBE_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
# The helpers are static: pause runs inside a scratch image.
HELPER_LDFLAGS="-s -w"

is_go_installed() { [[ -n ${GO_INSTALLED[$1]:-} ]]; }

is_static() { [[ " ${GO_INSTALLED_STATIC[*]} " == *" $1 "* ]]; }

is_helper() { [[ " ${HELPER_BINARIES[*]} " == *" $1 "* ]]; }

# KEYS holds each wanted tool's key, reckoned once by main.
declare -A KEYS=()

# key_of NAME prints the hash of everything NAME is built from.
key_of() {
	local name=$1
	{
		go env GOVERSION
		if is_go_installed "$name"; then
			echo "${GO_INSTALLED[$name]}"
			[[ -z ${GO_INSTALLED_LDFLAGS[$name]:-} ]] || echo "${GO_INSTALLED_LDFLAGS[$name]}"
			if is_static "$name"; then echo CGO_ENABLED=0; else go env CGO_ENABLED; fi
		elif [[ $name == coredns ]]; then
			echo "CGO_ENABLED=0 $HELPER_LDFLAGS"
			cat "$COREDNS_MODULE/go.mod" "$COREDNS_MODULE/go.sum" "$COREDNS_MODULE"/*.go
		elif [[ $name == helm ]]; then
			echo "CGO_ENABLED=0 -s -w"
			cat "$HELM_MODULE/go.mod" "$HELM_MODULE/go.sum"
		elif is_helper "$name"; then
			echo "CGO_ENABLED=0 $HELPER_LDFLAGS"
			cat "$TOOLS_DIR/go.mod" "$TOOLS_DIR/go.sum" "$TOOLS_DIR/cmd/$name"/*.go
		else
			echo "CGO_ENABLED=$(go env CGO_ENABLED) $KUBE_LDFLAGS"
			cat "$TOOLS_DIR/go.mod" "$TOOLS_DIR/go.sum" "$TOOLS_DIR/cmd/$name"/*.go
		fi
	} | sha256sum | cut -c1-16
}

# build_go_installed NAME OUT builds a tool of its own module into OUT.
build_go_installed() {
	local name=$1 out=$2 cgo
	cgo=$(go env CGO_ENABLED)
	if is_static "$name"; then cgo=0; fi
	# Outside any module, so that neither nodelet's go.mod nor the tools
	# module's takes part in the build.
	(cd / && GOBIN=$out GOFLAGS='' CGO_ENABLED=$cgo go install -ldflags "${GO_INSTALLED_LDFLAGS[$name]:-}" "${GO_INSTALLED[$name]}")
}

build_coredns() {
	log "Building coredns $(cd "$COREDNS_MODULE" && go list -m -f '{{.Version}}' github.com/coredns/coredns)"
	(cd "$COREDNS_MODULE" && CGO_ENABLED=0 go build -trimpath -ldflags "$HELPER_LDFLAGS" -o "$1/coredns" .)
}

build_helm() {
	local version
	version=$(cd "$HELM_MODULE" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
	log "Building helm $version"
	(cd "$HELM_MODULE" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
		-o "$1/helm" helm.sh/helm/v3/cmd/helm)
}

# build_batch CGO LDFLAGS NAME... builds tools module binaries in one go
# build, so they compile their shared packages once, and keeps each.
build_batch() {
	local cgo=$1 ldflags=$2
	shift 2
	(($# > 0)) || return 0
	local started=$SECONDS packages=() name out
	out=$(mktemp -d "$BUILD_CACHE_DIR/builds/.batch.XXXXXX")
	for name in "$@"; do packages+=("./cmd/$name"); done
	log "Building $*"
	if ! (cd "$TOOLS_DIR" && CGO_ENABLED=$cgo go build -trimpath -ldflags "$ldflags" -o "$out/" "${packages[@]}"); then
		rm -rf "$out"
		return 1
	fi
	for name in "$@"; do
		mkdir "$out/$name.d"
		mv "$out/$name" "$out/$name.d/$name"
		keep_build "$name" "${KEYS[$name]}" "$out/$name.d" || return 1
	done
	rm -rf "$out"
	log "Built $* in $((SECONDS - started))s"
}

# build_alone NAME builds a tool of its own kind and keeps it.
build_alone() {
	local name=$1 started=$SECONDS out
	out=$(mktemp -d "$BUILD_CACHE_DIR/builds/.$name.XXXXXX")
	if is_go_installed "$name"; then
		log "Building ${GO_INSTALLED[$name]}"
		build_go_installed "$name" "$out"
	else
		"build_$name" "$out"
	fi || {
		rm -rf "$out"
		return 1
	}
	keep_build "$name" "${KEYS[$name]}" "$out" || return 1
	log "Built $name in $((SECONDS - started))s"
}

main() {
	local wanted=("$@") name
	((${#wanted[@]} > 0)) || wanted=("${DEFAULT[@]}")
	mkdir -p "$BIN_DIR" "$BUILD_CACHE_DIR/builds"

	local kube=() helpers=() alone=()
	for name in "${wanted[@]}"; do
		is_go_installed "$name" || [[ -d $TOOLS_DIR/cmd/$name || $name == coredns || $name == helm ]] ||
			die "no such tool: $name (see $TOOLS_DIR/cmd)"
		KEYS[$name]=$(key_of "$name")
		[[ -x $(build_dir "$name" "${KEYS[$name]}")/$name ]] && continue
		if is_go_installed "$name" || [[ $name == coredns || $name == helm ]]; then
			alone+=("$name")
		elif is_helper "$name"; then
			helpers+=("$name")
		else
			kube+=("$name")
		fi
	done
	for name in "${alone[@]}"; do
		build_alone "$name" || die "could not build $name"
	done
	build_batch "$(go env CGO_ENABLED)" "$KUBE_LDFLAGS" "${kube[@]}" || die "could not build ${kube[*]}"
	build_batch 0 "$HELPER_LDFLAGS" "${helpers[@]}" || die "could not build ${helpers[*]}"
	for name in "${wanted[@]}"; do
		ln -sfn "$(build_dir "$name" "${KEYS[$name]}")/$name" "$BIN_DIR/$name"
	done
}

main "$@"
