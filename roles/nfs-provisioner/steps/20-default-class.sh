# nfs-provisioner 20-default-class: `nfs` is the only StorageClass marked
# default (storageclass.kubernetes.io/is-default-class: "true"); apply
# unmarks the others (they stay, not default).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
ANN=storageclass.kubernetes.io/is-default-class

defaults() {
	$KC get storageclasses -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}{"\n"}{end}' |
		awk -F '|' '$2 == "true" { print $1 }'
}

# No control plane yet (provision plan before the first up): it would change.
if [ ! -f /etc/kubernetes/admin.conf ]; then
	echo "no cluster yet: /etc/kubernetes/admin.conf is missing (roles/kubeadm-init makes it)"
	exit 1
fi
case ${1:-} in
check)
	d=$(defaults) || {
		pv_hint "kubectl cannot reach the API server on $PROVISION_NODE"
		exit 2
	}
	if [ "$d" = nfs ]; then
		echo "default StorageClass: nfs"
		exit 0
	fi
	echo "default StorageClass(es): ${d:-none}; want nfs only"
	printf '%s\n' "$d" | grep -qx nfs ||
		pv_hint "StorageClass nfs comes from the release (storageClass.defaultClass=true): see 'helm get values nfs-subdir-external-provisioner -n nfs-provisioner' on $PROVISION_NODE"
	exit 1
	;;
apply)
	for c in $(defaults); do
		[ "$c" = nfs ] && continue
		$KC annotate --overwrite storageclass "$c" "$ANN=false"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
