# nvidia 20-hold: the installed NVIDIA driver packages are held.
#
# The kernel module and the user-space libraries (libnvidia-compute,
# nvidia-utils' nvidia-smi) must be of the same version.  When an unattended
# upgrade replaces the libraries while the old module stays loaded, every
# CUDA program and nvidia-smi fail with "Driver/library version mismatch"
# until a reboot.  apt-mark hold keeps apt (and unattended-upgrades) from
# changing them; the admin unholds them to upgrade on purpose, then reboots.
#
# Package names: Ubuntu's nvidia-driver-NNN[-open|-server],
# libnvidia-compute-NNN, nvidia-utils-NNN, nvidia-dkms-NNN,
# nvidia-kernel-common-NNN; Debian's nvidia-driver, nvidia-kernel-dkms,
# libcuda1, nvidia-smi; NVIDIA's CUDA repository's cuda-drivers[-NNN].
# A driver installed with NVIDIA's .run installer has no package to hold.
set -eu

driver_packages() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' \
		'nvidia-driver*' 'libnvidia-compute-*' 'nvidia-utils-*' 'nvidia-dkms-*' \
		'nvidia-kernel-common-*' 'nvidia-kernel-dkms' 'libcuda1' 'nvidia-smi' 'cuda-drivers*' \
		2>/dev/null | awk 'substr($1, 2, 1) == "i" { print $2 }' | sort -u
}

not_held() {
	held=$(apt-mark showhold 2>/dev/null || true)
	for p in $(driver_packages); do
		printf '%s\n' "$held" | grep -qx -e "$p" || echo "$p"
	done
}

case ${1:-} in
check)
	pkgs=$(driver_packages)
	if [ -z "$pkgs" ]; then
		echo "no NVIDIA driver package installed (a .run installer driver?): nothing to hold"
		exit 0
	fi
	todo=$(not_held)
	if [ -n "$todo" ]; then
		echo "not held: $(printf '%s' "$todo" | tr '\n' ' ')"
		exit 1
	fi
	echo "held: $(printf '%s' "$pkgs" | tr '\n' ' ')"
	exit 0
	;;
apply)
	# shellcheck disable=SC2046 # package names are single words
	apt-mark hold $(not_held)
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
