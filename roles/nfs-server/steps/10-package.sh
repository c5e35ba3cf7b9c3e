# nfs-server 10-package: nfs-kernel-server is installed.
#
# The kernel's NFS server (nfsd) does the serving; the package brings
# exportfs, rpc.mountd and the nfs-server service.  Where the kernel has no
# nfsd at all (built without it, or a container, whose kernel is the
# host's), the node cannot serve NFS: every step of this role skips and says
# so, instead of installing a server that cannot start.
set -eu

# Why this node cannot serve NFS; nothing when it can.
no_nfsd() {
	if ! grep -qw nfsd /proc/filesystems && ! modprobe -n -q nfsd 2>/dev/null; then
		echo "no nfsd in this kernel ($(uname -r)): /proc/fs/nfsd cannot be mounted"
	elif pv_in_container; then
		echo "inside a container the kernel NFS server is the host's: nfsd cannot be run from here"
	fi
}

apt_get() {
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		set -- -o "Acquire::http::Proxy=$PROVISION_HTTP_PROXY" \
			-o "Acquire::https::Proxy=$PROVISION_HTTP_PROXY" "$@"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"
}

case ${1:-} in
check)
	why=$(no_nfsd)
	if [ -n "$why" ]; then
		pv_skip "$why"
		exit 0
	fi
	case $(dpkg-query -W -f='${db:Status-Abbrev}|${Version}' nfs-kernel-server 2>/dev/null || true) in
	?i*)
		echo "nfs-kernel-server $(dpkg-query -W -f='${Version}' nfs-kernel-server)"
		exit 0
		;;
	esac
	echo "nfs-kernel-server is not installed"
	exit 1
	;;
apply)
	if ! apt_get update; then
		pv_hint "apt-get update failed: fix the node's apt sources (or set cluster.http_proxy), then run provision again"
		exit 1
	fi
	if ! pv_installing apt_get install -y nfs-kernel-server; then
		pv_hint "apt-get install nfs-kernel-server failed on $PROVISION_NODE: apt's whole output is in 'provision logs $PROVISION_NODE'; 'apt-get install nfs-kernel-server' there shows it again; an interrupted dpkg is repaired with 'dpkg --configure -a' there"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
