# reset-cluster 40-interfaces: the network interfaces of the pod network
# are gone: flannel.1 (Flannel's VXLAN device) and cni0 (the bridge the
# bridge plugin makes for the node's pods); their routes go with them.
set -eu
IFACES="flannel.1 cni0"

left() {
	for i in $IFACES; do
		if ip link show dev "$i" >/dev/null 2>&1; then
			echo "$i"
		fi
	done
}

case ${1:-} in
check)
	l=$(left | paste -sd ' ' -)
	if [ -z "$l" ]; then
		echo "no $IFACES"
		exit 0
	fi
	echo "interfaces: $l"
	exit 1
	;;
apply)
	for i in $(left); do
		echo "ip link delete $i"
		ip link delete "$i"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
