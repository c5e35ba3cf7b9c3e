# nfs-client 10-package: nfs-common is installed (mount.nfs, rpc.statd).
set -eu

apt_get() {
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		set -- -o "Acquire::http::Proxy=$PROVISION_HTTP_PROXY" \
			-o "Acquire::https::Proxy=$PROVISION_HTTP_PROXY" "$@"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"
}

case ${1:-} in
check)
	case $(dpkg-query -W -f='${db:Status-Abbrev}' nfs-common 2>/dev/null || true) in
	?i*)
		echo "nfs-common $(dpkg-query -W -f='${Version}' nfs-common)"
		exit 0
		;;
	esac
	echo "nfs-common is not installed"
	exit 1
	;;
apply)
	if ! apt_get update; then
		pv_hint "apt-get update failed: fix the node's apt sources (or set cluster.http_proxy), then run provision again"
		exit 1
	fi
	if ! pv_installing apt_get install -y nfs-common; then
		pv_hint "apt-get install nfs-common failed on $PROVISION_NODE: apt's whole output is in 'provision logs $PROVISION_NODE'; 'apt-get install nfs-common' there shows it again; an interrupted dpkg is repaired with 'dpkg --configure -a' there"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
