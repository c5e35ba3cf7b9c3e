# join-tokens 20-tokens: every worker that has not joined the cluster has a
# bootstrap token of its own, and its join command is handed to it alone.
#
# `check` finds each such worker's token ("provision: kubeadm join of NODE",
# unexpired) and hands "kubeadm join HOST:PORT --token TOKEN
# --discovery-token-ca-cert-hash sha256:HASH" -- the shape of `kubeadm token
# create --print-join-command`, with the API endpoint of admin.conf and the
# SHA-256 of the cluster CA's public key (SubjectPublicKeyInfo, DER), as the
# kubeadm join reference computes it with openssl -- to that worker with
# ::secret lines, the token first.  `apply` makes the missing tokens:
# `kubeadm token create --ttl 15m --description ... --print-join-command`.
# Nothing else this step prints holds a token.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
NODES=/etc/kubernetes/provision-nodes
CA=/etc/kubernetes/pki/ca.crt
PREFIX="provision: kubeadm join of "
TTL=15m
SIGN_WAIT=60

workers() {
	grep -v '^#' "$NODES" | grep . || true
}

# Workers of the inventory that are not Nodes of the cluster yet.
unjoined() {
	j=$(kubectl --kubeconfig="$ADMIN" --request-timeout=30s get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}') || return 2
	for w in $(workers); do
		printf '%s\n' "$j" | grep -qxF "$w" || echo "$w"
	done
}

# The unexpired token of provision's for NODE, or nothing.
token_for() {
	kubeadm token list --kubeconfig="$ADMIN" | awk -F '   +' -v d="$PREFIX$1" '
		NR > 1 && $5 == d && $2 != "<invalid>" { print $1; exit }'
}

ca_hash() {
	openssl x509 -pubkey -noout -in "$CA" | openssl pkey -pubin -outform der | sha256sum | cut -d ' ' -f 1
}

endpoint() {
	sed -n 's#^[[:space:]]*server:[[:space:]]*https://##p' "$ADMIN" | head -n 1
}

# The ids among ID... whose JWS signature the cluster-info ConfigMap lacks
# (ids are public: they name the signatures; the secrets are not printed).
unsigned() {
	data=$(kubectl --kubeconfig="$ADMIN" --request-timeout=30s -n kube-public get configmap cluster-info -o 'jsonpath={.data}')
	for id in "$@"; do
		printf '%s' "$data" | grep -qF "\"jws-kubeconfig-$id\"" || echo "$id"
	done
}

# The ids of the tokens of provision's for the workers in $need.
ids() {
	for w in $need; do
		t=$(token_for "$w")
		[ -z "$t" ] || echo "${t%%.*}"
	done
}

hand() { # NODE TOKEN COMMAND
	printf '::secret join_token@%s=%s\n' "$1" "$2"
	printf '::secret join_command@%s=%s\n' "$1" "$3"
}

# No control plane yet (kubeadm-init has not run): nothing to compare with.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	if ! need=$(unjoined); then
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
		exit 2
	fi
	if [ -z "$need" ]; then
		echo "every worker has joined ($(workers | wc -l))"
		exit 0
	fi
	hash=$(ca_hash)
	ep=$(endpoint)
	missing=
	handed=
	for w in $need; do
		tok=$(token_for "$w")
		if [ -n "$tok" ]; then
			hand "$w" "$tok" "kubeadm join $ep --token $tok --discovery-token-ca-cert-hash sha256:$hash"
			handed="$handed $w"
		else
			missing="$missing $w"
		fi
	done
	[ -z "$handed" ] || echo "join commands handed to:$handed"
	if [ -n "$missing" ]; then
		echo "no join token yet for:$missing"
		exit 1
	fi
	# shellcheck disable=SC2046 # one id a word
	if [ -n "$(unsigned $(ids))" ]; then
		echo "the cluster-info ConfigMap does not carry the signature of every join token yet"
		exit 1
	fi
	;;
apply)
	need=$(unjoined)
	for w in $need; do
		[ -z "$(token_for "$w")" ] || continue
		if ! cmd=$(kubeadm token create --kubeconfig="$ADMIN" --ttl "$TTL" --description "$PREFIX$w" --print-join-command 2>/dev/null); then
			pv_hint "kubeadm token create failed on $PROVISION_NODE: run it there by hand to see why (the API server must answer)"
			exit 1
		fi
		tok=$(printf '%s\n' "$cmd" | sed -n 's/.* --token \([^ ]*\).*/\1/p')
		hand "$w" "$tok" "$(printf '%s' "$cmd" | sed 's/[[:space:]]*$//')"
		echo "token made for $w (valid $TTL)"
	done
	# A worker's kubeadm join trusts the cluster-info ConfigMap only with
	# its token's signature, which the controller manager adds
	# (bootstrapsigner); without it every join would wait and fail.
	i=0
	# shellcheck disable=SC2046 # one id a word
	while [ -n "$(unsigned $(ids))" ]; do
		i=$((i + 1))
		if [ "$i" -gt "$SIGN_WAIT" ]; then
			echo "the join tokens are not signed in the cluster-info ConfigMap after ${SIGN_WAIT}s"
			pv_hint "the controller manager signs join tokens (its bootstrapsigner): is kube-controller-manager running on $PROVISION_NODE? kubectl -n kube-system get pods; crictl ps -a"
			exit 1
		fi
		sleep 1
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
