# reset-cluster 30-cni: the pod network's files are gone (kubeadm reset
# says it leaves them): Flannel's CNI configuration in /etc/cni/net.d, its
# plugin binary /opt/cni/bin/flannel (copied there by its install-cni-plugin
# init container), its /run/flannel, and the CNI plugins' state in
# /var/lib/cni (IP allocations).  Other files in /etc/cni/net.d and
# /opt/cni/bin are not provision's and stay.
set -eu

left() {
	for f in /etc/cni/net.d/*flannel* /opt/cni/bin/flannel /run/flannel /var/lib/cni; do
		[ ! -e "$f" ] || echo "$f"
	done
}

case ${1:-} in
check)
	l=$(left)
	if [ -z "$l" ]; then
		echo "no CNI configuration or state of the cluster"
		exit 0
	fi
	echo "CNI configuration and state:"
	printf '%s\n' "$l"
	exit 1
	;;
apply)
	for f in $(left); do
		rm -rf "$f"
		echo "removed $f"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
