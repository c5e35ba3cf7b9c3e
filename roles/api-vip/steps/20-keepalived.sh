# api-vip 20-keepalived: /etc/keepalived/keepalived.conf from provision's
# rendering (/etc/provision/api-vip/keepalived.conf) with the interface
# that holds this node's address, which only the node knows.  The VIP goes
# on that interface, so it must be on that interface's subnet (preflight
# says so before anything runs).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SRC=/etc/provision/api-vip/keepalived.conf
DEST=/etc/keepalived/keepalived.conf

iface=$(ip -o -4 addr show | awk -v a="$PROVISION_ADDRESS" '{ split($4, x, "/"); if (x[1] == a) { sub(/@.*/, "", $2); print $2; exit } }')
if [ -z "$iface" ]; then
	echo "no interface of $PROVISION_NODE holds its address $PROVISION_ADDRESS"
	pv_hint "the inventory's address of $PROVISION_NODE must be one of its own IPv4 addresses ('ip -4 addr' there): keepalived sends VRRP from it and puts the VIP beside it"
	exit 1
fi

render() {
	sed "s/@INTERFACE@/$iface/" "$SRC"
}

case ${1:-} in
check)
	if render | cmp -s - "$DEST"; then
		echo "$DEST: VRRP on $iface"
		exit 0
	fi
	render | pv_diff "$DEST" || true
	exit 1
	;;
apply)
	mkdir -p /etc/keepalived
	render | pv_write "$DEST" 0644
	pv_managed "$DEST"
	echo "wrote $DEST (VRRP on $iface)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
