# gpu-operator 10-release: the release gpu-operator (namespace gpu-operator)
# is deployed from the pushed chart with the rendered values.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CHART=/var/lib/provision/charts/gpu-operator.tgz
VALUES=/etc/provision/helm/gpu-operator.values.yaml

case ${1:-} in
check)
	if [ -z "${PROVISION_GPU_NODES:-}" ]; then
		pv_skip "no GPU node in the cluster (no NVIDIA device in any node's facts): the GPU Operator has nothing to run on"
		exit 0
	fi
	echo "GPU nodes: $PROVISION_GPU_NODES; driver.enabled $(sed -n '/^driver:/,/^[a-z]/s/^  enabled: //p' "$VALUES")"
	rc=0
	pv_helm_state gpu-operator gpu-operator "$CHART" "$VALUES" || rc=$?
	exit $rc
	;;
apply)
	pv_helm_install gpu-operator gpu-operator "$CHART" "$VALUES" 15m
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
