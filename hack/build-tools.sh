#!/usr/bin/env bash
# Builds the local stack's binaries from the tools module (hack/tools) into
# .cache/bin, each only when it is missing or its inputs changed (go.mod,
# go.sum, its cmd/ folder, the Go version, the flags).
#
#   hack/build-tools.sh              etcd, the control plane, kubectl,
#                                    kube-proxy, coredns, and the small
#                                    helpers (pause, cri-sweep, cri-smoke,
#                                    grpc-health-server, htpasswd) and
#                                    local-path-provisioner
#   hack/build-tools.sh NAME...      only those, e.g. `kubelet` or
#                                    `kubemark` (built only on demand, for
#                                    the benchmarks) or `golangci-lint`
#
# golangci-lint and local-path-provisioner are not in the tools module: each
# is built from its own module at a pinned version with `go install`, so its
# dependencies never enter hack/tools/go.mod's module graph. Each is rebuilt
# only when it is missing or the pinned version or the Go version changed.
#
# The Kubernetes binaries take about 6 minutes cold on 2 cores; seconds once
# GOCACHE (.cache/go-build) is warm.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELPER_BINARIES=(pause cri-sweep cri-smoke grpc-health-server htpasswd)
DEFAULT=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kube-proxy coredns "${HELPER_BINARIES[@]}" golangci-lint local-path-provisioner)
# CoreDNS has a module of its own (hack/tools/coredns), so that its
# dependencies do not move the control plane's; static, for its image.
COREDNS_MODULE=$TOOLS_DIR/coredns

# Tools built from their own modules: name -> package@version.
declare -A GO_INSTALLED=(
	[golangci-lint]=github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	[local-path-provisioner]=github.com/rancher/local-path-provisioner@v0.0.30
)
# Those of them that run in an image of their own, which has no C library:
# built static.
GO_INSTALLED_STATIC=(local-path-provisioner)

KUBE_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
# The helpers are static: pause runs inside a scratch image.
HELPER_LDFLAGS="-s -w"

is_go_installed() { [[ -n ${GO_INSTALLED[$1]:-} ]]; }

is_static() { [[ " ${GO_INSTALLED_STATIC[*]} " == *" $1 "* ]]; }

go_installed_stamp() {
	printf '%s %s' "$(go env GOVERSION)" "${GO_INSTALLED[$1]}"
	if is_static "$1"; then printf ' CGO_ENABLED=0'; fi
	printf '\n'
}

# go_install NAME builds NAME from its own module into $BIN_DIR when it is
# missing or its stamp (Go version, package@version) changed.
go_install() {
	local name=$1 started=$SECONDS
	if [[ -x $BIN_DIR/$name && -f $BIN_DIR/.stamps/$name && $(<"$BIN_DIR/.stamps/$name") == "$(go_installed_stamp "$name")" ]]; then
		return 0
	fi
	log "Building ${GO_INSTALLED[$name]} into $BIN_DIR"
	# Outside any module, so that neither nodelet's nor the tools module's
	# go.mod takes part in the build.
	local cgo
	cgo=$(go env CGO_ENABLED)
	if is_static "$name"; then cgo=0; fi
	(cd / && GOBIN=$BIN_DIR GOFLAGS= CGO_ENABLED=$cgo go install "${GO_INSTALLED[$name]}") || return 1
	go_installed_stamp "$name" >"$BIN_DIR/.stamps/$name"
	log "Built $name in $((SECONDS - started))s"
}

is_helper() { [[ " ${HELPER_BINARIES[*]} " == *" $1 "* ]]; }

stamp_of() {
	local name=$1 flags
	if [[ $name == coredns ]]; then
		{
			go env GOVERSION
			echo "CGO_ENABLED=0 $HELPER_LDFLAGS"
			cat "$COREDNS_MODULE/go.mod" "$COREDNS_MODULE/go.sum" "$COREDNS_MODULE"/*.go
		} | sha256sum | cut -d' ' -f1
		return
	fi
	if is_helper "$name"; then flags="CGO_ENABLED=0 $HELPER_LDFLAGS"; else flags=$KUBE_LDFLAGS; fi
	{
		go env GOVERSION
		echo "$flags"
		cat "$TOOLS_DIR/go.mod" "$TOOLS_DIR/go.sum" "$TOOLS_DIR/cmd/$name"/*.go
	} | sha256sum | cut -d' ' -f1
}

build() {
	local cgo=$1 ldflags=$2
	shift 2
	(($# > 0)) || return 0
	local started=$SECONDS packages=() name
	for name in "$@"; do packages+=("./cmd/$name"); done
	log "Building $* into $BIN_DIR"
	(cd "$TOOLS_DIR" && CGO_ENABLED=$cgo go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/" "${packages[@]}")
	for name in "$@"; do
		stamp_of "$name" >"$BIN_DIR/.stamps/$name"
	done
	log "Built $* in $((SECONDS - started))s"
}

main() {
	local wanted=("$@") name
	((${#wanted[@]} > 0)) || wanted=("${DEFAULT[@]}")
	mkdir -p "$BIN_DIR/.stamps"

	local kube=() helpers=() coredns=false
	for name in "${wanted[@]}"; do
		if is_go_installed "$name"; then
			go_install "$name" || die "could not build $name"
			continue
		fi
		[[ -d $TOOLS_DIR/cmd/$name || $name == coredns ]] || die "no such tool: $name (see $TOOLS_DIR/cmd)"
		if [[ -x $BIN_DIR/$name && -f $BIN_DIR/.stamps/$name && $(<"$BIN_DIR/.stamps/$name") == "$(stamp_of "$name")" ]]; then
			continue
		fi
		if [[ $name == coredns ]]; then
			coredns=true
		elif is_helper "$name"; then
			helpers+=("$name")
		else
			kube+=("$name")
		fi
	done
	build "$(go env CGO_ENABLED)" "$KUBE_LDFLAGS" "${kube[@]}"
	build 0 "$HELPER_LDFLAGS" "${helpers[@]}"
	if $coredns; then
		local started=$SECONDS
		log "Building coredns $(cd "$COREDNS_MODULE" && go list -m -f '{{.Version}}' github.com/coredns/coredns) into $BIN_DIR"
		(cd "$COREDNS_MODULE" && CGO_ENABLED=0 go build -trimpath -ldflags "$HELPER_LDFLAGS" -o "$BIN_DIR/coredns" .)
		stamp_of coredns >"$BIN_DIR/.stamps/coredns"
		log "Built coredns in $((SECONDS - started))s"
	fi
}

main "$@"
