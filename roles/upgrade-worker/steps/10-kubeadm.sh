# upgrade-worker 10-kubeadm: kubeadm is the target version (held).
set -eu
case ${1:-} in
check) pv_kube_at "$PROVISION_K8S_VERSION" kubeadm ;;
apply) pv_kube_install "$PROVISION_K8S_VERSION" kubeadm ;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
