# nfs-provisioner 10-release: the release nfs-subdir-external-provisioner
# (namespace nfs-provisioner) is deployed from the pushed chart with the
# rendered values.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CHART=/var/lib/provision/charts/nfs-subdir-external-provisioner.tgz
VALUES=/etc/provision/helm/nfs-subdir-external-provisioner.values.yaml

case ${1:-} in
check)
	rc=0
	pv_helm_state nfs-subdir-external-provisioner nfs-provisioner "$CHART" "$VALUES" || rc=$?
	exit $rc
	;;
apply)
	pv_helm_install nfs-subdir-external-provisioner nfs-provisioner "$CHART" "$VALUES" 5m || {
		# pv_helm_install named what the wait waited for when the pods say
		[ -n "${PV_HELM_WHY:-}" ] ||
			pv_hint "the provisioner pod mounts $PROVISION_NFS_ADDRESS:$PROVISION_NFS_PATH: if it stays ContainerCreating, check the export (roles/nfs-server) and 'kubectl -n nfs-provisioner describe pod'"
		exit 1
	}
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
