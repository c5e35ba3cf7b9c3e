# reset-cluster 10-kubeadm: nothing of kubeadm init/join is left: the
# kubeconfigs, manifests and certificates under /etc/kubernetes, the
# kubelet's state, the local etcd's data.  `kubeadm reset -f` when kubeadm
# is installed; when it is not (its package was removed by hand), its files
# are removed directly, the kubelet's mounts first.
set -eu
K=/etc/kubernetes

left() {
	for f in admin.conf super-admin.conf kubelet.conf bootstrap-kubelet.conf controller-manager.conf scheduler.conf; do
		[ ! -e "$K/$f" ] || echo "$K/$f"
	done
	for d in "$K/manifests" "$K/pki" /var/lib/etcd /var/lib/kubelet; do
		if [ -d "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null)" ]; then
			echo "$d/ (not empty)"
		fi
	done
}

case ${1:-} in
check)
	l=$(left)
	if [ -z "$l" ]; then
		echo "nothing of kubeadm init/join on this node"
		exit 0
	fi
	echo "left by kubeadm init/join:"
	printf '%s\n' "$l"
	exit 1
	;;
apply)
	if command -v kubeadm >/dev/null 2>&1; then
		echo "kubeadm reset -f"
		if ! kubeadm reset -f 2>&1; then
			pv_hint "kubeadm reset -f failed on $PROVISION_NODE: its whole output is in 'provision logs $PROVISION_NODE' ('kubeadm reset -f' there shows it again); run provision reset again once the cause is fixed"
			exit 1
		fi
	else
		echo "kubeadm is not installed: removing what it leaves directly"
		systemctl stop kubelet 2>/dev/null || true
		findmnt -rn -o TARGET | grep '^/var/lib/kubelet/' | sort -r | while IFS= read -r m; do
			umount "$m" || umount -l "$m"
		done
	fi
	# What kubeadm (or a kubeadm without its package) left.
	for f in admin.conf super-admin.conf kubelet.conf bootstrap-kubelet.conf controller-manager.conf scheduler.conf; do
		if [ -e "$K/$f" ]; then
			rm -f "$K/$f"
			echo "removed $K/$f"
		fi
	done
	for d in "$K/manifests" "$K/pki" /var/lib/etcd /var/lib/kubelet; do
		if [ -d "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null)" ]; then
			find "$d" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
			echo "removed the contents of $d"
		fi
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
