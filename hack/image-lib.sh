# shellcheck shell=bash
# Shared by the scripts that assemble images without a container engine
# (hack/build-images.sh, hack/build-image.sh): this machine's programs,
# with the shared libraries they load, copied into an image's root
# filesystem. Source it after hack/lib.sh.

# iptables_program prints the host's iptables program: the multi-call
# binary its alternatives link to.
iptables_program() {
	readlink -f "$(command -v iptables)"
}

# xtables_dirs prints the folders of iptables' extension modules.
xtables_dirs() {
	local modules
	for modules in /usr/lib/*/xtables /usr/lib/xtables; do
		[[ -d $modules ]] && echo "$modules"
	done
	return 0
}

# copy_libraries ROOTFS FILE... copies the shared libraries (and the
# loader) that ldd says each file loads to the same paths under ROOTFS.
copy_libraries() {
	local rootfs=$1 file lib
	shift
	for file in "$@"; do
		for lib in $(ldd "$file" 2>/dev/null | grep -oE '/[^ ]+' || true); do
			[[ -e $rootfs$lib ]] || install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
		done
	done
}

# copy_with_libraries ROOTFS FILE... copies each file to the same path under
# ROOTFS, with its shared libraries.
copy_with_libraries() {
	local rootfs=$1 file
	shift
	for file in "$@"; do
		install -D -m 0755 "$file" "$rootfs$file"
	done
	copy_libraries "$rootfs" "$@"
}

# install_iptables ROOTFS copies the host's iptables (the multi-call binary
# under all its names, IPv4 and IPv6), its extension modules and their
# libraries: the very ones, and backend (nft or legacy), that the host's
# other agents use for their rules.
install_iptables() {
	local rootfs=$1 multi modules name
	multi=$(iptables_program)
	copy_with_libraries "$rootfs" "$multi"
	# The multi-call binary acts on the name it is called by.
	for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		ln -sf "$multi" "$rootfs/usr/sbin/$name"
	done
	for modules in $(xtables_dirs); do
		mkdir -p "$rootfs$modules"
		cp -a "$modules/." "$rootfs$modules/"
		copy_libraries "$rootfs" "$modules"/*.so
	done
}

# iptables_inputs prints the files install_iptables copies, for a build's
# input hash.
iptables_inputs() {
	local -a dirs
	mapfile -t dirs < <(xtables_dirs)
	iptables_program
	((${#dirs[@]} == 0)) || find "${dirs[@]}" -name '*.so' | sort
}

# write_loader_cache ROOTFS writes the loader's configuration and cache for
# the folders the libraries were copied to.
write_loader_cache() {
	local rootfs=$1 dirs
	dirs=$(find "$rootfs" -name '*.so*' -type f -printf '%h\n' | sed "s|^$rootfs||" | sort -u)
	install -d -m 0755 "$rootfs/etc"
	echo "$dirs" >"$rootfs/etc/ld.so.conf"
	ldconfig -r "$rootfs"
}
