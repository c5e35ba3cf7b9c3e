# kubeadm-init 30-init: this node runs the cluster's control plane, made
# by `kubeadm init --config /etc/kubernetes/provision-kubeadm.yaml`, and its
# API answers; the cluster runs the settings the inventory asks for.
#
# Initialised means /etc/kubernetes/admin.conf and the API server's static
# pod manifest exist.  Then `check` waits up to 20 s for /readyz and for the
# control plane's other static pods (etcd, kube-controller-manager,
# kube-scheduler) to be Ready -- the controller manager signs the join
# tokens -- and compares the Kubernetes version
# and the networks kept in the kubeadm-config ConfigMap with the rendered
# file: those are fixed at init, so a difference is an error that says so,
# never a silent re-init.  An initialised control plane that is not up gets
# its kubelet restarted by `apply` (that starts the static pods
# again at once, instead of after a crash-loop back-off of up to 5
# minutes), and must pass the stability gate (50-stable) again.
#
# `apply` runs kubeadm init with --skip-token-print (no bootstrap token in
# any output) and turns its failures into errors that name the check and the
# fix: "[ERROR Name]: ..." lines of its preflight, an invalid configuration,
# a kubelet or API server that does not come up.  kubeadm's own bootstrap
# token is deleted afterwards; roles/join-tokens makes one per worker.
# /var/lib/provision/kubeadm-init.gate is left for 50-stable: the new
# control plane still has to prove that it stays up.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CONFIG=/etc/kubernetes/provision-kubeadm.yaml
ADMIN=/etc/kubernetes/admin.conf
MANIFEST=/etc/kubernetes/manifests/kube-apiserver.yaml
GATE=$PROVISION_STATE_DIR/kubeadm-init.gate
INIT_TOKEN_DESC="made by kubeadm init; provision deletes it"

kc() {
	kubectl --kubeconfig="$ADMIN" --request-timeout=10s "$@"
}

readyz() { # -> "ok" or the error, one line
	kc get --raw /readyz 2>&1 | head -n 1
}

# The value of KEY in the rendered file (first match, quotes removed).
rendered() {
	sed -n "s/^[[:space:]]*$1:[[:space:]]*//p" "$CONFIG" | head -n 1 | tr -d '"'
}

# The control-plane static pods of this node, besides the API server (which
# /readyz covers), that are not Ready, or "".
components_down() {
	kc -n kube-system get pods -l tier=control-plane \
		-o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null |
		awk -F '|' -v n="-$PROVISION_NODE" '
			{ ok[$1] = ($2 == "True") }
			END {
				split("etcd kube-controller-manager kube-scheduler", c, " ")
				for (i = 1; i <= 3; i++) if (!ok[c[i] n]) { printf "%s%s", sep, c[i]; sep = " " }
			}'
}

wait_readyz() { # TRIES (2 s apart): /readyz ok and every component Ready; what is not in $r
	i=0
	while :; do
		r=$(readyz)
		if [ "$r" = ok ]; then
			down=$(components_down)
			[ -n "$down" ] || return 0
			r="not Ready: $down"
		fi
		i=$((i + 1))
		[ "$i" -lt "$1" ] || return 1
		sleep 2
	done
}

initialised() {
	[ -f "$ADMIN" ] && [ -f "$MANIFEST" ]
}

# Compare what the cluster was made with and what the inventory asks for.
compare() {
	cc=$(kc -n kube-system get configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' 2>&1) || {
		echo "cannot read the kubeadm-config ConfigMap: $cc"
		return 2
	}
	rc=0
	for key in kubernetesVersion podSubnet serviceSubnet; do
		have=$(printf '%s\n' "$cc" | sed -n "s/^[[:space:]]*$key:[[:space:]]*//p" | head -n 1 | tr -d '"')
		want=$(rendered "$key")
		if [ "$have" != "$want" ]; then
			echo "the cluster was initialised with $key ${have:-(none)}; the inventory asks for $want"
			rc=2
		fi
	done
	if [ "$rc" != 0 ]; then
		pv_hint "a cluster's Kubernetes version and networks are fixed at kubeadm init: put the inventory back (cluster.kubernetes_version, pod_cidr, service_cidr), or rebuild the cluster (kubeadm reset -f on every node destroys it)"
	fi
	return $rc
}

# One hint for the [ERROR Name] lines of kubeadm's preflight in $1.
preflight_hint() {
	hints=
	# shellcheck disable=SC2013 # check names have no blanks
	for name in $(sed -n 's/.*\[ERROR \([^]]*\)\].*/\1/p' "$1"); do
		case $name in
		Swap) h="turn swap off: provision up --phases prep" ;;
		FileContent--proc-sys-net-ipv4-ip_forward) h="net.ipv4.ip_forward must be 1: provision up --phases prep (kernel role); inside a container, set it from the host" ;;
		FileContent--proc-sys-net-bridge-*) h="br_netfilter must be loaded and the bridge-nf-call sysctls 1: provision up --phases prep (kernel role)" ;;
		Port-*) h="port ${name#Port-} is in use: 'ss -ltnp sport = :${name#Port-}' on $PROVISION_NODE shows by what (an earlier control plane? kubeadm reset -f removes it)" ;;
		FileAvailable--etc-kubernetes-* | DirAvailable--var-lib-etcd) h="$PROVISION_NODE holds an earlier control plane or join ($name): 'kubeadm reset -f' there removes it (and that cluster), then run provision up" ;;
		CRI) h="containerd does not answer on its socket: provision up --phases prep; journalctl -u containerd on $PROVISION_NODE" ;;
		FileExisting-*) h="install ${name#FileExisting-} on $PROVISION_NODE" ;;
		NumCPU | Mem) h="a control plane needs at least 2 CPUs and 1700 MB of memory ($name)" ;;
		IsPrivilegedUser) h="kubeadm must run as root (check the inventory's sudo setting)" ;;
		*) h="see kubeadm's [ERROR $name] line above" ;;
		esac
		hints="${hints:+$hints; }[ERROR $name] $h"
	done
	echo "$hints"
}

delete_init_token() {
	kubeadm token list --kubeconfig="$ADMIN" 2>/dev/null |
		awk -F '   +' -v d="$INIT_TOKEN_DESC" '$5 == d { split($1, t, "."); print t[1] }' |
		while read -r id; do
			kubeadm token delete --kubeconfig="$ADMIN" "$id" >/dev/null 2>&1 || true
		done
}

case ${1:-} in
check)
	if ! initialised; then
		if [ -f "$ADMIN" ] || [ -f "$MANIFEST" ]; then
			echo "$ADMIN or $MANIFEST exists, but not both: a half-made control plane"
			pv_hint "'kubeadm reset -f' on $PROVISION_NODE removes it, then run provision up"
			exit 2
		fi
		echo "no control plane on $PROVISION_NODE yet"
		exit 1
	fi
	if ! wait_readyz 10; then
		echo "the control plane was initialised, but it is not up: $r"
		exit 1
	fi
	compare || exit $?
	echo "control plane up: /readyz ok, Kubernetes $(rendered kubernetesVersion), pods $(rendered podSubnet), services $(rendered serviceSubnet)"
	;;
apply)
	if initialised; then
		# The API or a component is down (check said so): restart the
		# kubelet, which starts the static pods again at once (a
		# crash-looping container may otherwise wait up to 5 minutes), and
		# prove stability anew.
		echo "systemctl restart kubelet (the control plane is not up)"
		systemctl restart kubelet
		if ! wait_readyz 60; then
			echo "the control plane is still not up after a kubelet restart: $r"
			pv_hint "look at 'systemctl status kubelet', 'journalctl -u kubelet' and 'crictl ps -a' on $PROVISION_NODE (kube-apiserver, etcd)"
			exit 1
		fi
		mkdir -p "$PROVISION_STATE_DIR"
		date +%s >"$GATE"
		exit 0
	fi
	addr=$(rendered advertiseAddress)
	if ! ip -o addr show | grep -q "inet6\{0,1\} $addr/"; then
		echo "the API server would advertise $addr, which is not an address of $PROVISION_NODE"
		pv_hint "the inventory address of $PROVISION_NODE must be one of its own IP addresses (not a host name, not a NAT address)"
		exit 1
	fi
	if [ "$(wc -l </proc/swaps)" -gt 1 ]; then
		echo "swap is on: the kubelet refuses to start (failSwapOn), so kubeadm init would wait for it in vain"
		pv_hint "turn swap off: provision up --phases prep"
		exit 1
	fi
	log=$(mktemp)
	rcf=$(mktemp)
	trap 'rm -f "$log" "$rcf"' EXIT
	echo "kubeadm init --config $CONFIG --skip-token-print"
	{
		rc=0
		kubeadm init --config "$CONFIG" --skip-token-print 2>&1 || rc=$?
		echo "$rc" >"$rcf"
	} | tee "$log"
	rc=$(cat "$rcf")
	if [ "$rc" != 0 ]; then
		if grep -q '\[ERROR ' "$log"; then
			pv_hint "kubeadm's preflight failed: $(preflight_hint "$log")"
		elif [ "$rc" = 3 ]; then
			pv_hint "kubeadm rejected $CONFIG (exit 3: invalid configuration): check cluster.kubernetes_version, pod_cidr and service_cidr in the inventory"
		elif grep -q 'kubelet is not healthy\|kubelet is not running' "$log"; then
			pv_hint "the kubelet did not come up: 'journalctl -u kubelet' on $PROVISION_NODE (swap on, a bad /var/lib/kubelet/config.yaml); after fixing, 'kubeadm reset -f' there and run provision up again"
		elif grep -q 'API server is not healthy\|wait-control-plane' "$log"; then
			pv_hint "the API server did not come up: 'crictl ps -a' and 'crictl logs' of kube-apiserver and etcd on $PROVISION_NODE; after fixing, 'kubeadm reset -f' there and run provision up again"
		else
			pv_hint "kubeadm init failed (exit $rc): see its output above; 'kubeadm reset -f' on $PROVISION_NODE undoes a partial init"
		fi
		exit 1
	fi
	delete_init_token
	mkdir -p "$PROVISION_STATE_DIR"
	date +%s >"$GATE"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
