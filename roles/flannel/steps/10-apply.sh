# flannel 10-apply: the cluster holds the objects of the rendered
# /etc/kubernetes/provision-kube-flannel.yml.
#
# `kubectl diff` decides (exit 0: the same, 1: different, more: an error),
# `kubectl apply` makes it so; both with the cluster's admin.conf.
#
# The manifest's objects live in namespace kube-flannel, which the manifest
# itself creates.  On a new cluster that namespace does not exist, and
# `kubectl diff` (a server-side dry run, which creates nothing) fails for
# every object in it: "Error from server (NotFound): namespaces
# "kube-flannel" not found", exit 2.  So `check` asks for the namespace
# first and, when it is missing, says so and leaves the rest to `apply`:
# kubectl apply creates the objects in file order, the Namespace first.
#
# A DaemonSet's selector cannot change once it exists (the API server
# refuses the update: "spec.selector: ... field is immutable"), and
# provision before Flannel v0.28.9 made kube-flannel-ds with the selector
# app=flannel,k8s-app=flannel where Flannel's own manifest has app=flannel.
# So the step compares the live DaemonSet's selector with the manifest's
# first; when they differ, `check` says so and `apply` deletes the
# DaemonSet with --cascade=orphan before applying: its pods keep running
# (and with them the node's pod network), the new DaemonSet adopts them,
# as they carry its labels, and replaces them with pods of its template.
# A second run finds the selectors equal and does nothing of this.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
MANIFEST=/etc/kubernetes/provision-kube-flannel.yml
NS=kube-flannel
DS=kube-flannel-ds
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"

# What went wrong with a kubectl call whose output is $1: a hint.
kubectl_hint() {
	if printf '%s\n' "$1" | grep -Eq 'Unable to connect|connection refused|i/o timeout|deadline exceeded|no route to host|TLS handshake'; then
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE: see the kubeadm-init role's result"
	else
		pv_hint "kubectl $2 failed on $PROVISION_NODE: 'kubectl --kubeconfig=/etc/kubernetes/admin.conf $2' there shows kubectl's error again (the step's whole output: provision logs $PROVISION_NODE)"
	fi
}

# Exit 0: the namespace exists; 1: it does not; 2: kubectl failed ($nsout).
namespace_state() {
	nsout=$($KC get namespace "$NS" -o name 2>&1) && return 0
	case $nsout in
	*NotFound*) return 1 ;;
	esac
	return 2
}

# The selector of the manifest's DaemonSet as kubectl's jsonpath prints
# .spec.selector (JSON, keys sorted): {"matchLabels":{"app":"flannel"}}.
# The manifest is provision's own template, matchLabels only.
manifest_selector() {
	awk '
		/^---/ { ds = 0; sel = 0; ml = 0 }
		/^kind: / { ds = ($2 == "DaemonSet") }
		ds && /^  selector:$/ { sel = 1; next }
		sel && /^    matchLabels:$/ { ml = 1; next }
		sel && ml && /^      [^ ]/ { k = $1; sub(/:$/, "", k); v = $2; gsub(/"/, "", v); print k "=" v; next }
		sel && /^  [^ ]/ { sel = 0; ml = 0 }
	' "$MANIFEST" | sort | awk -F = '
		{ s = s (NR > 1 ? "," : "") "\"" $1 "\":\"" $2 "\"" }
		END { print "{\"matchLabels\":{" s "}}" }
	'
}

# The live DaemonSet's selector in $live (empty: no DaemonSet); exit 2 when
# kubectl failed ($live is then its output).
live_selector() {
	live=$($KC -n "$NS" get daemonset "$DS" --ignore-not-found -o 'jsonpath={.spec.selector}' 2>&1) || return 2
}

# No control plane yet (kubeadm-init has not run): nothing to compare with.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi

case ${1:-} in
check)
	rc=0
	namespace_state || rc=$?
	case $rc in
	1)
		echo "namespace $NS does not exist yet: apply creates it, then the objects in it (kubectl diff cannot compare objects in a missing namespace)"
		exit 1
		;;
	2)
		printf '%s\n' "$nsout" | tail -n 5
		kubectl_hint "$nsout" "get namespace $NS"
		exit 2
		;;
	esac
	want=$(manifest_selector)
	live_selector || {
		printf '%s\n' "$live" | tail -n 5
		kubectl_hint "$live" "get daemonset $DS"
		exit 2
	}
	if [ -n "$live" ] && [ "$live" != "$want" ]; then
		echo "daemonset $DS selects its pods by $live, $MANIFEST by $want"
		echo "a DaemonSet's selector cannot change: apply deletes $DS with --cascade=orphan (its pods keep running) and creates it anew, which adopts and replaces them"
		exit 1
	fi
	out=$($KC diff -f "$MANIFEST" 2>&1) || rc=$?
	case $rc in
	0)
		echo "Flannel applied as in $MANIFEST"
		;;
	1)
		printf '%s\n' "$out" | grep -E '^[-+][^-+]' | head -n 20 || true
		echo "the cluster's Flannel objects differ from $MANIFEST"
		exit 1
		;;
	*)
		printf '%s\n' "$out" | tail -n 5
		kubectl_hint "$out" "diff -f $MANIFEST"
		exit 2
		;;
	esac
	;;
apply)
	rc=0
	namespace_state || rc=$?
	case $rc in
	0) echo "namespace $NS exists" ;;
	1) echo "namespace $NS does not exist: kubectl apply creates it first (the manifest's first object)" ;;
	*)
		printf '%s\n' "$nsout" | tail -n 5
		kubectl_hint "$nsout" "get namespace $NS"
		exit 1
		;;
	esac
	if [ "$rc" = 0 ]; then
		want=$(manifest_selector)
		live_selector || {
			printf '%s\n' "$live" | tail -n 5
			kubectl_hint "$live" "get daemonset $DS"
			exit 1
		}
		if [ -n "$live" ] && [ "$live" != "$want" ]; then
			echo "daemonset $DS selects its pods by $live, $MANIFEST by $want: replacing it, its pods left running"
			if ! $KC -n "$NS" delete daemonset "$DS" --cascade=orphan; then
				pv_hint "kubectl -n $NS delete daemonset $DS --cascade=orphan failed on $PROVISION_NODE (nothing was changed): run it there with --kubeconfig=/etc/kubernetes/admin.conf to see kubectl's error (the step's whole output: provision logs $PROVISION_NODE)"
				exit 1
			fi
		fi
	fi
	if ! $KC apply -f "$MANIFEST"; then
		pv_hint "kubectl apply -f $MANIFEST failed on $PROVISION_NODE: 'kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f $MANIFEST' there shows kubectl's error again (the step's whole output: provision logs $PROVISION_NODE)"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
