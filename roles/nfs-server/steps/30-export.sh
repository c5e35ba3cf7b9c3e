# nfs-server 30-export: the export directory exists, /etc/exports has the
# inventory's line for it, and the running server exports it.
#
# The line is PATH NETWORK(OPTIONS) (storage.nfs in the inventory; the seed
# used /nfs 192.168.10.0/24(rw,sync,no_root_squash,no_subtree_check)).
# /etc/exports is rewritten atomically with every other line kept: only a
# line for the same path is replaced (the original file is kept once in
# the backup folder).  `exportfs -ra` makes the server follow the file.
set -eu
EXPORTS=/etc/exports
P=$PROVISION_NFS_PATH
LINE="$P $PROVISION_NFS_NETWORK($PROVISION_NFS_OPTIONS)"

no_nfsd() {
	if ! grep -qw nfsd /proc/filesystems && ! modprobe -n -q nfsd 2>/dev/null; then
		echo "no nfsd in this kernel ($(uname -r)): /proc/fs/nfsd cannot be mounted"
	elif pv_in_container; then
		echo "inside a container the kernel NFS server is the host's: nfsd cannot be run from here"
	fi
}

# The exports line(s) for our path (first field), comments aside.
our_lines() {
	[ -f "$EXPORTS" ] || return 0
	awk -v p="$P" '$0 !~ /^[ \t]*#/ && $1 == p' "$EXPORTS"
}

# True when the running server exports our path to our network.  `exportfs -v`
# prints the path, then the client on the same line or (long paths) the next.
exported() {
	exportfs -v 2>/dev/null | awk -v p="$P" -v n="$PROVISION_NFS_NETWORK" '
		$1 == p { want = 1; if (NF > 1) { if (index($2, n "(") == 1) found = 1; want = 0 } ; next }
		want { if (index($1, n "(") == 1) found = 1; want = 0 }
		END { exit !found }'
}

case ${1:-} in
check)
	why=$(no_nfsd)
	if [ -n "$why" ]; then
		pv_skip "$why"
		exit 0
	fi
	if [ -z "$PROVISION_NFS_NETWORK" ]; then
		pv_hint "set storage.nfs.export_network in the inventory"
		echo "no network to export to"
		exit 2
	fi
	rc=0
	[ -d "$P" ] || {
		echo "$P: missing"
		rc=1
	}
	if [ "$(our_lines)" = "$LINE" ]; then
		echo "$EXPORTS: $LINE"
	else
		echo "$EXPORTS: want $LINE"
		rc=1
	fi
	if exported; then
		echo "exported: $P to $PROVISION_NFS_NETWORK"
	else
		echo "not exported yet: $P"
		rc=1
	fi
	exit $rc
	;;
apply)
	mkdir -p "$P"
	if [ "$(our_lines)" != "$LINE" ]; then
		mode=644
		[ -f "$EXPORTS" ] && mode=$(stat -c %a "$EXPORTS")
		{
			if [ -f "$EXPORTS" ]; then
				awk -v p="$P" '$0 ~ /^[ \t]*#/ || $1 != p' "$EXPORTS"
			fi
			echo "$LINE"
		} | pv_write "$EXPORTS" "$mode"
		echo "$EXPORTS: $LINE"
	fi
	exportfs -ra
	exportfs -v
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
