#!/usr/bin/env bash
# The host shape most nodes have, as a guest under qemu: Debian 12 with
# systemd as PID 1 and cgroup v2 (unified), booted from an image built
# from Debian's packages. As root:
#
#   hack/vm.sh image          build the guest image, or find it cached; print its folder
#   hack/vm.sh up [NAME]      boot guest NAME (default vm) on a copy-on-write
#                             layer over the image; wait for ssh; print the boot time
#   hack/vm.sh ssh NAME [CMD] a shell in the guest, or CMD run there
#   hack/vm.sh copy NAME SRC DST   copy a host file into the guest
#   hack/vm.sh wait NAME      wait for ssh again (after a reboot in the guest)
#   hack/vm.sh down [NAME]    power the guest off (killed if it will not)
#   hack/vm.sh status [NAME]  qemu's view of a guest that stopped answering
#   hack/vm.sh kill [NAME]    stop the guest's qemu at once (the tests' guests
#                             are thrown away: their layer goes with the next boot)
#
# The image holds the kernel, systemd, Debian's containerd 1.6 and runc
# 1.1, the containerd 2 and runc of hack/build-runtime.sh (in
# /opt/containerd2/bin, unused until a test starts them), the CNI plugins,
# iptables and an ssh server whose only key is the image's own. It is
# built once into the build cache, in a folder keyed by the hash of what
# goes into it (this script's image steps, the package list, the
# containerd 2 build), linked from .cache/vm/image; every boot writes to a
# qcow2 layer of its own, so the image stays as built.
#
# The guest's network is qemu's user networking: it reaches the host's
# loopback at 10.0.2.2 (where the control plane and the registry listen),
# and the host reaches the guest only through the ports forwarded to it:
# ssh, and the node agent's port (VM_NODE_PORT, the same number on both
# sides, which the API server dials at the node's address 127.0.0.1 for
# logs, exec and port-forward), plus VM_FORWARDS (host:guest port pairs).
# Nothing else of the host is touched: the guest's cgroups, mounts and
# network are its own kernel's.
#
# Two guests can share a second network of their own, an Ethernet segment
# that qemu carries in UDP datagrams between their two processes on the
# host's loopback (no bridge, no tap: the host's network stays as it is):
#   VM_LAN=LOCAL:REMOTE      the UDP ports of this guest's end and of the
#                            other guest's (the other guest swaps them)
#   VM_LAN_ADDRESS=IP/LEN    this guest's static address on it, which
#                            systemd-networkd sets at each boot
#   VM_LAN_ROUTES="CIDR=GATEWAY ..."  static routes over it (to the
#                            other node's pods)
# e.g. for a cluster of two (test/vm/kubeadm_full_test.go):
#   VM_SSH_PORT=32223 VM_NODE_PORT=40251 VM_LAN=32231:32232 VM_LAN_ADDRESS=192.168.100.10/24 hack/vm.sh up cp
#   VM_SSH_PORT=32224 VM_NODE_PORT=40252 VM_LAN=32232:32231 VM_LAN_ADDRESS=192.168.100.11/24 hack/vm.sh up worker
#
# Accelerator: VM_ACCEL=kvm or tcg; by default kvm where /dev/kvm opens and
# a guest booted on it once (remembered in .cache/vm/accel), tcg otherwise:
# a machine that is itself a guest may have a /dev/kvm whose guests die at
# their first instruction ("emulation failure").
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VM_DIR=$CACHE_DIR/vm
IMAGE_LINK=$VM_DIR/image
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
# The guest's packages: what a node has, and what the tests drive it with.
GUEST_PACKAGES=(
	systemd systemd-sysv systemd-resolved udev dbus libpam-systemd
	linux-image-cloud-amd64 initramfs-tools kmod
	containerd runc containernetworking-plugins iptables
	iproute2 procps openssh-server ca-certificates curl util-linux
)
VM_MEMORY=${VM_MEMORY:-3072}
VM_CPUS=${VM_CPUS:-2}
# How long a boot may take to answer ssh: under TCG a boot is 20 to 40 s.
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-300}
# The ports of guest `vm`, the one `make vm` and the VM tests boot; they
# come from profile vm (hack/lib.sh), whose control plane the tests run.
profile_load vm
VM_SSH_PORT=${VM_SSH_PORT:-$VM_SSH_PORT_DEFAULT}
VM_NODE_PORT=${VM_NODE_PORT:-$NODELET_PORT}
VM_FORWARDS=${VM_FORWARDS:-}
VM_LAN=${VM_LAN:-}
VM_LAN_ADDRESS=${VM_LAN_ADDRESS:-}
VM_LAN_ROUTES=${VM_LAN_ROUTES:-}

guest_dir() { echo "$VM_DIR/guests/$1"; }

# --- the image --------------------------------------------------------------

# customize_rootfs ROOT shapes the unpacked root file system: the image's
# ssh key, DHCP on the first NIC, the root file system in fstab, and no
# package-manager caches.
customize_rootfs() {
	local root=$1 key=$2
	install -d -m 0700 "$root/root/.ssh"
	install -m 0600 "$key.pub" "$root/root/.ssh/authorized_keys"
	cat >"$root/etc/systemd/network/20-wired.network" <<-'EOF'
		[Match]
		Name=en*
		[Network]
		DHCP=ipv4
	EOF
	echo '/dev/vda / ext4 rw,discard,errors=remount-ro 0 1' >"$root/etc/fstab"
	chroot "$root" systemctl enable systemd-networkd systemd-resolved ssh >/dev/null 2>&1
	# A node agent's own: the tests configure and start containerd as a
	# node's owner would.
	chroot "$root" systemctl disable containerd >/dev/null 2>&1
	# No timer of the package manager's: apt-daily would fetch Debian's
	# package lists at each first boot (its timer is persistent), a
	# minute of the guest's CPU under TCG that no test asked for.
	chroot "$root" systemctl mask apt-daily.timer apt-daily-upgrade.timer >/dev/null 2>&1
	# No password login; the serial console shows the boot only.
	chroot "$root" passwd -l root >/dev/null
	install -d "$root/opt/containerd2/bin"
	install -m 0755 "$CONTAINERD2_BIN_DIR"/* "$root/opt/containerd2/bin/"
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
}

image_key() {
	{
		declare -f customize_rootfs build_image
		printf '%s\n' "$SUITE" "${GUEST_PACKAGES[@]}"
		sha256sum "$CONTAINERD2_BIN_DIR"/* | cut -d' ' -f1
	} | sha256sum | cut -c1-16
}

# build_image OUT builds the image into the new folder OUT: disk.img (ext4,
# sparse), vmlinuz and initrd.img from its /boot, and its ssh key.
build_image() {
	local out=$1 root=$1/rootfs
	mkdir -p "$out"
	ssh-keygen -q -t ed25519 -N '' -C nodelet-vm -f "$out/id_ed25519"
	log "Building the guest's root file system from Debian $SUITE's packages"
	local packages
	packages=$(
		IFS=,
		echo "${GUEST_PACKAGES[*]}"
	)
	# shellcheck disable=SC2016  # $1 is the hook's: the root folder
	mmdebstrap --quiet --variant=minbase --include="$packages" \
		--customize-hook='echo nodelet-vm >"$1/etc/hostname"' \
		"$SUITE" "$root" \
		"deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
		"deb http://deb.debian.org/debian-security $SUITE-security main" || return 1
	customize_rootfs "$root" "$out/id_ed25519"
	cp -L "$root/vmlinuz" "$out/vmlinuz"
	cp -L "$root/initrd.img" "$out/initrd.img"
	truncate -s 8G "$out/disk.img"
	mkfs.ext4 -q -L root -d "$root" "$out/disk.img"
	rm -rf "$root"
}

# image prints the image's folder, building it first when no image of this
# key is cached.
image() {
	require_root
	"$REPO_ROOT/hack/install-deps.sh" vm
	"$REPO_ROOT/hack/build-runtime.sh" >/dev/null
	local key dir tmp started=$SECONDS
	key=$(image_key)
	dir=$(build_dir vm-image "$key")
	if [[ ! -f $dir/disk.img ]]; then
		tmp=$(mktemp -d "$BUILD_CACHE_DIR/vm-image.XXXXXX")
		if ! build_image "$tmp"; then
			rm -rf "$tmp"
			die "could not build the guest image"
		fi
		keep_build vm-image "$key" "$tmp"
		log "Built the guest image in $((SECONDS - started))s ($(du -sh --apparent-size "$dir/disk.img" | cut -f1) disk, $(du -sh "$dir/disk.img" | cut -f1) used)"
	fi
	mkdir -p "$VM_DIR"
	ln -sfn "$dir" "$IMAGE_LINK"
	echo "$dir"
}

# --- a guest ----------------------------------------------------------------

ssh_args() {
	local dir
	dir=$(guest_dir "$1")
	# shellcheck disable=SC1091
	source "$dir/env"
	echo "-i $IMAGE_LINK/id_ed25519 -p $SSH_PORT -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 -o ServerAliveInterval=5 -o ServerAliveCountMax=6 -o BatchMode=yes"
}

guest_ssh() {
	local name=$1
	shift
	# shellcheck disable=SC2046,SC2029  # the options split on purpose; the command is the guest's
	ssh $(ssh_args "$name") root@127.0.0.1 "$@"
}

guest_copy() {
	local name=$1 src=$2 dst=$3 args
	args=$(ssh_args "$name")
	# scp spells the port -P.
	# shellcheck disable=SC2086
	scp -q ${args/-p /-P } "$src" "root@127.0.0.1:$dst"
}

qemu_pid() {
	local dir
	dir=$(guest_dir "$1")
	[[ -f $dir/qemu.pid ]] && kill -0 "$(cat "$dir/qemu.pid")" 2>/dev/null && cat "$dir/qemu.pid"
}

# wait_ssh NAME [SECONDS] waits until the guest answers over ssh (at most
# VM_BOOT_TIMEOUT seconds), and fails as soon as its qemu is gone.
wait_ssh() {
	local name=$1 dir deadline=$((EPOCHSECONDS + ${2:-$VM_BOOT_TIMEOUT}))
	dir=$(guest_dir "$name")
	while ((EPOCHSECONDS < deadline)); do
		guest_ssh "$name" true 2>/dev/null && return 0
		[[ -n $(qemu_pid "$name") ]] || {
			log "qemu of guest $name exited: $(tail -n 5 "$dir/qemu.log" 2>/dev/null)"
			return 1
		}
		sleep 1
	done
	log "guest $name did not answer ssh in ${2:-$VM_BOOT_TIMEOUT}s; its console: $dir/serial.log"
	return 1
}

accel() {
	if [[ -n ${VM_ACCEL:-} ]]; then
		echo "$VM_ACCEL"
	elif [[ -f $VM_DIR/accel ]]; then
		cat "$VM_DIR/accel"
	elif [[ -r /dev/kvm && -w /dev/kvm ]]; then
		echo kvm
	else
		echo tcg
	fi
}

# start_qemu NAME ACCEL starts the guest's qemu in the background.
start_qemu() {
	local name=$1 accel=$2 dir forwards forward
	dir=$(guest_dir "$name")
	# shellcheck disable=SC1091
	source "$dir/env"
	forwards="hostfwd=tcp:127.0.0.1:$SSH_PORT-:22,hostfwd=tcp:127.0.0.1:$NODE_PORT-:$NODE_PORT"
	# shellcheck disable=SC2153  # FORWARDS is the guest's env file's
	for forward in $FORWARDS; do
		forwards+=",hostfwd=tcp:127.0.0.1:${forward%%:*}-:${forward#*:}"
	done
	# The second network: its NIC's MAC is made of its address, so that
	# networkd finds it by MAC (lan_network).
	local lan_args=()
	# shellcheck disable=SC2153  # LAN and LAN_ADDRESS are the guest's env file's
	if [[ -n $LAN ]]; then
		lan_args=(-netdev "socket,id=lan0,udp=127.0.0.1:${LAN#*:},localaddr=127.0.0.1:${LAN%%:*}"
			-device "virtio-net-pci,netdev=lan0,mac=$(lan_mac "$LAN_ADDRESS")")
	fi
	local accel_args=(-accel "tcg,thread=multi" -cpu max)
	[[ $accel == tcg ]] || accel_args=(-accel kvm -cpu host)
	rm -f "$dir/qemu.pid"
	: >"$dir/qemu.log"
	qemu-system-x86_64 "${accel_args[@]}" -smp "$VM_CPUS" -m "$VM_MEMORY" \
		-display none -vga none -no-user-config -nodefaults \
		-kernel "$IMAGE_LINK/vmlinuz" -initrd "$IMAGE_LINK/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 systemd.hostname=$name" \
		-drive "file=$dir/disk.qcow2,if=virtio,format=qcow2,discard=unmap" \
		-netdev "user,id=net0,$forwards" -device virtio-net-pci,netdev=net0 \
		"${lan_args[@]}" \
		-device virtio-rng-pci \
		-serial "file:$dir/serial.log" \
		-monitor "unix:$dir/monitor.sock,server,nowait" \
		-pidfile "$dir/qemu.pid" -daemonize 2>>"$dir/qemu.log" >>"$dir/qemu.log"
}

# lan_mac IP/LEN prints the MAC of the NIC that holds IP on the second
# network: qemu's prefix and the address's last three bytes.
lan_mac() {
	local ip=${1%/*} a b c d
	IFS=. read -r a b c d <<<"$ip"
	printf '52:54:00:%02x:%02x:%02x\n' "$b" "$c" "$d"
}

# lan_network NAME gives the guest's second NIC its address and routes, in
# a networkd file that sorts before the image's DHCP one, and applies it.
lan_network() {
	local name=$1 dir route mac network
	dir=$(guest_dir "$name")
	# shellcheck disable=SC1091
	source "$dir/env"
	[[ -n $LAN ]] || return 0
	mac=$(lan_mac "$LAN_ADDRESS")
	network=$(printf '[Match]\nMACAddress=%s\n[Network]\nAddress=%s\n' "$mac" "$LAN_ADDRESS")
	# shellcheck disable=SC2153  # LAN_ROUTES is the guest's env file's
	for route in $LAN_ROUTES; do
		network+=$(printf '\n[Route]\nDestination=%s\nGateway=%s' "${route%%=*}" "${route#*=}")
	done
	guest_ssh "$name" bash -euo pipefail -s <<-EOF
		cat >/etc/systemd/network/10-lan.network <<'NETWORK'
		$network
		NETWORK
		networkctl reload
		networkctl reconfigure "\$(ip -o link | awk -F': ' 'tolower(\$0) ~ /$mac/ {print \$2}')"
	EOF
}

# boot NAME ACCEL starts the guest's qemu on a fresh layer and waits for
# ssh. Under KVM a boot takes seconds: one that has not answered in a
# minute is a KVM that cannot run it.
boot() {
	local name=$1 accel=$2 dir
	dir=$(guest_dir "$name")
	qemu-img create -q -f qcow2 -F raw -b "$IMAGE_LINK/disk.img" "$dir/disk.qcow2"
	log "Booting guest $name ($accel, ${VM_CPUS} CPUs, ${VM_MEMORY} MiB; console in $dir/serial.log)"
	start_qemu "$name" "$accel" || {
		log "qemu did not start: $(cat "$dir/qemu.log")"
		return 1
	}
	if [[ $accel == kvm ]]; then
		wait_ssh "$name" 60
	else
		wait_ssh "$name"
	fi
}

up() {
	local name=${1:-vm} dir accel started
	require_root
	[[ $name =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "a guest's name is its host name: lowercase letters, digits and '-', not '$name'"
	image >/dev/null
	dir=$(guest_dir "$name")
	[[ -z $(qemu_pid "$name") ]] || die "guest $name is running already (hack/vm.sh down $name)"
	rm -rf "$dir"
	mkdir -p "$dir"
	printf 'SSH_PORT=%s\nNODE_PORT=%s\nFORWARDS="%s"\nLAN=%s\nLAN_ADDRESS=%s\nLAN_ROUTES="%s"\n' \
		"$VM_SSH_PORT" "$VM_NODE_PORT" "$VM_FORWARDS" "$VM_LAN" "$VM_LAN_ADDRESS" "$VM_LAN_ROUTES" >"$dir/env"
	[[ -z $VM_LAN || $VM_LAN =~ ^[0-9]+:[0-9]+$ ]] || die "VM_LAN is LOCAL:REMOTE (two UDP ports), not '$VM_LAN'"
	[[ -z $VM_LAN || $VM_LAN_ADDRESS =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || die "VM_LAN needs VM_LAN_ADDRESS (IP/LEN), not '$VM_LAN_ADDRESS'"
	port_free "$VM_SSH_PORT" || die "port $VM_SSH_PORT (the guest's ssh) is taken"
	port_free "$VM_NODE_PORT" || die "port $VM_NODE_PORT (the guest's node port) is taken"
	accel=$(accel)
	started=$EPOCHREALTIME
	if ! boot "$name" "$accel"; then
		[[ $accel == kvm && -z ${VM_ACCEL:-} ]] || die "guest $name did not boot"
		# KVM is there but cannot run this guest: TCG from now on.
		kill -9 "$(qemu_pid "$name")" 2>/dev/null || true
		echo tcg >"$VM_DIR/accel"
		accel=tcg
		started=$EPOCHREALTIME
		boot "$name" tcg || die "guest $name did not boot"
	fi
	echo "$accel" >"$VM_DIR/accel"
	lan_network "$name" || die "could not set guest $name's address on the second network"
	local took
	took=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	log "Guest $name up in ${took}s ($accel): $(guest_ssh "$name" systemd-analyze time 2>/dev/null | head -n1)"
	echo "BOOT_SECONDS=$took" >>"$dir/env"
	echo "hack/vm.sh ssh $name"
}

down() {
	local name=${1:-vm} pid deadline
	pid=$(qemu_pid "$name") || true
	[[ -n $pid ]] || return 0
	guest_ssh "$name" systemctl poweroff 2>/dev/null || true
	deadline=$((EPOCHSECONDS + 60))
	while kill -0 "$pid" 2>/dev/null && ((EPOCHSECONDS < deadline)); do
		sleep 1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "guest $name did not power off in 60s: killing its qemu"
		kill -9 "$pid" 2>/dev/null || true
	fi
	log "Guest $name is down"
}

# status NAME prints what qemu says of the guest (running or not, where
# its CPUs are) and the end of its console: for a guest that stopped
# answering.
status() {
	local name=${1:-vm} dir
	dir=$(guest_dir "$name")
	[[ -n $(qemu_pid "$name") ]] || {
		echo "guest $name: no qemu running"
		return 0
	}
	printf 'info status\ninfo cpus\n' | timeout 5 socat - "UNIX-CONNECT:$dir/monitor.sock" 2>&1 | grep -v '^(qemu)\|^QEMU' || true
	echo "--- the end of its console ($dir/serial.log):"
	tail -n 20 "$dir/serial.log"
}

kill_guest() {
	local name=${1:-vm} pid
	pid=$(qemu_pid "$name") || true
	[[ -n $pid ]] || return 0
	kill -9 "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	log "Guest $name is killed"
}

main() {
	local action=${1:-}
	shift || true
	case $action in
	image) image ;;
	up) up "$@" ;;
	ssh) guest_ssh "$@" ;;
	copy) guest_copy "$@" ;;
	wait) wait_ssh "${1:-vm}" ;;
	down) down "$@" ;;
	kill) kill_guest "$@" ;;
	status) status "$@" ;;
	*) die "usage: $(basename "$0") image | up [NAME] | ssh NAME [CMD] | copy NAME SRC DST | wait NAME | down [NAME] | kill [NAME] | status [NAME]" ;;
	esac
}

main "$@"
