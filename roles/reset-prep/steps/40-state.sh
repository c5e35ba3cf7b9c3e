# reset-prep 40-state: provision's folder on the node, /var/lib/provision,
# is gone once nothing in it is needed: every backup was put back (a backup
# still there means its file was not restored, and it is kept).
set -eu

case ${1:-} in
check)
	if [ ! -e "$PROVISION_STATE_DIR" ]; then
		echo "no $PROVISION_STATE_DIR"
		exit 0
	fi
	echo "$PROVISION_STATE_DIR is there"
	exit 1
	;;
apply)
	left=$(find "$PROVISION_BACKUP_DIR" -type f 2>/dev/null | head -n 5)
	if [ -n "$left" ]; then
		echo "backups not restored: $left"
		pv_hint "provision reset restores only files it has in its managed list; put these back by hand, then run provision reset again"
		exit 1
	fi
	rm -rf "$PROVISION_STATE_DIR"
	echo "removed $PROVISION_STATE_DIR"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
