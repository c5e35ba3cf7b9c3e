# etcd-backup 10-snapshot: $D/$PROVISION_BACKUP_ID.db is a verified
# snapshot of this node's etcd and $D/$PROVISION_BACKUP_ID.pki.tar its
# /etc/kubernetes/pki.
#
# `etcdctl snapshot save` writes NAME.part and renames it when the stream
# is complete; its hash (etcd appends a SHA-256 of the database) is then
# read back by `etcdutl snapshot status` (etcd 3.5+; etcdctl's own status
# is deprecated there) or `etcdctl snapshot status` (3.4).  The files are
# root's (umask 077, folder 0700): they hold every Secret of the cluster.
# Nothing of etcd's data is printed: only its revision, key count and size.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
D=$PROVISION_STATE_DIR/etcd-backup
PKI=/etc/kubernetes/pki
ENDPOINT=https://127.0.0.1:2379
ID=${PROVISION_BACKUP_ID:-}

case $ID in
'' | *[!0-9TZ-]*)
	echo "no backup id from provision (PROVISION_BACKUP_ID='$ID')" >&2
	exit 2
	;;
esac

status() { # FILE -> "revision R, N keys, S bytes" or fails
	if command -v etcdutl >/dev/null 2>&1; then
		etcdutl snapshot status "$1" -w json 2>&1
	else
		ETCDCTL_API=3 etcdctl snapshot status "$1" -w json 2>&1
	fi | sed -n 's/.*"revision":\([0-9]*\),"totalKey":\([0-9]*\),"totalSize":\([0-9]*\).*/revision \1, \2 keys, \3 bytes/p' | grep .
}

case ${1:-} in
check)
	[ -f "$D/$ID.ok" ] && [ -f "$D/$ID.db" ] && [ -f "$D/$ID.pki.tar" ] || exit 1
	status "$D/$ID.db" >/dev/null || exit 1
	;;
apply)
	if ! command -v etcdctl >/dev/null 2>&1; then
		pv_hint "install etcdctl on $PROVISION_NODE (Debian: apt-get install etcd-client; or etcdctl from etcd's release archive of the cluster's etcd version)"
		echo "etcdctl is not on $PROVISION_NODE: the snapshot is taken with it"
		exit 1
	fi
	cert=
	for c in "$PKI/etcd/healthcheck-client" "$PKI/apiserver-etcd-client"; do
		if [ -f "$c.crt" ] && [ -f "$c.key" ]; then
			cert=$c
			break
		fi
	done
	if [ -z "$cert" ] || [ ! -f "$PKI/etcd/ca.crt" ]; then
		pv_hint "is $PROVISION_NODE a kubeadm control plane? kubeadm writes them under $PKI"
		echo "no etcd client certificate on $PROVISION_NODE ($PKI/etcd/healthcheck-client.crt or $PKI/apiserver-etcd-client.crt, and $PKI/etcd/ca.crt)"
		exit 1
	fi
	umask 077
	mkdir -p "$D"
	chmod 0700 "$D"
	# What an earlier, interrupted backup left (provision removes a copied one).
	rm -f "$D"/*.part "$D"/*.db "$D"/*.tar "$D"/*.ok
	ec() {
		ETCDCTL_API=3 etcdctl --endpoints="$ENDPOINT" --cacert="$PKI/etcd/ca.crt" \
			--cert="$cert.crt" --key="$cert.key" --dial-timeout=5s "$@"
	}
	# etcdctl's snapshot save waits for a connection until its command
	# timeout: a down etcd is found first, in seconds, with etcd's words.
	if ! out=$(ec --command-timeout=10s endpoint health 2>&1); then
		pv_hint "is etcd running on $PROVISION_NODE? 'crictl ps -a --name etcd' and its logs there; port 2379"
		echo "etcd at $ENDPOINT does not answer: $(printf '%s\n' "$out" | grep -v '^{' | head -n 2 | tr '\n' ' ')"
		exit 1
	fi
	if ! out=$(ec --command-timeout=1800s snapshot save "$D/$ID.db" 2>&1); then
		rm -f "$D/$ID.db" "$D/$ID.db.part"
		pv_hint "is etcd running on $PROVISION_NODE? 'crictl ps -a --name etcd' and its logs there; port 2379"
		echo "etcd at $ENDPOINT did not give a snapshot: $(printf '%s\n' "$out" | grep -v '^{' | tail -n 3 | tr '\n' ' ')"
		exit 1
	fi
	if ! st=$(status "$D/$ID.db"); then
		rm -f "$D/$ID.db"
		echo "the snapshot etcd gave does not verify (snapshot status failed)"
		exit 1
	fi
	tar -C /etc/kubernetes -cf "$D/$ID.pki.tar" pki
	sync
	: >"$D/$ID.ok"
	echo "snapshot $ID: $st (etcd at $ENDPOINT, client certificate $(basename "$cert"))"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
