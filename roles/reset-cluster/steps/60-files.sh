# reset-cluster 60-files: the files provision wrote for the cluster are
# gone or back as they were: the kubeconfigs (~/.kube/config of root and
# the login user: the original is put back when there was one), the
# rendered kubeadm configuration and manifests in /etc/kubernetes, and
# provision's own records of the cluster.  Files of node preparation
# (fstab, sysctl and module files, the containerd configuration, the apt
# repository, the NFS export) are roles/reset-prep's, which --keep-prep
# skips.  Empty folders kubeadm made (/etc/kubernetes/pki, /etc/kubernetes,
# /var/lib/etcd) go; /etc/kubernetes/manifests too once no kubelet package owns it.
set -eu

prep_file() {
	case $1 in
	/etc/fstab | /etc/systemd/* | /etc/modules-load.d/* | /etc/sysctl.d/* | /etc/containerd/* | /etc/apt/* | /etc/exports | /etc/exports.d/*) return 0 ;;
	esac
	return 1
}

cluster_files() {
	pv_managed_files | while IFS= read -r f; do
		prep_file "$f" || echo "$f"
	done
}

records() {
	f=$PROVISION_STATE_DIR/kubeadm-init.gate
	[ ! -e "$f" ] || echo "$f"
}

empty_dirs() {
	for d in /etc/kubernetes/pki /etc/kubernetes/manifests /etc/kubernetes /var/lib/etcd; do
		# The kubelet package owns /etc/kubernetes/manifests: it stays while installed.
		if [ "$d" = /etc/kubernetes/manifests ] && pv_installed kubelet; then
			continue
		fi
		if [ -d "$d" ] && [ -z "$(ls -A "$d")" ]; then
			echo "$d"
		fi
	done
}

case ${1:-} in
check)
	l=$( (cluster_files; records; empty_dirs) | paste -sd ' ' -)
	if [ -z "$l" ]; then
		echo "no cluster file of provision's left"
		exit 0
	fi
	echo "left: $l"
	exit 1
	;;
apply)
	list=$(cluster_files)
	printf '%s\n' "$list" | while IFS= read -r f; do
		[ -z "$f" ] || pv_restore "$f"
	done
	for f in $(records); do
		rm -f "$f"
		echo "removed $f"
	done
	# One at a time, in order: a folder may be empty only once the one inside it went.
	for d in /etc/kubernetes/pki /etc/kubernetes/manifests /etc/kubernetes /var/lib/etcd; do
		if printf '%s\n' "$(empty_dirs)" | grep -qxF "$d"; then
			rmdir "$d"
			echo "removed the empty $d"
		fi
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
