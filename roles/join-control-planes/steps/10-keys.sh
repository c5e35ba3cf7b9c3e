# join-control-planes 10-keys: with several control planes
# (cluster.api_endpoint), every other control plane that is not a Node of
# the cluster yet has what it needs to join with --control-plane, handed
# to it alone as secrets (roles/kubeadm-join-control-plane takes them):
#
#   control_plane_token@NODE  a bootstrap token of its own, 15 minutes
#                             ("provision: kubeadm join of NODE", as
#                             roles/join-tokens makes them for workers;
#                             its 10-stale deletes it once NODE joined)
#   control_plane_join@NODE   "kubeadm join HOST:PORT --token ...
#                             --discovery-token-ca-cert-hash sha256:..."
#                             (HOST:PORT: admin.conf's, the API endpoint)
#   certificate_key@NODE      the key the kubeadm-certs Secret is sealed
#                             with (roles/kubeadm-init 30-init made it, in $PROVISION_STATE_DIR/
#                             certificate-key, mode 0600)
#
# The Secret lives 2 h (its own bootstrap token): when it is gone `apply`
# makes a new key and uploads the certificates again (`kubeadm init phase
# upload-certs --upload-certs --config` with the key in a 0600 copy of the
# configuration, --skip-certificate-key-print).  Once every control plane
# has joined roles/certificate-key-cleanup removes the key file and the
# Secret.  One control plane: nothing to do.
# Nothing this step prints holds a token or the key.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
CONFIG=/etc/kubernetes/provision-kubeadm.yaml
CA=/etc/kubernetes/pki/ca.crt
CERT_KEY=$PROVISION_STATE_DIR/certificate-key
PREFIX="provision: kubeadm join of "
TTL=15m
SIGN_WAIT=60

# The control planes after this one, one name a line (as kubeadm-init 30-init).
other_control_planes() {
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	set -- ${PROVISION_CONTROL_PLANES:-}
	[ $# -gt 1 ] || return 1
	shift
	for c in "$@"; do
		echo "${c%%=*}"
	done
}

kc() {
	kubectl --kubeconfig="$ADMIN" --request-timeout=30s "$@"
}

# Those not Nodes of the cluster yet.
unjoined() {
	j=$(kc get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}') || return 2
	for c in $others; do
		printf '%s\n' "$j" | grep -qxF "$c" || echo "$c"
	done
}

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

secret_there() {
	kc -n kube-system get secret kubeadm-certs -o name >/dev/null 2>&1
}

# The ids of the tokens (of $need) whose signature cluster-info lacks.
unsigned() {
	data=$(kc -n kube-public get configmap cluster-info -o 'jsonpath={.data}')
	for w in $need; do
		t=$(token_for "$w")
		[ -n "$t" ] || continue
		printf '%s' "$data" | grep -qF "\"jws-kubeconfig-${t%%.*}\"" || echo "${t%%.*}"
	done
}

if ! others=$(other_control_planes); then
	echo "one control plane: no other to join"
	exit 0
fi
if [ ! -f "$ADMIN" ]; then
	echo "no cluster yet: $ADMIN is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	if ! need=$(unjoined); then
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
		exit 2
	fi
	if [ -z "$need" ]; then
		echo "every control plane has joined ($(printf '%s\n' "$others" | wc -l) beside $PROVISION_NODE)"
		exit 0
	fi
	if [ ! -s "$CERT_KEY" ] || ! secret_there; then
		echo "no certificates uploaded for the control planes to join (the kubeadm-certs Secret lives 2 h)"
		exit 1
	fi
	hash=$(ca_hash)
	ep=$(endpoint)
	key=$(cat "$CERT_KEY")
	missing=
	handed=
	for c in $need; do
		tok=$(token_for "$c")
		if [ -z "$tok" ]; then
			missing="$missing $c"
			continue
		fi
		printf '::secret control_plane_token@%s=%s\n' "$c" "$tok"
		printf '::secret certificate_key@%s=%s\n' "$c" "$key"
		printf '::secret control_plane_join@%s=%s\n' "$c" "kubeadm join $ep --token $tok --discovery-token-ca-cert-hash sha256:$hash"
		handed="$handed $c"
	done
	[ -z "$handed" ] || echo "control-plane join handed to:$handed"
	if [ -n "$missing" ]; then
		echo "no join token yet for:$missing"
		exit 1
	fi
	if [ -n "$(unsigned)" ]; then
		echo "the cluster-info ConfigMap does not carry the signature of every join token yet"
		exit 1
	fi
	;;
apply)
	need=$(unjoined)
	if [ ! -s "$CERT_KEY" ] || ! secret_there; then
		mkdir -p "$PROVISION_STATE_DIR"
		(umask 077 && kubeadm certs certificate-key >"$CERT_KEY.new") && mv "$CERT_KEY.new" "$CERT_KEY"
		conf=$(umask 077 && mktemp /run/provision-kubeadm-init.XXXXXX)
		trap 'rm -f "$conf"' EXIT
		{
			sed -n '1,/^kind: InitConfiguration$/p' "$CONFIG"
			printf 'certificateKey: "%s"\n' "$(cat "$CERT_KEY")"
			sed '1,/^kind: InitConfiguration$/d' "$CONFIG"
		} >"$conf"
		if ! kubeadm init phase upload-certs --upload-certs --skip-certificate-key-print --config "$conf" --kubeconfig "$ADMIN" 2>&1; then
			pv_hint "kubeadm init phase upload-certs failed on $PROVISION_NODE (its output: provision logs $PROVISION_NODE); the API server must answer: 'kubectl --kubeconfig=/etc/kubernetes/admin.conf get --raw /readyz?verbose' on $PROVISION_NODE, then provision up"
			exit 1
		fi
	fi
	for c in $need; do
		[ -z "$(token_for "$c")" ] || continue
		if ! kubeadm token create --kubeconfig="$ADMIN" --ttl "$TTL" --description "$PREFIX$c" >/dev/null 2>&1; then
			pv_hint "kubeadm token create failed on $PROVISION_NODE: run it there by hand to see why (the API server must answer)"
			exit 1
		fi
		echo "token made for control plane $c (valid $TTL)"
	done
	i=0
	while [ -n "$(unsigned)" ]; do
		i=$((i + 1))
		if [ "$i" -gt "$SIGN_WAIT" ]; then
			echo "the join tokens are not signed in the cluster-info ConfigMap after ${SIGN_WAIT}s"
			pv_hint "the controller manager signs join tokens (its bootstrapsigner): is kube-controller-manager running on $PROVISION_NODE? kubectl -n kube-system get pods"
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
