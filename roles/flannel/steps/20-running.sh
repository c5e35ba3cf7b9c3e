# flannel 20-running: every node of the cluster has a Flannel pod that is
# Running and ready, and so are the CoreDNS pods (k8s-app=kube-dns, in
# kube-system), which stay Pending until a pod network exists.
#
# `apply` waits for that, at most TIMEOUT=180 s (image pulls on a lab
# network take a while), and then names the pods that are not running, with
# their state, and where to look.  Nodes that join later get their Flannel
# pod from the DaemonSet; kubeadm-join waits for them to be Ready.
#
# A pod's state is read as kubectl shows it: its init containers first
# (Flannel's install-cni-plugin and install-cni), then its containers; a
# waiting init container shows as Init:REASON.  An image that cannot be
# pulled (ErrImagePull, ImagePullBackOff) is named with the kubelet's
# message; `apply` gives up on it after PULL_GRACE=60 s (the kubelet retries
# with a back-off, but a registry that refuses or does not know the image
# for a minute does not change its mind).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
TIMEOUT=180
PULL_GRACE=60

# "node|pod|phase|ready|init reasons|init messages|reasons|messages" per pod
# of namespace $1 with labels $2 (the reasons of waiting containers).
PODS='jsonpath={range .items[*]}{.spec.nodeName}{"|"}{.metadata.name}{"|"}{.status.phase}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"|"}{.status.initContainerStatuses[*].state.waiting.reason}{"|"}{.status.initContainerStatuses[*].state.waiting.message}{"|"}{.status.containerStatuses[*].state.waiting.reason}{"|"}{.status.containerStatuses[*].state.waiting.message}{"\n"}{end}'

# "STATE[ (MESSAGE)]" of a pod as kubectl shows it, from the fields above.
pod_state() { # PHASE INIT_REASONS INIT_MESSAGES REASONS MESSAGES
	for r in $2; do
		[ "$r" = PodInitializing ] && continue
		echo "Init:$r${3:+ ($3)}"
		return
	done
	for r in $4; do
		echo "$r${5:+ ($5)}"
		return
	done
	echo "$1"
}
pods() {
	$KC -n "$1" get pods -l "$2" -o "$PODS"
}
nodes() {
	$KC get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'
}

# Prints what is not running yet; exit 0 when everything is.
report() {
	# the DaemonSet rolled out as `kubectl rollout status` tells it: its
	# current template's pods on every node it wants (after a replaced
	# DaemonSet, the old pods it adopted are Running and Ready until the
	# controller replaces them).  Read before the pods: a list of pods made
	# earlier than the status may hold only the old, ready pods while the
	# status already counts the new ones (the controller replaced them in
	# between) and both would pass.
	ro=$($KC -n kube-flannel get daemonset kube-flannel-ds -o 'jsonpath={.metadata.generation}|{.status.observedGeneration}|{.status.updatedNumberScheduled}|{.status.desiredNumberScheduled}' 2>/dev/null) || ro=
	fl=$(pods kube-flannel app=flannel) && dn=$(pods kube-system k8s-app=kube-dns) && ns=$(nodes) || return 2
	bad=0
	IFS='|' read -r gen seen updated desired <<-EOT
		$ro
	EOT
	if [ -n "$gen" ] && { [ "${seen:-0}" -lt "$gen" ] || [ "${updated:-0}" -lt "${desired:-0}" ]; }; then
		echo "Flannel's DaemonSet: ${updated:-0} of ${desired:-?} pods of its current template scheduled (generation $gen, seen ${seen:-not yet})"
		bad=1
	fi
	for n in $ns; do
		# every Flannel pod of the node: while a replaced DaemonSet's pod
		# gives way to the new one's, the node has two, and the new one
		# counts (the first line may be the old, ready one)
		line=$(printf '%s\n' "$fl" | awk -F '|' -v n="$n" '$1 == n { l = $0; if ($3 != "Running" || $4 != "True") { print; f = 1; exit } } END { if (!f && l != "") print l }')
		if [ -z "$line" ]; then
			echo "$n: no Flannel pod yet"
			bad=1
			continue
		fi
		IFS='|' read -r _ pod phase ready ireasons imsgs reasons msgs <<-EOT
			$line
		EOT
		if [ "$phase" != Running ] || [ "$ready" != True ]; then
			echo "$n: Flannel pod $pod $(pod_state "$phase" "$ireasons" "$imsgs" "$reasons" "$msgs")"
			bad=1
		fi
	done
	if [ -z "$dn" ]; then
		echo "no CoreDNS pods (k8s-app=kube-dns in kube-system)"
		bad=1
	fi
	dns=$(printf '%s\n' "$dn" | while IFS='|' read -r node pod phase ready ireasons imsgs reasons msgs; do
		[ -n "$pod" ] || continue
		if [ "$phase" != Running ] || [ "$ready" != True ]; then
			echo "CoreDNS pod $pod $(pod_state "$phase" "$ireasons" "$imsgs" "$reasons" "$msgs")${node:+ on $node}"
		fi
	done)
	if [ -n "$dns" ]; then
		printf '%s\n' "$dns"
		bad=1
	fi
	return $bad
}

# pull_hint REPORT: the hint for the first pod of REPORT (report's lines)
# whose image cannot be pulled, naming its node and the image (from the
# kubelet's message: ... image "IMAGE" ...).
pull_hint() {
	l=$(printf '%s\n' "$1" | grep -E 'ErrImagePull|ImagePullBackOff|InvalidImageName|ErrImageNeverPull' | head -n 1)
	img=$(printf '%s\n' "$l" | sed -n 's/.*[Ii]mage \\*"\([^"\\]*\)\\*".*/\1/p' | head -n 1)
	case $l in
	*": Flannel pod "*) on=${l%%: Flannel pod *} ;;
	*" on "*) on=${l##* on } ;;
	*) on="the node of that pod" ;;
	esac
	reg=${img%%/*}
	case $reg in
	*.* | *:*) ;;
	*) reg=docker.io ;;
	esac
	if [ -z "$img" ]; then
		img=IMAGE reg="its registry"
	fi
	pv_hint "$on cannot pull $img: 'crictl pull $img' on $on shows why; $on needs $reg (through cluster.http_proxy), or a registry mirror that holds the image"
}

# No control plane yet (kubeadm-init has not run): nothing to compare with.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	rc=0
	report || rc=$?
	[ "$rc" = 0 ] && echo "Flannel running on every node ($(nodes | wc -l)); CoreDNS running"
	[ "$rc" -le 1 ] || {
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
	}
	exit $rc
	;;
apply)
	start=$(date +%s)
	pull_since=
	while :; do
		rc=0
		last=$(report) || rc=$?
		if [ "$rc" = 0 ]; then
			echo "Flannel and CoreDNS running after $(($(date +%s) - start))s"
			exit 0
		fi
		now=$(date +%s)
		case $last in
		*ErrImagePull* | *ImagePullBackOff* | *InvalidImageName* | *ErrImageNeverPull*) pull_since=${pull_since:-$now} ;;
		*) pull_since= ;;
		esac
		if [ -n "$pull_since" ] && [ $((now - pull_since)) -ge "$PULL_GRACE" ]; then
			printf '%s\n' "$last"
			echo "an image cannot be pulled (for ${PULL_GRACE}s)"
			pull_hint "$last"
			exit 1
		fi
		if [ $((now - start)) -ge "$TIMEOUT" ]; then
			printf '%s\n' "$last"
			echo "not running after ${TIMEOUT}s"
			pod=$(printf '%s\n' "$last" | sed -n 's/^[^ ]*: Flannel pod \([^ ]*\) .*/\1/p' | head -n 1)
			pv_hint "on $PROVISION_NODE: kubectl -n kube-flannel logs ${pod:-POD} (and kubectl -n kube-flannel get pods -o wide); a Flannel pod that crashes usually cannot find the node's interface or its pod CIDR (cluster.pod_cidr)"
			exit 1
		fi
		sleep 3
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
