# etcd-restore 20-etcd-data: /var/lib/etcd holds the backup's snapshot,
# restored as kubeadm's etcd member of this node: name $PROVISION_NODE,
# peer URL https://$PROVISION_ADDRESS:2380 (kubeadm's --name,
# --initial-advertise-peer-urls and --initial-cluster of the etcd static
# pod).  `etcdutl snapshot restore` (etcd 3.5+), else `etcdctl snapshot
# restore` (3.4); either checks the hash etcd appended to the snapshot.
# It restores into a fresh folder beside /var/lib/etcd, which replaces
# it only when complete; a non-empty /var/lib/etcd is moved aside.  The
# uploaded snapshot and PKI archive are removed afterwards (they hold the
# cluster's secrets).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
R=$PROVISION_STATE_DIR/etcd-restore
SNAP=$R/snapshot.db
DATA=/var/lib/etcd
ID=${PROVISION_RESTORE_ID:-}

case ${1:-} in
check)
	[ -n "$ID" ] && [ -f "$R/$ID.restored" ] && [ -d "$DATA/member" ] || exit 1
	;;
apply)
	[ -f "$SNAP" ] || {
		echo "no snapshot uploaded to $SNAP"
		exit 1
	}
	# Never under a running etcd: its data would change beneath it.
	if pgrep -x etcd >/dev/null 2>&1; then
		pv_hint "stop etcd on $PROVISION_NODE first: move /etc/kubernetes/manifests/etcd.yaml out of that folder (the kubelet stops the pod), then run provision restore again"
		echo "etcd is running on $PROVISION_NODE: its data folder is not replaced under it"
		exit 1
	fi
	peer=https://$PROVISION_ADDRESS:2380
	tmp=$DATA.restore-tmp
	rm -rf "$tmp"
	if command -v etcdutl >/dev/null 2>&1; then
		set -- etcdutl
	elif command -v etcdctl >/dev/null 2>&1; then
		set -- env ETCDCTL_API=3 etcdctl
	else
		pv_hint "install etcdctl on $PROVISION_NODE (Debian: apt-get install etcd-client; etcdutl from etcd 3.5 on)"
		echo "neither etcdutl nor etcdctl is on $PROVISION_NODE: the snapshot is restored with one of them"
		exit 1
	fi
	if ! out=$("$@" snapshot restore "$SNAP" --name "$PROVISION_NODE" \
		--initial-cluster "$PROVISION_NODE=$peer" --initial-advertise-peer-urls "$peer" \
		--data-dir "$tmp" 2>&1); then
		rm -rf "$tmp"
		echo "$* snapshot restore failed: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' ' ')"
		exit 1
	fi
	if [ -d "$DATA" ] && [ -n "$(ls -A "$DATA")" ]; then
		old=$DATA.before-restore-$(date -u +%Y%m%dT%H%M%SZ)
		mv "$DATA" "$old"
		echo "the etcd data that was there: moved to $old"
	fi
	rm -rf "$DATA"
	mv "$tmp" "$DATA"
	chmod 0700 "$DATA"
	sync
	rm -f "$SNAP" "$R/pki.tar" "$R"/*.restored
	: >"$R/pki.done"
	: >"$R/$ID.restored"
	echo "etcd data restored into $DATA: member $PROVISION_NODE, peer URL $peer ($1)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
