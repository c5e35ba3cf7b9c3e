# flannel 20-running: every node of the cluster has a Flannel pod that is
# Running and ready, and so are the CoreDNS pods (k8s-app=kube-dns, in
# kube-system), which stay Pending until a pod network exists.
#
# `apply` waits for that, at most TIMEOUT=180 s (image pulls on a lab
# network take a while), and then names the pods that are not running, with
# their state, and where to look.  Nodes that join later get their Flannel
# pod from the DaemonSet; kubeadm-join waits for them to be Ready.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
TIMEOUT=180

# "node|pod|phase|ready|reason" per pod of namespace $1 with labels $2.
PODS='jsonpath={range .items[*]}{.spec.nodeName}{"|"}{.metadata.name}{"|"}{.status.phase}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"|"}{.status.containerStatuses[0].state.waiting.reason}{"\n"}{end}'
pods() {
	$KC -n "$1" get pods -l "$2" -o "$PODS"
}
nodes() {
	$KC get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'
}

# Prints what is not running yet; exit 0 when everything is.
report() {
	fl=$(pods kube-flannel app=flannel) && dn=$(pods kube-system k8s-app=kube-dns) && ns=$(nodes) || return 2
	bad=0
	for n in $ns; do
		line=$(printf '%s\n' "$fl" | awk -F '|' -v n="$n" '$1 == n' | head -n 1)
		if [ -z "$line" ]; then
			echo "$n: no Flannel pod yet"
			bad=1
			continue
		fi
		IFS='|' read -r _ pod phase ready reason <<-EOT
			$line
		EOT
		if [ "$phase" != Running ] || [ "$ready" != True ]; then
			echo "$n: Flannel pod $pod ${reason:-$phase}"
			bad=1
		fi
	done
	if [ -z "$dn" ]; then
		echo "no CoreDNS pods (k8s-app=kube-dns in kube-system)"
		bad=1
	fi
	printf '%s\n' "$dn" | while IFS='|' read -r node pod phase ready reason; do
		[ -n "$pod" ] || continue
		if [ "$phase" != Running ] || [ "$ready" != True ]; then
			echo "CoreDNS pod $pod ${reason:-$phase}${node:+ on $node}"
		fi
	done | grep . && bad=1
	return $bad
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
	while :; do
		rc=0
		last=$(report) || rc=$?
		if [ "$rc" = 0 ]; then
			echo "Flannel and CoreDNS running after $(($(date +%s) - start))s"
			exit 0
		fi
		if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
			printf '%s\n' "$last"
			echo "not running after ${TIMEOUT}s"
			pv_hint "kubectl -n kube-flannel get pods -o wide and kubectl -n kube-flannel logs POD on $PROVISION_NODE; a Flannel pod that crashes usually cannot find the node's interface or its pod CIDR (cluster.pod_cidr)"
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
