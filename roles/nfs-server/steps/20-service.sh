# nfs-server 20-service: the nfs-server service is enabled and running.
#
# Starting it mounts /proc/fs/nfsd and starts the kernel's nfsd threads and
# rpc.mountd; exportfs needs that to load the export table.
set -eu

no_nfsd() {
	if ! grep -qw nfsd /proc/filesystems && ! modprobe -n -q nfsd 2>/dev/null; then
		echo "no nfsd in this kernel ($(uname -r)): /proc/fs/nfsd cannot be mounted"
	elif pv_in_container; then
		echo "inside a container the kernel NFS server is the host's: nfsd cannot be run from here"
	fi
}

case ${1:-} in
check)
	why=$(no_nfsd)
	if [ -n "$why" ]; then
		pv_skip "$why"
		exit 0
	fi
	enabled=$(systemctl is-enabled nfs-server 2>/dev/null || true)
	active=$(systemctl is-active nfs-server 2>/dev/null || true)
	echo "nfs-server: $enabled, $active"
	[ "$enabled" = enabled ] && [ "$active" = active ]
	;;
apply)
	if ! systemctl enable --now nfs-server; then
		systemctl status --no-pager nfs-server 2>&1 | tail -n 15 || true
		pv_hint "see journalctl -u nfs-server -u proc-fs-nfsd.mount on the node"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
