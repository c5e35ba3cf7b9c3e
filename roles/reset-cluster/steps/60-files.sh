# reset-cluster 60-files: the files provision wrote for the cluster are
# gone or back as they were: the kubeconfigs (~/.kube/config of root and
# the login user: the original is put back when there was one), the
# rendered kubeadm configuration and manifests in /etc/kubernetes, the
# add-ons' values in /etc/provision, and provision's own records of the
# cluster.  Files of node preparation (fstab, sysctl and module files, the
# containerd configuration, the apt repository, the NFS export) are
# roles/reset-prep's, which --keep-prep skips.  Empty folders kubeadm made
# (/etc/kubernetes/pki, /etc/kubernetes, /var/lib/etcd) go;
# /etc/kubernetes/manifests too once no kubelet package owns it; so do
# provision's empty /etc/provision folders.
#
# The folders provision made for what it installed (pv_managed_dir: the
# hub's database folder, /var/lib/provision/jupyterhub) go with the
# cluster, as kubeadm reset takes etcd's data: only the files provision's
# install writes there are removed, and a folder that holds anything else
# is kept and the step fails, naming it (nothing a person put there is
# lost).  The users' homes are on the NFS export, which reset never
# touches.
#
# kubectl's and helm's cache (k8s.io/cli-runtime: $KUBECACHEDIR, else
# ~/.kube/cache: the API server's discovery, written by every kubectl and
# helm call, provision's as root) goes too, and ~/.kube with it when
# nothing else is left there: a cache of a cluster that is gone.
set -eu
# the home of the user the steps run as (root), where kubectl keeps its cache
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d : -f 6)}

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
	for f in "$PROVISION_STATE_DIR/kubeadm-init.gate" "$PROVISION_STATE_DIR/kubeadm-init.failed" \
		"$PROVISION_STATE_DIR/helm/nfs-trial"; do
		[ ! -e "$f" ] || echo "$f"
	done
}

# kubectl's cache of the API server (see above), of the user the steps run as
kube_cache() {
	c=${KUBECACHEDIR:-$HOME/.kube/cache}
	[ ! -e "$c" ] || echo "$c"
}

FOLDERS="/etc/kubernetes/pki /etc/kubernetes/manifests /etc/kubernetes /var/lib/etcd /etc/provision/jupyterhub /etc/provision/helm /etc/provision $PROVISION_STATE_DIR/helm $PROVISION_STATE_DIR/charts $HOME/.kube"

empty_dirs() {
	for d in $FOLDERS; do
		# The kubelet package owns /etc/kubernetes/manifests: it stays while installed.
		if [ "$d" = /etc/kubernetes/manifests ] && pv_installed kubelet; then
			continue
		fi
		# ~/.kube only when provision's kubeconfig or kubectl's cache was there
		if [ "$d" = "$HOME/.kube" ] && [ -z "${KUBE_DIR_OURS:-}" ]; then
			continue
		fi
		if [ -d "$d" ] && [ -z "$(ls -A "$d")" ]; then
			echo "$d"
		fi
	done
}

case ${1:-} in
check)
	# an empty ~/.kube is left alone: it may have been there before provision
	KUBE_DIR_OURS=
	l=$( (cluster_files; pv_managed_dirs | cut -f 1; records; kube_cache; empty_dirs) | paste -sd ' ' -)
	if [ -z "$l" ]; then
		echo "no cluster file of provision's left"
		exit 0
	fi
	echo "left: $l"
	exit 1
	;;
apply)
	KUBE_DIR_OURS=
	if grep -qx "$HOME/.kube/config" "$PROVISION_STATE_DIR/managed" 2>/dev/null || [ -n "$(kube_cache)" ]; then
		KUBE_DIR_OURS=1
	fi
	list=$(cluster_files)
	printf '%s\n' "$list" | while IFS= read -r f; do
		[ -z "$f" ] || pv_restore "$f"
	done
	rc=0
	kept=
	dirs=$(pv_managed_dirs)
	while IFS='	' read -r d names; do
		[ -n "$d" ] || continue
		set -f
		# shellcheck disable=SC2086 # the names are patterns, one word each
		set -- $names
		set +f
		if ! pv_restore_dir "$d" "$@"; then
			rc=1
			kept="${kept:+$kept }$d"
		fi
	done <<-EOF
		$dirs
	EOF
	for f in $(records); do
		rm -f "$f"
		echo "removed $f"
	done
	c=$(kube_cache)
	if [ -n "$c" ]; then
		rm -rf "$c"
		echo "removed $c (kubectl's and helm's cache of the cluster's API)"
	fi
	# One at a time, in order: a folder may be empty only once the one inside it went.
	for d in $FOLDERS; do
		if printf '%s\n' "$(empty_dirs)" | grep -qxF "$d"; then
			rmdir "$d"
			echo "removed the empty $d"
		fi
	done
	if [ "$rc" != 0 ]; then
		pv_hint "on $PROVISION_NODE, move what is not provision's out of $kept (provision made the folder and removes it with the cluster; it keeps it so as not to lose those files), then run provision reset again"
	fi
	exit $rc
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
