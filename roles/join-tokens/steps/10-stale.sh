# join-tokens 10-stale: no join token of provision's is left that nobody
# should use: tokens for nodes that have joined (a run that failed before
# roles/join-cleanup), for nodes that are no longer workers of the
# inventory, or that expire within MIN_LEFT=120 s (a worker could not finish
# its join with them); and kubeadm init's own token.  Only tokens described "provision: kubeadm join of
# NODE" are touched; token values are never printed.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
NODES=/etc/kubernetes/provision-nodes
PREFIX="provision: kubeadm join of "
INIT_TOKEN_DESC="made by kubeadm init; provision deletes it"
MIN_LEFT=120

workers() {
	grep -v '^#' "$NODES" | grep . || true
}

joined() {
	kubectl --kubeconfig="$ADMIN" --request-timeout=30s get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'
}

# "id node expires" per token of provision's (the id, not the secret);
# kubeadm init's own token (roles/kubeadm-init deletes it after init, unless
# the API was down at that moment) has the node "-".
tokens() {
	kubeadm token list --kubeconfig="$ADMIN" | awk -F '   +' -v p="$PREFIX" -v i="$INIT_TOKEN_DESC" '
		NR > 1 && index($5, p) == 1 { split($1, t, "."); print t[1], substr($5, length(p) + 1), $3 }
		NR > 1 && $5 == i { split($1, t, "."); print t[1], "-", $3 }'
}

# Whether NODE is a control plane of the inventory that joins with
# --control-plane (PROVISION_CONTROL_PLANES, only with several: its token
# is roles/join-control-planes', and that control plane may be joining
# while this runs).
other_control_plane() {
	case " ${PROVISION_CONTROL_PLANES:-} " in
	*" $1="*) [ "$1" != "$PROVISION_NODE" ] ;;
	*) return 1 ;;
	esac
}

# "id reason" per stale token.
stale() {
	w=$(workers)
	j=$(joined)
	now=$(date +%s)
	tokens | while read -r id node expires; do
		if [ "$node" = - ]; then
			echo "$id kubeadm init's own token: not needed after init"
		elif ! printf '%s\n' "$w" | grep -qxF "$node" && ! other_control_plane "$node"; then
			echo "$id $node: not a worker of the inventory"
		elif printf '%s\n' "$j" | grep -qxF "$node"; then
			echo "$id $node: has joined"
		elif [ "$expires" != "<never>" ] && [ $(($(date -d "$expires" +%s) - now)) -lt "$MIN_LEFT" ]; then
			echo "$id $node: expires at $expires"
		fi
	done
}

# No control plane yet (kubeadm-init has not run): no tokens either.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet, so no tokens"
	exit 0
fi

case ${1:-} in
check)
	s=$(stale) || {
		pv_hint "kubectl or kubeadm cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
		exit 2
	}
	if [ -n "$s" ]; then
		printf '%s\n' "$s" | cut -d ' ' -f 2- | sed 's/^/stale token: /'
		exit 1
	fi
	echo "no stale join tokens"
	;;
apply)
	stale | while read -r id rest; do
		kubeadm token delete --kubeconfig="$ADMIN" "$id" >/dev/null
		echo "deleted the join token for $rest"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
