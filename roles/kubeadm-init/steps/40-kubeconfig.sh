# kubeadm-init 40-kubeconfig: the cluster's admin.conf is root's
# ~/.kube/config and the login user's (the seed's `cp -i
# /etc/kubernetes/admin.conf $HOME/.kube/config` and `chown`), mode 0600,
# and this machine keeps a copy in the cluster's state folder
# (private/admin.conf, mode 0600) for `provision check` and the add-ons.
#
# The login user is the one provision's sudo came from (SUDO_USER); how
# each is written: roles/lib.sh pv_admin_kubeconfig.
set -eu
ADMIN=/etc/kubernetes/admin.conf

case ${1:-} in
check)
	if [ ! -f "$ADMIN" ]; then
		echo "$ADMIN is missing (step 30-init)"
		exit 1
	fi
	echo "::fetch $ADMIN admin.conf"
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
