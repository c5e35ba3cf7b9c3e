# join-cleanup 10-tokens: no bootstrap token described "provision: kubeadm
# join of NODE" is left on the cluster.  Token values are never printed.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
PREFIX="provision: kubeadm join of "

# "id node" per token of provision's.
tokens() {
	kubeadm token list --kubeconfig="$ADMIN" | awk -F '   +' -v p="$PREFIX" '
		NR > 1 && index($5, p) == 1 { split($1, t, "."); print t[1], substr($5, length(p) + 1) }'
}

if [ ! -f "$ADMIN" ]; then
	echo "no cluster: no join tokens"
	exit 0
fi

case ${1:-} in
check)
	if ! t=$(tokens); then
		pv_hint "kubeadm cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
		exit 2
	fi
	if [ -n "$t" ]; then
		echo "join tokens left for: $(printf '%s\n' "$t" | cut -d ' ' -f 2 | paste -sd ' ' -)"
		exit 1
	fi
	echo "no join tokens left"
	;;
apply)
	tokens | while read -r id node; do
		kubeadm token delete --kubeconfig="$ADMIN" "$id" >/dev/null
		echo "deleted the join token of $node"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
