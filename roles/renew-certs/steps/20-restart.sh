# renew-certs 20-restart: the control-plane static pods read their
# certificates when they start, so each is restarted, one at a time, the way
# kubeadm's certificate page says: its manifest moved out of the kubelet's
# manifests folder until the kubelet has stopped the pod, then moved back
# and the pod awaited; after each, this node's API server's /readyz and
# the pod's mirror pod Ready.  Owed when 10-renew
# renewed (its marker); a manifest left outside by an interrupted run is
# put back first.
set -eu
MANIFESTS=/etc/kubernetes/manifests
HELD=/etc/kubernetes/provision-held-manifests
MARK=/var/lib/provision/renew-certs/restart-owed
KC=/etc/kubernetes/admin.conf

# wait SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS
wait_for() {
	n=$1
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 1
	done
}
running() { [ -n "$(crictl ps --name "$1" -q 2>/dev/null)" ]; }
stopped() { ! running "$1"; }
# this node's own API server, https://ADDRESS:PORT from its manifest: with
# several control planes the endpoint in admin.conf answers from any of
# them, and the next pod is restarted only once this one's API is ready
local_api() {
	m=$MANIFESTS/kube-apiserver.yaml
	a=$(sed -n 's/^ *- --advertise-address=//p' "$m" 2>/dev/null | head -n 1)
	p=$(sed -n 's/^ *- --secure-port=//p' "$m" 2>/dev/null | head -n 1)
	echo "https://${a:-$PROVISION_ADDRESS}:${p:-6443}"
}
readyz() { [ "$(kubectl --kubeconfig="$KC" --server="$(local_api)" --request-timeout=5s get --raw /readyz 2>/dev/null)" = ok ]; }
# pod_ready NAME: its mirror pod on this node is Ready (the scheduler and
# the controller manager are not part of /readyz; a check right after
# renew-certs must find them up, as kubeadm-init's 50-stable does)
pod_ready() {
	[ "$(kubectl --kubeconfig="$KC" --request-timeout=5s -n kube-system get pod "$1-$PROVISION_NODE" \
		-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

case ${1:-} in
check)
	rc=0
	if [ -e "$MARK" ]; then
		echo "the control-plane pods still run with the old certificates"
		rc=1
	fi
	for f in "$HELD"/*.yaml; do
		[ -e "$f" ] || continue
		echo "$f is outside $MANIFESTS (an interrupted restart)"
		rc=1
	done
	exit $rc
	;;
apply)
	mkdir -p "$HELD"
	for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
		if [ -f "$HELD/$c.yaml" ] && [ ! -f "$MANIFESTS/$c.yaml" ]; then
			mv "$HELD/$c.yaml" "$MANIFESTS/$c.yaml"
		fi
		[ -f "$MANIFESTS/$c.yaml" ] || continue
		echo "restarting $c"
		mv "$MANIFESTS/$c.yaml" "$HELD/$c.yaml"
		if ! wait_for 120 stopped "$c"; then
			mv "$HELD/$c.yaml" "$MANIFESTS/$c.yaml"
			echo "::hint the kubelet did not stop $c: 'journalctl -u kubelet' on the node"
			exit 1
		fi
		mv "$HELD/$c.yaml" "$MANIFESTS/$c.yaml"
		wait_for 120 running "$c" || {
			echo "::hint $c did not start again: 'crictl ps -a --name $c' on the node"
			exit 1
		}
		wait_for 180 readyz || {
			echo "::hint /readyz did not answer ok after $c restarted"
			exit 1
		}
		wait_for 180 pod_ready "$c" || {
			echo "::hint $c-$PROVISION_NODE is not Ready after its restart: 'kubectl -n kube-system describe pod $c-$PROVISION_NODE'"
			exit 1
		}
		echo "$c running and Ready, /readyz ok"
	done
	rm -f "$MARK"
	rmdir "$HELD" 2>/dev/null || :
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
