# certificate-key-cleanup 10-remove: no certificate key and no
# kubeadm-certs Secret once every control plane of the inventory
# (PROVISION_CONTROL_PLANES) is a Node of the cluster.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
CERT_KEY=$PROVISION_STATE_DIR/certificate-key

kc() {
	kubectl --kubeconfig="$ADMIN" --request-timeout=30s "$@"
}

# The control planes that are not Nodes yet, one a line.
unjoined() {
	j=$(kc get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}') || return 2
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	for c in ${PROVISION_CONTROL_PLANES:-}; do
		printf '%s\n' "$j" | grep -qxF "${c%%=*}" || echo "${c%%=*}"
	done
}

secret_there() {
	kc -n kube-system get secret kubeadm-certs -o name >/dev/null 2>&1
}

if [ ! -f "$ADMIN" ]; then
	echo "no cluster: no certificate key"
	exit 0
fi

case ${1:-} in
check)
	if ! left=$(unjoined); then
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
		exit 2
	fi
	if [ -n "$left" ]; then
		echo "kept for the control planes that have not joined: $(printf '%s\n' "$left" | paste -sd ' ' -)"
		exit 0
	fi
	if [ -e "$CERT_KEY" ] || secret_there; then
		echo "every control plane has joined; the certificate key or the kubeadm-certs Secret is still there"
		exit 1
	fi
	echo "every control plane has joined: no certificate key, no kubeadm-certs Secret"
	;;
apply)
	rm -f "$CERT_KEY"
	if secret_there; then
		kc -n kube-system delete secret kubeadm-certs >/dev/null
	fi
	echo "the certificate key and the kubeadm-certs Secret removed"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
