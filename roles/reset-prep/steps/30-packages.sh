# reset-prep 30-packages: the packages provision installed (noted by
# pv_installing when apt-get added them: containerd, kubeadm, kubelet,
# kubectl and their dependencies, conntrack, the NFS packages) are purged,
# held ones unheld first.  Packages that were on the node before provision
# were never noted and stay.
set -eu
LIST=$PROVISION_STATE_DIR/packages

installed_noted() {
	[ -s "$LIST" ] || return 0
	while IFS= read -r p; do
		if [ -n "$p" ] && pv_installed "$p"; then
			echo "$p"
		fi
	done <"$LIST"
}

case ${1:-} in
check)
	l=$(installed_noted | paste -sd ' ' -)
	if [ -z "$l" ]; then
		echo "no package installed by provision left"
		[ ! -e "$LIST" ] || exit 1
		exit 0
	fi
	echo "installed by provision: $l"
	exit 1
	;;
apply)
	# shellcheck disable=SC2046 # package names are single words
	set -- $(installed_noted)
	if [ $# -gt 0 ]; then
		held=$(apt-mark showhold "$@" 2>/dev/null || true)
		# shellcheck disable=SC2086 # package names are single words
		[ -z "$held" ] || apt-mark unhold $held
		echo "apt-get purge $*"
		if ! pv_apt_get purge -y --allow-change-held-packages "$@"; then
			pv_hint "apt-get purge $* failed on $PROVISION_NODE: apt's whole output is in 'provision logs $PROVISION_NODE'; an interrupted dpkg is repaired with 'dpkg --configure -a' there, then run provision reset again"
			exit 1
		fi
	fi
	rm -f "$LIST"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
