# renew-certs 30-kubeconfig: the renewed admin.conf is again root's and the
# login user's ~/.kube/config, mode 0600 (this machine's copy in the state
# folder, private/admin.conf, is not fetched: see role.yaml), written as
# roles/kubeadm-init 40-kubeconfig writes it (roles/lib.sh
# pv_admin_kubeconfig: the login user's written by that user, the old file
# kept in the backup folder).
set -eu
ADMIN=/etc/kubernetes/admin.conf

case ${1:-} in
check)
	if [ ! -f "$ADMIN" ]; then
		echo "$ADMIN is missing: no cluster here (provision up)"
		exit 1
	fi
	pv_admin_kubeconfig check "$ADMIN"
	;;
apply)
	pv_admin_kubeconfig apply "$ADMIN"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
