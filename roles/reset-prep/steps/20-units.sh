# reset-prep 20-units: the swap units roles/swap-off masked are unmasked,
# and a unit file it had to move away to mask it is back.
set -eu
LIST=$PROVISION_STATE_DIR/masked

case ${1:-} in
check)
	if [ ! -s "$LIST" ]; then
		echo "no unit masked by provision"
		exit 0
	fi
	echo "masked by provision: $(paste -sd ' ' "$LIST")"
	exit 1
	;;
apply)
	while IFS= read -r u; do
		[ -n "$u" ] || continue
		echo "systemctl unmask $u"
		systemctl unmask "$u"
		f=/etc/systemd/system/$u
		if [ -e "$PROVISION_BACKUP_DIR$f" ]; then
			pv_restore "$f"
		fi
	done <"$LIST"
	rm -f "$LIST"
	[ ! -d /run/systemd/system ] || systemctl daemon-reload
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
