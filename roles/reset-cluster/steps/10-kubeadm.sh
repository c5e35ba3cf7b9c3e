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

# Several control planes: kubeadm reset leaves the etcd cluster first (it
# removes this node's member, then deletes the data).  etcd_before keeps
# what is needed to see that from another member afterwards: this node's
# member, the others' client URLs, a copy of the etcd client certificate
# (kubeadm reset deletes /etc/kubernetes/pki; the copy is root's, 0700,
# removed at the end).  etcd_after says whether the member is gone from
# the other members' list and removes it through one of them when kubeadm
# only warned.  Nothing when etcd does not answer here (nothing to leave)
# or there is one control plane.
ETCD_PKI='' MINE='' OTHERS=''
etcd_before() {
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	set -- ${PROVISION_CONTROL_PLANES:-}
	[ $# -gt 1 ] || return 1
	case " $* " in *" $PROVISION_NODE="*) ;; *) return 1 ;; esac
	command -v etcdctl >/dev/null 2>&1 && [ -f "$K/pki/etcd/healthcheck-client.key" ] || return 1
	m=$(pv_etcd_members 2>/dev/null) || return 1
	MINE=$(printf '%s\n' "$m" | awk -v n="$PROVISION_NODE" '$2 == n { print $1 }')
	OTHERS=$(printf '%s\n' "$m" | awk -v n="$PROVISION_NODE" '$2 != n && $3 != "-" { sub(/,.*/, "", $3); print $3 }')
	[ -n "$MINE" ] || return 1
	ETCD_PKI=$(mktemp -d)
	cp "$K/pki/etcd/ca.crt" "$K/pki/etcd/healthcheck-client.crt" "$K/pki/etcd/healthcheck-client.key" "$ETCD_PKI/"
}
etcd_after() {
	[ -n "$MINE" ] || return 0
	if [ -z "$OTHERS" ]; then
		echo "etcd: $PROVISION_NODE was its last member; its data is gone with it"
		rm -rf "$ETCD_PKI"
		return 0
	fi
	for url in $OTHERS; do
		if m=$(PV_ETCD_PKI=$ETCD_PKI PV_ETCD_ENDPOINT=$url pv_etcd_members 2>/dev/null); then
			if printf '%s\n' "$m" | awk -v id="$MINE" '$1 == id { f = 1 } END { exit !f }'; then
				echo "etcd: member $PROVISION_NODE ($MINE) still listed after kubeadm reset: etcdctl member remove $MINE through $url"
				PV_ETCD_PKI=$ETCD_PKI PV_ETCD_ENDPOINT=$url pv_etcdctl member remove "$MINE" >/dev/null || true
				m=$(PV_ETCD_PKI=$ETCD_PKI PV_ETCD_ENDPOINT=$url pv_etcd_members 2>/dev/null) || true
			fi
			rm -rf "$ETCD_PKI"
			if printf '%s\n' "$m" | awk -v id="$MINE" '$1 == id { f = 1 } END { exit !f }'; then
				echo "etcd: member $PROVISION_NODE ($MINE) is still listed by $url"
				exit 1
			fi
			echo "etcd: member $PROVISION_NODE ($MINE) removed; members left: $(printf '%s\n' "$m" | awk '{ print $2 }' | sort | paste -sd ' ' -)"
			return 0
		fi
	done
	rm -rf "$ETCD_PKI"
	echo "etcd: no other member answered ($OTHERS): whether $PROVISION_NODE's member is gone is not known"
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
	etcd_before || true
	if command -v kubeadm >/dev/null 2>&1; then
		echo "kubeadm reset -f"
		if ! kubeadm reset -f 2>&1; then
			pv_hint "kubeadm reset -f failed on $PROVISION_NODE: its whole output is in 'provision logs $PROVISION_NODE' ('kubeadm reset -f' there shows it again); run provision reset again once the cause is fixed"
			[ -z "$ETCD_PKI" ] || rm -rf "$ETCD_PKI"
			exit 1
		fi
		etcd_after
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
