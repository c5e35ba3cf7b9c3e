# kubeadm-init 30-init: this node runs the cluster's control plane, made
# by `kubeadm init --config /etc/kubernetes/provision-kubeadm.yaml`, and its
# API answers; the cluster runs the settings the inventory asks for.
#
# Initialised means /etc/kubernetes/admin.conf and the API server's static
# pod manifest exist.  Then `check` waits up to 20 s for /readyz and
# compares the Kubernetes version and the networks kept in the kubeadm-config
# ConfigMap with the rendered file: those are fixed at init, so a difference
# is an error that says so, never a silent re-init.  (That the other static
# pods -- etcd, kube-controller-manager, kube-scheduler -- are Ready is
# 50-stable's to wait for: they take longer than the API.)  An initialised
# control plane that is not up gets its kubelet restarted by `apply` (that
# starts the static pods again at once, instead of after a crash-loop
# back-off of up to 5 minutes), and must pass the stability gate (50-stable)
# again.
#
# A half-done init: kubeadm init writes admin.conf and the manifests before
# it waits for the control plane (wait-control-plane) and uploads its
# configuration (upload-config) after; an init that died in between leaves
# the files but no kubeadm-config ConfigMap.  The cluster decides: an API
# that answers without that ConfigMap is a half-done init; while the API
# does not answer, the record this step leaves when kubeadm init fails
# ($PROVISION_STATE_DIR/kubeadm-init.failed) does.  `apply` then says so,
# runs `kubeadm reset -f` and kubeadm init again.
#
# When kubeadm init fails in wait-control-plane its text always lists the
# same possible causes ("- The kubelet is not running", ...), so the hint
# comes from what actually failed, read on the node: the kubelet service
# (systemctl is-active), image pulls the kubelet reported (its journal:
# the pod sandbox image first), and the etcd and kube-apiserver containers
# (crictl ps -a: exited, with their last log lines).
#
# `apply` runs kubeadm init with --skip-token-print (no bootstrap token in
# any output) and turns its failures into errors that name the check and the
# fix: "[ERROR Name]: ..." lines of its preflight, an invalid configuration,
# a kubelet or API server that does not come up.  kubeadm's own bootstrap
# token is deleted afterwards; roles/join-tokens makes one per worker.
# /var/lib/provision/kubeadm-init.gate is left for 50-stable: the new
# control plane still has to prove that it stays up.
#
# Several control planes (cluster.api_endpoint): the init runs on the first
# one only (role.yaml: when first-control-plane) with --upload-certs and a
# certificate key of provision's (new_certificate_key), so that
# the others can join with --control-plane (roles/kubeadm-join-control-plane).
#
# After `provision restore` on a reinstalled control plane
# (roles/etcd-restore left $PROVISION_STATE_DIR/etcd-restore/ID.restored,
# /etc/kubernetes/pki and a non-empty /var/lib/etcd), kubeadm init runs on
# them: its certs phases use the certificates on disk (same CAs, so the
# workers' kubelets trust the API again and reconnect), etcd starts from
# the restored data, and only that one preflight error,
# DirAvailable--var-lib-etcd, is ignored -- never without the marker.  The
# marker is renamed ID.initialised once kubeadm init succeeded.  With
# several control planes the restored etcd is a new one-member cluster on
# this one and the others were reinstalled (provision restore checked that
# none holds an etcd member): their Nodes, as the backup had them, are
# deleted, so that roles/join-control-planes hands them a join again (a
# control plane that is not a Node) and kubeadm join does not find a Node
# of its name.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CONFIG=/etc/kubernetes/provision-kubeadm.yaml
ADMIN=/etc/kubernetes/admin.conf
MANIFEST=/etc/kubernetes/manifests/kube-apiserver.yaml
GATE=$PROVISION_STATE_DIR/kubeadm-init.gate
FAILED=$PROVISION_STATE_DIR/kubeadm-init.failed
INIT_TOKEN_DESC="made by kubeadm init; provision deletes it"
RESTORED_DIR=$PROVISION_STATE_DIR/etcd-restore
# the certificate key of kubeadm-certs (several control planes): root's only
CERT_KEY=$PROVISION_STATE_DIR/certificate-key

# The control planes after this one (PROVISION_CONTROL_PLANES, "NAME=ADDRESS
# ...", the first first; only with cluster.api_endpoint): their names, one
# a line; false when there are none (one control plane: as before).
other_control_planes() {
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	set -- ${PROVISION_CONTROL_PLANES:-}
	[ $# -gt 1 ] || return 1
	shift
	for c in "$@"; do
		echo "${c%%=*}"
	done
}

# A new certificate key (32 random bytes, hex: `kubeadm certs
# certificate-key`) in $CERT_KEY, mode 0600; and a 0600 copy of the
# configuration with it as InitConfiguration's certificateKey (printed: its
# path).  The key is never on a command line, in the output or the record.
new_certificate_key() {
	mkdir -p "$PROVISION_STATE_DIR"
	(umask 077 && kubeadm certs certificate-key >"$CERT_KEY.new") && mv "$CERT_KEY.new" "$CERT_KEY"
}
config_with_key() {
	c=$(umask 077 && mktemp /run/provision-kubeadm-init.XXXXXX)
	{
		sed -n '1,/^kind: InitConfiguration$/p' "$CONFIG"
		printf 'certificateKey: "%s"\n' "$(cat "$CERT_KEY")"
		sed '1,/^kind: InitConfiguration$/d' "$CONFIG"
	} >"$c"
	echo "$c"
}

# The marker etcd-restore left, when its PKI and data are in place.
restored() {
	for m in "$RESTORED_DIR"/*.restored; do
		[ -f "$m" ] && [ -f /etc/kubernetes/pki/ca.crt ] && [ -d /var/lib/etcd ] &&
			[ -n "$(ls -A /var/lib/etcd)" ] && { echo "$m"; return 0; }
	done
	return 1
}

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

wait_readyz() { # TRIES (2 s apart): /readyz ok; the last answer in $r
	i=0
	while :; do
		r=$(readyz)
		[ "$r" != ok ] || return 0
		i=$((i + 1))
		[ "$i" -lt "$1" ] || return 1
		sleep 2
	done
}

initialised() {
	[ -f "$ADMIN" ] && [ -f "$MANIFEST" ]
}

# Compare what the cluster was made with and what the inventory asks for;
# 3 when the cluster has no kubeadm-config ConfigMap (a half-done init).
compare() {
	cc=$(kc -n kube-system get configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' 2>&1) || {
		case $cc in
		*NotFound*) return 3 ;;
		esac
		echo "cannot read the kubeadm-config ConfigMap: $cc"
		pv_hint "kubectl on $PROVISION_NODE cannot read kube-system/kubeadm-config: 'kubectl --kubeconfig=/etc/kubernetes/admin.conf -n kube-system get configmap kubeadm-config' there shows why"
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

# One hint for the [ERROR Name] lines of kubeadm's preflight in $1; a
# check that fails for several things (ImagePull, once per image) is named
# once, with all of them.
preflight_hint() {
	hints=
	# shellcheck disable=SC2013 # check names have no blanks
	for name in $(sed -n 's/.*\[ERROR \([^]]*\)\].*/\1/p' "$1" | awk '!seen[$0]++'); do
		# kubeadm's own words for it (node text, cut short)
		msg=$(sed -n "s/.*\[ERROR $name\]: *//p" "$1" | head -n 1 | cut -c 1-160)
		case $name in
		ImagePull)
			imgs=$(pv_pull_failures <"$1")
			list=$(printf '%s\n' "$imgs" | cut -f 1 | paste -sd ' ' -)
			h="$PROVISION_NODE cannot pull ${list:-the images of kubeadm}: $(pv_pull_cause "$(printf '%s\n' "$imgs" | head -n 1 | cut -f 2)")"
			;;
		Swap) h="turn swap off: provision up --phases prep" ;;
		FileContent--proc-sys-net-ipv4-ip_forward) h="net.ipv4.ip_forward must be 1: provision up --phases prep (kernel role); inside a container, set it from the host" ;;
		FileContent--proc-sys-net-bridge-*) h="br_netfilter must be loaded and the bridge-nf-call sysctls 1: provision up --phases prep (kernel role)" ;;
		Port-*) h="port ${name#Port-} is in use: 'ss -ltnp sport = :${name#Port-}' on $PROVISION_NODE shows by what (an earlier control plane? kubeadm reset -f removes it)" ;;
		FileAvailable--etc-kubernetes-* | DirAvailable--var-lib-etcd) h="$PROVISION_NODE holds an earlier control plane or join ($name): 'kubeadm reset -f' there removes it (and that cluster), then run provision up" ;;
		CRI) h="containerd does not answer on its socket: provision up --phases prep; journalctl -u containerd on $PROVISION_NODE" ;;
		FileExisting-*) h="install ${name#FileExisting-} on $PROVISION_NODE" ;;
		NumCPU | Mem) h="a control plane needs at least 2 CPUs and 1700 MB of memory ($name)" ;;
		IsPrivilegedUser) h="kubeadm must run as root (check the inventory's sudo setting)" ;;
		*) h="kubeadm on $PROVISION_NODE says: ${msg:-(no message)}" ;;
		esac
		hints="${hints:+$hints; }[ERROR $name] $h"
	done
	echo "$hints"
}

HALF_DONE="a half-done kubeadm init: admin.conf and the static pod manifests exist, but the cluster has no kubeadm-config ConfigMap (kubeadm init stopped before uploading its configuration, in wait-control-plane)"

# After kubeadm init failed in wait-control-plane: the hint from what
# actually failed on this node.
diagnose() {
	if [ "$(systemctl is-active kubelet 2>/dev/null || true)" != active ]; then
		journalctl -u kubelet --no-pager -n 5 2>/dev/null || true
		pv_hint "the kubelet is not running on $PROVISION_NODE: 'journalctl -u kubelet' there says why (swap on, a bad /var/lib/kubelet/config.yaml, a cgroup driver containerd does not use); after fixing, run provision up again: it resets the half-done init"
		return
	fi
	# the kubelet's own words: "Failed to pull image" err=... image="...",
	# the CRI's "failed to pull and unpack image", a sandbox's pause image
	failures=$(journalctl -u kubelet --no-pager --since "@${SINCE:-0}" 2>/dev/null | pv_pull_failures)
	pulls=$(printf '%s\n' "$failures" | cut -f 1 | paste -sd ' ' -)
	if [ -n "$pulls" ]; then
		why=$(printf '%s\n' "$failures" | head -n 1 | cut -f 2)
		echo "the kubelet cannot pull: $pulls ($why)"
		case " $pulls " in
		*/pause:*) sandbox="containerd's sandbox image must be kubeadm's (${PROVISION_KUBE_PAUSE_IMAGE:-see roles/kubernetes.yaml}: provision up --phases prep sets it); " ;;
		*) sandbox= ;;
		esac
		pv_hint "the kubelet on $PROVISION_NODE cannot pull $pulls: $(pv_pull_cause "$why"); ${sandbox}then run provision up again: it resets the half-done init (and its pull phase, images-init, pulls kubeadm's images first)"
		return
	fi
	failed=
	for c in etcd kube-apiserver; do
		all=$(crictl ps -a --name "^$c\$" -q 2>/dev/null | head -n 1)
		up=$(crictl ps --name "^$c\$" -q 2>/dev/null | head -n 1)
		if [ -z "$all" ]; then
			echo "$c: no container (the kubelet did not start it)"
			failed=${failed:-$c}
		elif [ -z "$up" ]; then
			echo "$c: exited; its last lines (crictl logs --tail 3 $all):"
			crictl logs --tail 3 "$all" 2>&1 | sed 's/^/  /' || true
			failed=${failed:-$c}
		else
			echo "$c: running"
		fi
	done
	case $failed in
	etcd) pv_hint "etcd does not run on $PROVISION_NODE: 'crictl ps -a --name etcd' and 'crictl logs' of it there (its data folder /var/lib/etcd, its certificates, port 2379); after fixing, run provision up again: it resets the half-done init" ;;
	*) pv_hint "the API server did not come up on $PROVISION_NODE (the kubelet runs): 'crictl ps -a --name kube-apiserver' and 'crictl logs' of it there; after fixing, run provision up again: it resets the half-done init" ;;
	esac
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
		if m=$(restored); then
			m=${m##*/}
			echo "no control plane on $PROVISION_NODE yet; backup ${m%.restored} restored there (provision restore) waits for kubeadm init"
		else
			echo "no control plane on $PROVISION_NODE yet"
		fi
		exit 1
	fi
	if ! wait_readyz 10; then
		if [ -f "$FAILED" ]; then
			echo "$HALF_DONE; kubeadm init failed here $(cat "$FAILED") and the API server does not answer: $r"
		else
			echo "the control plane was initialised, but it is not up: $r"
		fi
		exit 1
	fi
	rc=0
	compare || rc=$?
	if [ "$rc" = 3 ]; then
		echo "$HALF_DONE"
		exit 1
	fi
	[ "$rc" = 0 ] || exit $rc
	echo "control plane up: /readyz ok, Kubernetes $(rendered kubernetesVersion), pods $(rendered podSubnet), services $(rendered serviceSubnet)"
	;;
apply)
	half=
	if initialised; then
		if [ "$(readyz)" != ok ] && [ -f "$FAILED" ]; then
			half="kubeadm init failed here $(cat "$FAILED") and the API server does not answer"
		else
			if [ "$(readyz)" != ok ]; then
				# The API is down (check said so): restart the kubelet,
				# which starts the static pods again at once (a
				# crash-looping container may otherwise wait up to 5
				# minutes), and prove stability anew.
				echo "systemctl restart kubelet (the control plane is not up)"
				SINCE=$(date +%s)
				systemctl restart kubelet
				if ! wait_readyz 60; then
					echo "the control plane is still not up after a kubelet restart: $r"
					diagnose
					exit 1
				fi
			fi
			rc=0
			compare >/dev/null || rc=$?
			if [ "$rc" != 3 ]; then
				rm -f "$FAILED"
				mkdir -p "$PROVISION_STATE_DIR"
				date +%s >"$GATE"
				exit 0
			fi
			half="the API server answers, but the cluster has no kubeadm-config ConfigMap"
		fi
		echo "$PROVISION_NODE holds a half-done kubeadm init ($half): resetting it (kubeadm reset -f) and running kubeadm init again"
		if ! kubeadm reset -f >"${TMPDIR:-/tmp}/provision-kubeadm-reset.log" 2>&1; then
			tail -n 5 "${TMPDIR:-/tmp}/provision-kubeadm-reset.log"
			pv_hint "kubeadm reset -f failed on $PROVISION_NODE: 'kubeadm reset -f' there shows why again (its last lines: provision logs $PROVISION_NODE)"
			exit 1
		fi
		rm -f "$FAILED" "${TMPDIR:-/tmp}/provision-kubeadm-reset.log"
		echo "kubeadm reset -f: the half-done init removed"
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
	set --
	marker=
	if marker=$(restored); then
		set -- --ignore-preflight-errors=DirAvailable--var-lib-etcd
		m=${marker##*/}
		echo "backup ${m%.restored} restored here (provision restore): kubeadm init on its PKI and etcd data"
	fi
	conf=$CONFIG
	if other_control_planes >/dev/null; then
		# Several control planes: kubeadm encrypts the shared certificates
		# into the kubeadm-certs Secret with a certificate key provision
		# makes here (new_certificate_key: a 0600 file), given in a 0600
		# copy of the configuration (certificateKey; never a command line)
		# and not printed (--skip-certificate-key-print); roles/join-control-planes
		# hands it to the other control planes.
		new_certificate_key
		conf=$(config_with_key)
		trap 'rm -f "$log" "$rcf" "$conf"' EXIT
		set -- "$@" --upload-certs --skip-certificate-key-print
	fi
	SINCE=$(date +%s)
	echo "kubeadm init --config $CONFIG --skip-token-print $*"
	{
		rc=0
		kubeadm init --config "$conf" --skip-token-print "$@" 2>&1 || rc=$?
		echo "$rc" >"$rcf"
	} | tee "$log"
	rc=$(cat "$rcf")
	if [ "$rc" != 0 ]; then
		if initialised; then
			mkdir -p "$PROVISION_STATE_DIR"
			date -u '+at %Y-%m-%d %H:%M:%S UTC' >"$FAILED"
		fi
		if grep -q '\[ERROR ' "$log"; then
			hint=$(preflight_hint "$log")
			# the last line is what the summary shows: kubeadm's own is
			# "To see the stack trace of this error execute with --v=5 or higher"
			echo "kubeadm init's preflight failed on $PROVISION_NODE: $(sed -n 's/.*\(\[ERROR [^]]*\]\).*/\1/p' "$log" | awk '!seen[$0]++' | paste -sd ' ' -)"
			pv_hint "kubeadm's preflight failed: $hint"
		elif [ "$rc" = 3 ]; then
			pv_hint "kubeadm rejected $CONFIG (exit 3: invalid configuration): check cluster.kubernetes_version, pod_cidr and service_cidr in the inventory"
		elif grep -q 'wait-control-plane' "$log"; then
			diagnose
		else
			pv_hint "kubeadm init failed on $PROVISION_NODE (exit $rc): its whole output is in 'provision logs $PROVISION_NODE'; 'kubeadm reset -f' there undoes a partial init"
		fi
		exit 1
	fi
	delete_init_token
	rm -f "$FAILED"
	if [ -n "$marker" ] && others=$(other_control_planes); then
		for c in $others; do
			i=0
			until out=$(kc delete node "$c" --ignore-not-found 2>&1); do
				i=$((i + 1))
				if [ "$i" -ge 30 ]; then
					echo "cannot delete the restored Node $c: $out"
					pv_hint "'kubectl --kubeconfig=$ADMIN delete node $c' on $PROVISION_NODE, then provision up: $c joins again"
					exit 1
				fi
				sleep 2
			done
		done
		echo "the restored Nodes of the other control planes deleted ($(echo "$others" | paste -sd ' ' -)): they join again"
	fi
	if [ -n "$marker" ]; then
		mv "$marker" "${marker%.restored}.initialised"
	fi
	mkdir -p "$PROVISION_STATE_DIR"
	date +%s >"$GATE"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
