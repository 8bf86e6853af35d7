#!/usr/bin/env bash
# Installs, on Debian 12 as root, the packages the local stack and the tests
# need, skipping what is already there. The Go toolchain is not installed
# here: it is a prerequisite (go.mod's go line says which version).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(
	containerd                   # the CRI runtime (1.6 in Debian 12)
	runc                         # its OCI runtime
	containernetworking-plugins  # bridge, host-local, loopback, portmap in /usr/lib/cni
	docker-registry              # an OCI registry on loopback for the test images
	busybox-static               # the busybox image's userland
	umoci                        # builds OCI images without a daemon
	skopeo                       # pushes them to the registry
	iproute2                     # ip, ss: bridges, veths, ports
	iptables                     # the CNI plugins' masquerade and port rules
	openssl                      # the stack's keys and certificates
	curl                         # health checks
	ca-certificates
	gcc                          # cgo, which `go test -race` needs
	libc6-dev
	libseccomp-dev               # runc 1.2+ for the user namespace tests (build-runtime.sh)
	make                         # .ci/run calls make test
	python3-yaml                 # check-manifests.sh compares RBAC rules
	systemd                      # the systemd cgroup driver's stack runs its own (lib.sh)
	e2fsprogs                    # mkfs.ext4: local volumes on block devices are formatted
	util-linux                   # blkid, nsenter, unshare (the local device and network namespace tests)
	mount                        # mount, losetup
)

# `hack/install-deps.sh vm`: what hack/vm.sh needs besides, to build a
# guest image from Debian's packages and boot it.
if [[ ${1:-} == vm ]]; then
	PACKAGES=(
		qemu-system-x86          # runs the guest (TCG, or KVM where it works)
		qemu-utils               # qemu-img: each boot's copy-on-write layer
		mmdebstrap               # the guest's root file system from Debian's packages
		openssh-client           # drives the guest
		socat                    # asks qemu's monitor about a guest (hack/vm.sh status)
		e2fsprogs                # mkfs.ext4 -d: the root file system into a disk image
	)
fi

command -v go >/dev/null || die "the Go toolchain is not installed (see go.mod for the version)"

missing=()
for package in "${PACKAGES[@]}"; do
	[[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) == "install ok installed" ]] || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
require_root

log "Installing ${missing[*]}"
# Keep packages from starting their system services (Debian's
# docker-registry would take port 5000; containerd would start a second,
# system-wide runtime): the stack runs its own instances.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod +x "$policy"
	trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "Installed ${missing[*]}"
