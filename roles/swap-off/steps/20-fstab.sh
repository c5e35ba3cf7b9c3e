# swap-off 20-fstab: no swap entry left active in /etc/fstab.
#
# An entry is swap when its third field (the type) is "swap"; the word
# elsewhere (a mount point /mnt/swap, a label) does not count.  Entries are
# commented out, not deleted, with a prefix that says who did it; the
# original file is kept once in the backup folder (pv_write) and the new one
# replaces it atomically.
set -eu
FSTAB=/etc/fstab
PREFIX='# swap off for Kubernetes (provision swap-off): '

# The active swap entries of $FSTAB, read by the shell (the check runs on
# every node on every run): as awk '$0 !~ /^[ \t]*#/ && NF >= 3 && $3 == "swap"'.
swap_entries() {
	while IFS= read -r _line || [ -n "$_line" ]; do
		case $_line in [[:blank:]]*'#'* | '#'*)
			_t=${_line#"${_line%%[![:blank:]]*}"}
			case $_t in '#'*) continue ;; esac
			;;
		esac
		set -f
		# shellcheck disable=SC2086 # split into fields on blanks, as awk does
		set -- $_line
		set +f
		[ $# -ge 3 ] && [ "$3" = swap ] && printf '%s\n' "$_line"
	done <"$FSTAB"
	return 0
}

case ${1:-} in
check)
	if [ ! -f "$FSTAB" ]; then
		echo "no $FSTAB"
		exit 0
	fi
	entries=$(swap_entries)
	if [ -z "$entries" ]; then
		echo "no swap entry in $FSTAB"
		exit 0
	fi
	echo "swap entries in $FSTAB:"
	printf '%s\n' "$entries"
	exit 1
	;;
apply)
	mode=$(stat -c %a "$FSTAB")
	awk -v prefix="$PREFIX" '
		$0 !~ /^[ \t]*#/ && NF >= 3 && $3 == "swap" { print prefix $0; next }
		{ print }' "$FSTAB" | pv_write "$FSTAB" "$mode"
	echo "commented out in $FSTAB (original kept in $PROVISION_BACKUP_DIR$FSTAB):"
	grep -F -e "$PREFIX" "$FSTAB"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
