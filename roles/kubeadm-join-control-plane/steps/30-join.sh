# kubeadm-join-control-plane 30-join: this control plane is a Node of the
# cluster and runs its own control plane (API server, etcd member).
#
# Joined means /etc/kubernetes/admin.conf, kubelet.conf and the API
# server's static pod manifest exist and the API (asked through admin.conf,
# the API endpoint) knows this Node; `check` gives the kubelet
# REGISTER_WAIT=60 s to register it.
#
# `apply` takes what roles/join-control-planes handed this node alone
# (secrets, read with pv_secret, never in the environment of kubeadm:
# control_plane_join, "kubeadm join HOST:PORT --token T
# --discovery-token-ca-cert-hash sha256:H"; certificate_key),
# waits until every control plane before it in the inventory answers on
# its API port (etcd adds one member at a time: the control planes join in
# turn), undoes a failed earlier join with `kubeadm reset -f` (which
# removes its etcd member), and runs `kubeadm join --config` with a copy of
# the rendered JoinConfiguration plus the discovery and
# controlPlane.certificateKey, in /run, mode 0600, removed at exit.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
KUBELET_CONF=/etc/kubernetes/kubelet.conf
MANIFEST=/etc/kubernetes/manifests/kube-apiserver.yaml
CONFIG=/etc/kubernetes/provision-join-control-plane.yaml
REGISTER_WAIT=60
TURN_WAIT=300

leftovers() {
	for f in "$ADMIN" "$KUBELET_CONF" /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/pki/ca.crt \
		/var/lib/kubelet/config.yaml /etc/kubernetes/manifests/etcd.yaml; do
		[ ! -e "$f" ] || echo "$f"
	done
}

# "NAME=ADDRESS" of the control planes between the first and this one.
before_me() {
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	set -- ${PROVISION_CONTROL_PLANES:-}
	[ $# -gt 0 ] && shift
	for c in "$@"; do
		[ "${c%%=*}" != "$PROVISION_NODE" ] || return 0
		echo "$c"
	done
}

api_port() {
	sed -n 's/^[[:space:]]*bindPort:[[:space:]]*//p' "$CONFIG" | head -n 1
}

answers() { # ADDRESS PORT: something listens there
	timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

case ${1:-} in
check)
	if [ -f "$ADMIN" ] && [ -f "$KUBELET_CONF" ] && [ -f "$MANIFEST" ]; then
		i=0
		while :; do
			r=$(kubectl --kubeconfig="$ADMIN" --request-timeout=15s get node "$PROVISION_NODE" -o 'jsonpath={.metadata.name}' 2>&1) || true
			if [ "$r" = "$PROVISION_NODE" ]; then
				echo "joined as a control plane: the cluster knows Node $PROVISION_NODE"
				exit 0
			fi
			case $r in *NotFound*) ;; *) break ;; esac
			i=$((i + 1))
			[ "$i" -lt "$REGISTER_WAIT" ] || break
			sleep 1
		done
		echo "$PROVISION_NODE holds a control plane, but: $r"
		case $r in
		*x509* | *Unauthorized* | *certificate*)
			pv_hint "$PROVISION_NODE belongs to another cluster: 'kubeadm reset -f' on $PROVISION_NODE, then provision up"
			;;
		*)
			pv_hint "the API endpoint does not answer $PROVISION_NODE: is the first control plane up, and the endpoint (cluster.api_endpoint) reachable?"
			;;
		esac
		exit 2
	fi
	echo "$PROVISION_NODE has not joined the cluster as a control plane"
	exit 1
	;;
apply)
	cmd=$(pv_secret control_plane_join)
	key=$(pv_secret certificate_key)
	if [ -z "$cmd" ] || [ -z "$key" ]; then
		echo "no control-plane join command or certificate key was handed to $PROVISION_NODE"
		pv_hint "roles/join-control-planes on the first control plane makes them: run provision up with the first control plane among the nodes"
		exit 1
	fi
	# shellcheck disable=SC2086 # the command's words
	set -- $cmd
	endpoint=
	token=
	hash=
	if [ "${1:-}" = kubeadm ] && [ "${2:-}" = join ]; then
		endpoint=${3:-}
		shift 3
		while [ $# -gt 0 ]; do
			case $1 in
			--token) token=${2:-} && shift ;;
			--discovery-token-ca-cert-hash) hash=${2:-} && shift ;;
			esac
			shift
		done
	fi
	if [ -z "$endpoint" ] || [ -z "$token" ] || [ -z "$hash" ]; then
		echo "the join command handed to $PROVISION_NODE is not 'kubeadm join HOST:PORT --token ... --discovery-token-ca-cert-hash sha256:...'"
		exit 1
	fi
	port=$(api_port)
	start=$(date +%s)
	for c in $(before_me); do
		while ! answers "${c#*=}" "$port"; do
			if [ $(($(date +%s) - start)) -ge "$TURN_WAIT" ]; then
				echo "control plane ${c%%=*} (before $PROVISION_NODE) does not answer on ${c#*=}:$port after ${TURN_WAIT}s"
				pv_hint "control planes join one at a time, in the inventory's order: see ${c%%=*}'s result (provision logs ${c%%=*})"
				exit 1
			fi
			sleep 2
		done
	done
	[ -z "$(before_me)" ] || echo "the control planes before $PROVISION_NODE answer ($(($(date +%s) - start))s)"
	if [ -n "$(leftovers)" ]; then
		echo "undoing an earlier, failed join ($(leftovers | paste -sd ' ' -)): kubeadm reset -f"
		kubeadm reset -f 2>&1 | grep '^\[reset\]' || true
	fi
	umask 077
	conf=$(mktemp /run/provision-join.XXXXXX)
	log=$(mktemp)
	rcf=$(mktemp)
	trap 'rm -f "$conf" "$log" "$rcf"' EXIT
	{
		cat "$CONFIG"
		printf '  certificateKey: "%s"\n' "$key"
		printf 'discovery:\n  bootstrapToken:\n    apiServerEndpoint: "%s"\n    token: "%s"\n    caCertHashes: ["%s"]\n' \
			"$endpoint" "$token" "$hash"
		if [ "${PROVISION_KUBE_KUBEADM_API:-}" = kubeadm.k8s.io/v1beta3 ]; then
			printf '  timeout: 1m0s\n'
		fi
	} >"$conf"
	echo "kubeadm join $endpoint --control-plane"
	{
		rc=0
		kubeadm join --config "$conf" 2>&1 || rc=$?
		echo "$rc" >"$rcf"
	} | tee "$log"
	rm -f "$conf"
	rc=$(cat "$rcf")
	[ "$rc" != 0 ] || exit 0
	if grep -q 'could not find a JWS signature\|is invalid for this cluster or it has expired' "$log"; then
		pv_hint "the join token of $PROVISION_NODE expired or was deleted: run provision up again (roles/join-control-planes makes a new one)"
	elif grep -q 'error downloading certs' "$log"; then
		pv_hint "$PROVISION_NODE could not take the certificates from the kubeadm-certs Secret (expired after 2 h, or another key): run provision up again (roles/join-control-planes uploads them again)"
	elif grep -q 'failed to request the cluster-info ConfigMap' "$log"; then
		pv_hint "$PROVISION_NODE cannot reach the API endpoint $endpoint: check cluster.api_endpoint and the network (port ${endpoint##*:})"
	elif grep -q '\[ERROR ' "$log"; then
		pv_hint "kubeadm's preflight failed on $PROVISION_NODE: $(sed -n 's/.*\(\[ERROR [^]]*\]\).*/\1/p' "$log" | awk '!seen[$0]++' | paste -sd ' ' -); 'kubeadm reset -f' there removes an earlier control plane"
	elif grep -q 'etcd' "$log"; then
		pv_hint "kubeadm join of $PROVISION_NODE failed at its etcd member: 'kubectl get pods -n kube-system -l component=etcd' on the first control plane and 'crictl logs' of etcd on $PROVISION_NODE; run provision up again (it resets the failed join)"
	else
		pv_hint "kubeadm join --control-plane failed on $PROVISION_NODE (exit $rc): its whole output is in 'provision logs $PROVISION_NODE'"
	fi
	exit 1
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
