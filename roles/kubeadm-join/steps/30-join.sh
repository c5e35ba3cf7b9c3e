# kubeadm-join 30-join: this worker is a Node of the cluster, with the
# kubelet credentials kubeadm join gives it.
#
# Joined means /etc/kubernetes/kubelet.conf exists and the API server,
# asked with those credentials, knows this Node (the kubelet registers it
# within seconds of the join; `check` gives it REGISTER_WAIT=60 s).  Credentials the API
# rejects mean the node belongs to another (or a rebuilt) cluster: an error
# with the fix, never a silent reset.
#
# `apply` takes the join command roles/join-tokens handed to this node
# (the secret join_command, read with pv_secret: never in the environment
# of what it starts), writes the JoinConfiguration to
# /run (mode 0600, removed at exit), undoes a failed earlier join with
# `kubeadm reset -f`, and runs `kubeadm join --config`.  The
# JoinConfiguration names /etc/kubernetes/provision-patches (patches.directory):
# this node's own kubelet settings, uploaded by the role
# (templates/kubelet-patch.yaml.tmpl: resolvConf from its facts).  Its failures are
# explained: an expired or deleted token, a CA that is not the pinned one,
# an unreachable API server, kubeadm's preflight ([ERROR Name] lines), a
# Ready Node of the same name.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KUBELET_CONF=/etc/kubernetes/kubelet.conf
DISCOVERY_TIMEOUT=1m0s
REGISTER_WAIT=60

case " $PROVISION_ROLES " in
*" control-plane "*)
	echo "$PROVISION_NODE is the control plane: it is a Node since kubeadm init"
	exit 0
	;;
esac

leftovers() {
	for f in /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/pki/ca.crt /var/lib/kubelet/config.yaml; do
		[ ! -e "$f" ] || echo "$f"
	done
}

preflight_hint() {
	hints=
	# shellcheck disable=SC2013 # check names have no blanks
	for name in $(sed -n 's/.*\[ERROR \([^]]*\)\].*/\1/p' "$1"); do
		# kubeadm's own words for it (node text, cut short)
		msg=$(sed -n "s/.*\[ERROR $name\]: *//p" "$1" | head -n 1 | cut -c 1-160)
		case $name in
		ImagePull)
			img=$(printf '%s\n' "$msg" | sed -n 's/^failed to pull image \([^ ]*\): .*/\1/p')
			h="$PROVISION_NODE cannot pull ${img:-an image of 'kubeadm config images list'}: 'crictl pull ${img:-IMAGE}' there shows why; the node needs registry.k8s.io (cluster.http_proxy) or a mirror holding the image"
			;;
		FileContent--proc-sys-net-ipv4-ip_forward) h="net.ipv4.ip_forward must be 1: provision up --phases prep (kernel role); inside a container, set it from the host" ;;
		FileContent--proc-sys-net-bridge-*) h="br_netfilter must be loaded and the bridge-nf-call sysctls 1: provision up --phases prep (kernel role)" ;;
		Port-*) h="port ${name#Port-} is in use on $PROVISION_NODE ('ss -ltnp sport = :${name#Port-}')" ;;
		FileAvailable--etc-kubernetes-*) h="$PROVISION_NODE holds files of an earlier join: 'kubeadm reset -f' there, then provision up" ;;
		CRI) h="containerd does not answer on its socket: provision up --phases prep; journalctl -u containerd on $PROVISION_NODE" ;;
		FileExisting-*) h="install ${name#FileExisting-} on $PROVISION_NODE" ;;
		*) h="kubeadm on $PROVISION_NODE says: ${msg:-(no message)}" ;;
		esac
		hints="${hints:+$hints; }[ERROR $name] $h"
	done
	echo "$hints"
}

case ${1:-} in
check)
	if [ -f "$KUBELET_CONF" ]; then
		# kubeadm join returns once the kubelet has its certificate; the
		# kubelet registers the Node a few seconds later.
		i=0
		while :; do
			r=$(kubectl --kubeconfig="$KUBELET_CONF" --request-timeout=15s get node "$PROVISION_NODE" -o 'jsonpath={.metadata.name}' 2>&1) || true
			if [ "$r" = "$PROVISION_NODE" ]; then
				echo "joined: the cluster knows Node $PROVISION_NODE"
				exit 0
			fi
			case $r in *NotFound*) ;; *) break ;; esac
			i=$((i + 1))
			[ "$i" -lt "$REGISTER_WAIT" ] || break
			sleep 1
		done
		echo "$PROVISION_NODE has kubelet credentials, but: $r"
		case $r in
		*x509* | *Unauthorized* | *certificate*)
			pv_hint "$PROVISION_NODE belongs to another cluster (its kubelet.conf is not this control plane's): 'kubeadm reset -f' on $PROVISION_NODE, then provision up"
			;;
		*NotFound* | *"not found"*)
			pv_hint "the Node $PROVISION_NODE was deleted from the cluster: 'kubeadm reset -f' on $PROVISION_NODE, then provision up joins it again"
			;;
		*)
			pv_hint "the API server does not answer $PROVISION_NODE: is the control plane up, and can this node reach it (port 6443)?"
			;;
		esac
		exit 2
	fi
	echo "$PROVISION_NODE has not joined the cluster"
	exit 1
	;;
apply)
	cmd=$(pv_secret join_command)
	if [ -z "$cmd" ]; then
		echo "no join command was handed to $PROVISION_NODE"
		pv_hint "roles/join-tokens on the control plane makes it: run provision up with the control plane among the nodes"
		exit 1
	fi
	# kubeadm join HOST:PORT --token TOKEN --discovery-token-ca-cert-hash sha256:HASH
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
	if [ -n "$(leftovers)" ]; then
		echo "undoing an earlier, failed join ($(leftovers | paste -sd ' ' -)): kubeadm reset -f"
		kubeadm reset -f 2>&1 | grep '^\[reset\]' || true
	fi
	umask 077
	conf=$(mktemp /run/provision-join.XXXXXX)
	log=$(mktemp)
	rcf=$(mktemp)
	trap 'rm -f "$conf" "$log" "$rcf"' EXIT
	api=${PROVISION_KUBE_KUBEADM_API:-kubeadm.k8s.io/v1beta3}
	# v1beta3 and v1beta4 differ in the timeout and kubeletExtraArgs
	# (roles/kubernetes.yaml, kubeadm_api)
	if [ "$api" = kubeadm.k8s.io/v1beta3 ]; then
		timeout="  timeout: $DISCOVERY_TIMEOUT" args="    node-ip: \"$PROVISION_ADDRESS\""
		tail=
	else
		timeout=
		args=$(printf '  - name: node-ip\n    value: "%s"' "$PROVISION_ADDRESS")
		tail=$(printf 'timeouts:\n  discovery: %s' "$DISCOVERY_TIMEOUT")
	fi
	cat >"$conf" <<-EOF
		apiVersion: $api
		kind: JoinConfiguration
		discovery:
		  bootstrapToken:
		    apiServerEndpoint: "$endpoint"
		    token: "$token"
		    caCertHashes: ["$hash"]
		$timeout
		nodeRegistration:
		  name: "$PROVISION_NODE"
		  criSocket: unix:///var/run/containerd/containerd.sock
		  kubeletExtraArgs:
		$args
		patches:
		  directory: /etc/kubernetes/provision-patches
		$tail
	EOF
	echo "kubeadm join $endpoint (discovery timeout $DISCOVERY_TIMEOUT)"
	{
		rc=0
		kubeadm join --config "$conf" 2>&1 || rc=$?
		echo "$rc" >"$rcf"
	} | tee "$log"
	rm -f "$conf"
	rc=$(cat "$rcf")
	[ "$rc" != 0 ] || exit 0
	if grep -q 'could not find a JWS signature\|is invalid for this cluster or it has expired' "$log"; then
		echo "the join token of $PROVISION_NODE is not valid: it expired or was deleted before this node used it"
		pv_hint "run provision up again: it makes a new token for every worker that has not joined (tokens live 15 minutes); if that fails too, the controller manager on the control plane is not signing tokens (kubectl -n kube-system get pods)"
	elif grep -q 'none of the public keys' "$log"; then
		pv_hint "the control plane at $endpoint has another CA than the one pinned when the token was made (was it initialised again?): run provision up again"
	elif grep -q 'failed to request the cluster-info ConfigMap' "$log"; then
		pv_hint "$PROVISION_NODE cannot reach the API server at $endpoint: check the network between the nodes (port ${endpoint##*:}, firewall, routes)"
	elif grep -q '\[ERROR ' "$log"; then
		pv_hint "kubeadm's preflight failed: $(preflight_hint "$log")"
	elif grep -q 'already exists in the cluster' "$log"; then
		pv_hint "a Ready Node named $PROVISION_NODE is already in the cluster (another machine with this name?): delete it there with kubectl delete node $PROVISION_NODE if it is stale"
	elif [ "$rc" = 3 ]; then
		pv_hint "kubeadm on $PROVISION_NODE rejected the join configuration (exit 3: invalid configuration): its message is in 'provision logs $PROVISION_NODE'; check cluster.kubernetes_version in the inventory"
	else
		pv_hint "kubeadm join failed on $PROVISION_NODE (exit $rc): its whole output is in 'provision logs $PROVISION_NODE'; 'journalctl -u kubelet' there shows the kubelet's side"
	fi
	exit 1
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
