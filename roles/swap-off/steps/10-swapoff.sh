# swap-off 10-swapoff: no swap device is active (files, partitions, zram).
#
# /proc/swaps lists every active swap area.  Inside a container it is the
# host kernel's list: those areas belong to the host, swapoff is not
# permitted there (and must not be: the host's swap is not ours to touch),
# so the step skips and says why.
set -eu

# Active swap areas, one path a line (/proc/swaps writes a space as \040).
active() {
	tail -n +2 /proc/swaps | while read -r path _rest; do
		printf '%b\n' "$path"
	done
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
	if pv_in_container; then
		pv_skip "swap is on in the host kernel ($(printf '%s' "$list" | tr '\n' ' ' | sed 's/ $//')) and swapoff is not permitted in this container; turn swap off on the host"
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
