# upgrade-worker 30-kubelet: kubelet and kubectl at the target version
# (held) and the kubelet restarted since (provision notes the version it
# restarted the kubelet for; roles/upgrade-uncordon then checks, from the
# API, that the node reports that version).
set -eu
V=$PROVISION_K8S_VERSION
NOTE=$PROVISION_STATE_DIR/kubelet-restarted-for

case ${1:-} in
check)
	rc=0
	pv_kube_at "$V" kubelet kubectl || rc=1
	a=$(systemctl is-active kubelet 2>/dev/null || true)
	echo "kubelet.service: $a, restarted for $(cat "$NOTE" 2>/dev/null || echo '(none)')"
	[ "$a" = active ] || rc=1
	[ "$(cat "$NOTE" 2>/dev/null || true)" = "$V" ] || rc=1
	exit $rc
	;;
apply)
	pv_kube_install "$V" kubelet kubectl
	systemctl daemon-reload
	echo "systemctl restart kubelet"
	systemctl restart kubelet
	mkdir -p "$PROVISION_STATE_DIR"
	echo "$V" >"$NOTE"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
