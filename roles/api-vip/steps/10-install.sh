# api-vip 10-install: keepalived, HAProxy and curl (keepalived's check of
# the local API server) from the distribution's repositories.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
PKGS="keepalived haproxy curl"

missing() {
	for p in $PKGS; do
		pv_installed "$p" || echo "$p"
	done
}

case ${1:-} in
check)
	m=$(missing | paste -sd ' ' -)
	if [ -n "$m" ]; then
		echo "missing: $m"
		exit 1
	fi
	echo "installed: $PKGS"
	;;
apply)
	# shellcheck disable=SC2046 # one package a word
	set -- $(missing)
	echo "installing $*"
	if ! pv_apt_get update || ! pv_installing pv_apt_get install -y --no-install-recommends "$@"; then
		pv_hint "install $* on $PROVISION_NODE (apt-get install $*): the node's apt sources must reach its distribution's mirror, or set cluster.http_proxy"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
