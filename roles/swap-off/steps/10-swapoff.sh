# swap-off 10-swapoff: no swap device is active (files, partitions, zram).
#
# /proc/swaps lists every active swap area.  Inside a container it is the
# host kernel's list: those areas belong to the host, swapoff is not
# permitted there (and must not be: the host's swap is not ours to touch),
# so the step skips and says why.  The same where root lacks CAP_SYS_ADMIN
# (the testbed's chroot nodes, which systemd-detect-virt does not see as
# containers).
set -eu

# Why swapoff cannot work here; nothing when it can.  It needs
# CAP_SYS_ADMIN, which root has on a machine and lacks in most containers.
not_permitted() {
	if pv_in_container; then
		echo "swapoff is not permitted in this container"
		return
	fi
	cap=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
	# CAP_SYS_ADMIN is capability 21.
	if [ $((0x$cap >> 21 & 1)) = 0 ]; then
		echo "swapoff is not permitted here (no CAP_SYS_ADMIN: a container or a restricted root?)"
	fi
}

# Active swap areas, one path a line (/proc/swaps writes a space as \040),
# read by the shell after the header line.
active() {
	{
		read -r _header || return 0
		while read -r path _rest; do
			printf '%b\n' "$path"
		done
	} </proc/swaps
}

case ${1:-} in
check)
	list=$(active)
	if [ -z "$list" ]; then
		echo "no active swap"
		exit 0
	fi
	echo "active swap:"
	tail -n +2 /proc/swaps
	why=$(not_permitted)
	if [ -n "$why" ]; then
		pv_skip "swap is on in the kernel ($(printf '%s' "$list" | paste -sd ' ')), which is the host's, and $why; turn swap off on the host"
		exit 0
	fi
	exit 1
	;;
apply)
	active | while IFS= read -r path; do
		echo "swapoff $path"
		if ! swapoff "$path"; then
			pv_hint "swapoff must take everything swapped out back into RAM: free memory (stop big processes) and run again, or reboot once the fstab and unit steps are done"
			exit 1
		fi
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
