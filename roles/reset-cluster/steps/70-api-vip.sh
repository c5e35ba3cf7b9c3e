# reset-cluster 70-api-vip: a node that left the cluster holds no VIP and
# forwards nothing to the API: the keepalived and HAProxy roles/api-vip
# started (it leaves $PROVISION_STATE_DIR/api-vip.applied) are stopped and
# disabled -- with --keep-prep too, where their packages and configuration
# stay (the next `up` starts them again; without --keep-prep reset-prep
# then purges them).  After kubeadm reset: a first control plane reset last
# keeps the VIP while its own reset still talks to the API through it.
# Nothing on a node where roles/api-vip never ran.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
APPLIED=$PROVISION_STATE_DIR/api-vip.applied

running() {
	for s in keepalived haproxy; do
		if [ "$(systemctl is-enabled "$s" 2>/dev/null || true)" = enabled ] ||
			[ "$(systemctl is-active "$s" 2>/dev/null || true)" = active ]; then
			echo "$s"
		fi
	done
}

case ${1:-} in
check)
	if [ ! -f "$APPLIED" ]; then
		echo "no keepalived or HAProxy of provision's on this node"
		exit 0
	fi
	r=$(running | paste -sd ' ' -)
	if [ -n "$r" ]; then
		echo "enabled or running: $r"
		exit 1
	fi
	echo "keepalived and HAProxy stopped and disabled"
	;;
apply)
	for s in $(running); do
		systemctl disable --now --quiet "$s"
		echo "stopped and disabled $s"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
