# nfs-client 20-trial-mount: the cluster's export can be mounted from here.
#
# The check mounts the export read-only on a fresh temporary folder and
# unmounts it at once: a probe that leaves nothing behind (like querying a
# server), so `provision plan` may run it too.  A failure cannot be fixed
# on this node alone: it fails with what mount said and a hint.
# Where the kernel has no NFS client, or in a container (mount needs
# privileges a container does not have), the step skips and says why.
set -eu
SRC=$PROVISION_NFS_ADDRESS:$PROVISION_NFS_PATH

no_client() {
	if ! grep -qw nfs4 /proc/filesystems && ! grep -qw nfs /proc/filesystems &&
		! modprobe -n -q nfs 2>/dev/null; then
		echo "no NFS client in this kernel ($(uname -r)): /proc/filesystems has no nfs"
	elif pv_in_container; then
		echo "mounting is not permitted inside a container: no trial NFS mount here"
	fi
}

case ${1:-} in
check)
	why=$(no_client)
	if [ -n "$why" ]; then
		pv_skip "$why"
		exit 0
	fi
	dir=$(mktemp -d /tmp/provision-nfs-trial.XXXXXX)
	# soft + timeo: give up after seconds instead of hanging on a dead server.
	if out=$(timeout 60 mount -t nfs -o ro,soft,timeo=50,retrans=2 "$SRC" "$dir" 2>&1); then
		echo "mounted $SRC on $dir: $(stat -f -c '%T' "$dir" 2>/dev/null || echo nfs)"
		umount "$dir" || umount -l "$dir"
		rmdir "$dir"
		echo "unmounted; $SRC works from $PROVISION_NODE"
		exit 0
	fi
	rmdir "$dir" 2>/dev/null || true
	printf '%s\n' "$out"
	pv_hint "check that $PROVISION_NFS_SERVER exports $PROVISION_NFS_PATH to this node's address ($PROVISION_ADDRESS; exportfs -v there) and that a firewall lets NFS (TCP 2049) through"
	exit 2
	;;
apply)
	echo "nothing to apply: the check mounts and unmounts"
	exit 1
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
