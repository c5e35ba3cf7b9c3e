#!/bin/sh
# run.sh: beside others (tests/run.sh: a testbed of its own, mostly waiting)
# run.sh: about 77 s in CI (beside another; tests/run.sh starts the longest first)
# t0460-etcd-backup: `provision backup` and `provision restore` on a REAL
# etcd: Debian's own etcd-server and etcd-client of the node's release
# (bookworm 3.4: etcdctl snapshot save/status/restore; trixie 3.5: etcdutl
# too), fetched once by tests/testbed/etcd-debs.sh and copied into a
# chroot test node (nothing installed on this machine).  etcd runs there
# with the flags of kubeadm's etcd static pod (client and peer TLS, client
# certificate auth) and a PKI made as kubeadm makes it (openssl: an etcd
# CA; server and peer certificates for the node's name, localhost, its
# address, 127.0.0.1 and ::1; the healthcheck-client and
# apiserver-etcd-client certificates; keys 0600).
#
# Keys are written, `provision backup` takes the snapshot, etcd is stopped
# and its data folder and the PKI removed (a reinstalled machine),
# `provision restore --yes` puts them back, etcd is started again as the
# static pod would, and the real etcdctl reads every key back: the count
# and a SHA-256 of all keys and values are the same.  Also: the backup's
# files 0600 and folders 0700 here, the node's copy removed, the run
# record (every blob of every commit) holds no private key and no etcd
# value, cluster.backups_keep keeps the newest N, a backup while etcd is
# down fails the node with the reason and leaves nothing behind, a
# corrupt or truncated snapshot -- or no --yes without a terminal -- is
# refused with exit 2 before the node is reached (no new SSH login), and
# the node refuses to replace the data of a running etcd.
#
# PROVISION_TESTBED_SUITE=trixie runs it on Debian 13 with its etcd 3.5
# (etcdutl for status and restore).  146 s here (bookworm, load average 10-17).
# Also: a snapshot of more than 30 MiB is taken with a bounded peak RSS
# (streamed to disk).
# shellcheck disable=SC2016 # test bodies are single-quoted: lib.sh evaluates them
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$(dirname "$0")/lib-testbed.sh"
# shellcheck source=tests/lib-etcd.sh
. "$(dirname "$0")/lib-etcd.sh"

test_need_root
test_need_cmd openssl apt-get dpkg-deb flock git sha256sum
etcd_debs
tb_up --chroot 1 --nspawn 0
export TB TESTBED
x() { "$TESTBED" exec "$TB" node-1 "$@"; }
ADDR=$(awk '$1 == "node-1" { print $2 }' "$TB/nodes.txt")
STATE=$TEST_DIR/state
BACKUPS=$STATE/private/backups
INV=$TEST_DIR/inv.yaml
sed 's/^  kubernetes_version: .*/&\n  backups_keep: 2/' "$TB_INV" >"$INV"
grep -q "^  backups_keep: 2$" "$INV" || { echo "# cannot write the inventory"; exit 1; }
# shellcheck disable=SC2034 # used in the single-quoted test bodies
P="--state $STATE --no-tui"

for b in etcd etcdctl etcdutl; do
	[ -x "$ETCD/bin/$b" ] || continue
	x sh -c "cat >/usr/local/bin/$b && chmod 0755 /usr/local/bin/$b" <"$ETCD/bin/$b"
done

# The PKI as kubeadm's certs phase makes it.
pki_node_1() {
	san="DNS:node-1,DNS:localhost,IP:$ADDR,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"
	pki_leaf etcd/server etcd/ca /CN=node-1 serverAuth,clientAuth "$san"
	pki_leaf etcd/peer etcd/ca /CN=node-1 serverAuth,clientAuth "$san"
	pki_leaf etcd/healthcheck-client etcd/ca /CN=kube-etcd-healthcheck-client clientAuth
	pki_leaf apiserver-etcd-client etcd/ca /CN=kube-apiserver-etcd-client clientAuth
	openssl genrsa -out sa.key 2048 && openssl rsa -in sa.key -pubout -out sa.pub
}
kubeadm_pki "$TEST_DIR/pki" pki_node_1
put_pki() { tar -C "$TEST_DIR" -cf - pki | x sh -c 'mkdir -p /etc/kubernetes && tar -C /etc/kubernetes -xf -'; }
put_pki

K=/etc/kubernetes/pki
# etcd_start: etcd as kubeadm's static pod runs it (kubeadm phases/etcd/local.go).
etcd_start() {
	x sh -c "etcd --name=node-1 --data-dir=/var/lib/etcd \
		--advertise-client-urls=https://$ADDR:2379 --listen-client-urls=https://127.0.0.1:2379,https://$ADDR:2379 \
		--initial-advertise-peer-urls=https://$ADDR:2380 --listen-peer-urls=https://$ADDR:2380 \
		--initial-cluster=node-1=https://$ADDR:2380 --listen-metrics-urls=http://127.0.0.1:2381 \
		--client-cert-auth=true --trusted-ca-file=$K/etcd/ca.crt --cert-file=$K/etcd/server.crt --key-file=$K/etcd/server.key \
		--peer-client-cert-auth=true --peer-trusted-ca-file=$K/etcd/ca.crt --peer-cert-file=$K/etcd/peer.crt \
		--peer-key-file=$K/etcd/peer.key --snapshot-count=10000 >>/var/log/etcd.log 2>&1 </dev/null & echo \$! >/run/etcd.pid"
	i=0
	until ec endpoint health >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { x tail -n 20 /var/log/etcd.log; return 1; }
		sleep 0.2
	done
}
etcd_stop() {
	x sh -c 'p=$(cat /run/etcd.pid) && kill "$p" && while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; rm -f /run/etcd.pid'
}
ec() {
	x env ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert=$K/etcd/ca.crt \
		--cert=$K/etcd/healthcheck-client.crt --key=$K/etcd/healthcheck-client.key "$@"
}
# What is in etcd: "COUNT SHA256" of every key and value (etcdctl get --prefix).
contents() {
	n=$(ec get "" --prefix --keys-only | grep -c .)
	h=$(ec get "" --prefix | sha256sum | cut -c1-64)
	echo "$n $h"
}
etcd_start || { echo "# etcd does not start on the node"; exit 1; }
# 300 keys (/registry-like names), random values, and one sentinel looked
# for in the record; written in transactions of at most 100 puts (etcd's
# --max-txn-ops is 128), one etcdctl each.
SENTINEL=sentinel-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
i=0
while [ $i -lt 300 ]; do
	if [ $((i % 100)) = 0 ]; then echo >"$TEST_DIR/txn-$((i / 100))"; fi
	echo "put /registry/test/key-$i $(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >>"$TEST_DIR/txn-$((i / 100))"
	i=$((i + 1))
done
echo "put /registry/secrets/default/lab $SENTINEL" >>"$TEST_DIR/txn-2"
for t in "$TEST_DIR"/txn-*; do
	printf '\n\n' >>"$t"
	ec txn --interactive=false <"$t" >"$t.out" || { cat "$t.out"; exit 1; }
	grep -q "^SUCCE" "$t.out" || { cat "$t.out"; exit 1; }
done
BEFORE=$(contents)
echo "# etcd $SUITE ($(x etcd --version | head -n 1)): before the backup: $BEFORE (keys, sha256 of keys and values)"
export BEFORE SENTINEL ADDR

test_case "provision backup: snapshot verified on the node, copied here with the PKI (0600 files, 0700 folders), node copy removed" '
	"$PROVISION" backup -i "$INV" $P >b1.out 2>&1 || { cat b1.out; exit 1; }
	cat b1.out
	expect_grep "etcd-backup › 10-snapshot … changed" b1.out
	expect_grep "^backup: [0-9]\{8\}T[0-9]\{6\}Z: etcd snapshot of node-1, [0-9]* bytes, sha256 [0-9a-f]\{64\}; PKI" b1.out
	id=$(ls "$BACKUPS")
	expect_eq 1 "$(echo "$id" | wc -l)" "backups"
	for f in snapshot.db pki.tar manifest; do
		expect_eq 600 "$(stat -c %a "$BACKUPS/$id/$f")" "mode of $f"
	done
	for d in "$STATE/private" "$BACKUPS" "$BACKUPS/$id"; do
		expect_eq 700 "$(stat -c %a "$d")" "mode of $d"
	done
	stat -c "# %a %n" "$STATE/private" "$BACKUPS" "$BACKUPS/$id" "$BACKUPS/$id"/*
	sum=$(sha256sum <"$BACKUPS/$id/snapshot.db" | cut -c1-64)
	expect_grep "^snapshot.db sha256 $sum bytes $(stat -c %s "$BACKUPS/$id/snapshot.db")\$" "$BACKUPS/$id/manifest"
	expect_grep "$sum" b1.out
	tar -tf "$BACKUPS/$id/pki.tar" >pki.list
	expect_grep "^pki/etcd/ca.key\$" pki.list
	expect_eq "" "$(x ls -A /var/lib/provision/etcd-backup)" "the node'"'"'s copy"
	# the download is the run'"'"'s own work: steps of its node log in the record (issue 35)
	"$PROVISION" logs -i "$INV" --state "$STATE" node-1 >b1.log
	expect_grep "etcd-backup › download snapshot.db: ok" b1.log
	expect_grep "etcd-backup › download pki.tar: ok" b1.log
	expect_grep "etcd-backup › remove the node.s copy: ok" b1.log
'

test_case "the run record notes the backup (id, SHA-256, size) and holds no key material and no etcd value" '
	git -C "$STATE" show HEAD:backup >note
	cat note
	id=$(ls "$BACKUPS" | tail -n 1)
	expect_grep "^id $id\$" note
	expect_grep "^snapshot.db sha256 [0-9a-f]\{64\} bytes [0-9]*\$" note
	git -C "$STATE" log --all -p --format=%H >record.txt
	git -C "$STATE" ls-files >tracked
	expect_no_grep "private" tracked
	expect_no_grep "PRIVATE KEY" record.txt
	expect_no_grep "$SENTINEL" record.txt
	for k in "$TEST_DIR"/pki/etcd/ca.key "$TEST_DIR"/pki/etcd/healthcheck-client.key "$TEST_DIR"/pki/sa.key; do
		sed -n 2p "$k" >keyline
		expect_no_grep "$(cat keyline)" record.txt
	done
	echo "# grep over $(wc -l <record.txt) lines of the record: no PRIVATE KEY, no key line, no etcd value"
'

test_case "backups_keep: 2 keeps the two newest" '
	sleep 1
	"$PROVISION" backup -i "$INV" $P >b2.out 2>&1 || { cat b2.out; exit 1; }
	sleep 1
	first=$(ls "$BACKUPS" | head -n 1)
	"$PROVISION" backup -i "$INV" $P >b3.out 2>&1 || { cat b3.out; exit 1; }
	cat b3.out
	expect_eq 2 "$(ls "$BACKUPS" | wc -l)" "backups kept"
	expect_grep "removed the old backup $first (cluster.backups_keep: 2)" b3.out
	[ ! -e "$BACKUPS/$first" ]
'

test_case "backup while etcd is down: the node fails with the reason, nothing half-written here or there" '
	ls "$BACKUPS" >kept.before
	etcd_stop
	expect_status 1 "$PROVISION" backup -i "$INV" $P >down.out 2>&1
	cat down.out
	expect_grep "etcd at https://127.0.0.1:2379 does not answer: .*unhealthy" down.out
	expect_grep "no backup taken" down.out
	ls -A "$BACKUPS" >kept.after
	expect_eq "$(cat kept.before)" "$(cat kept.after)" "backups after the failure"
	expect_eq "" "$(x ls -A /var/lib/provision/etcd-backup)" "the node'"'"'s folder"
	etcd_start
'

# A copy of the newest backup, spoiled: refused before the node is reached.
spoil() { # spoil NAME: $TEST_DIR/NAME, a copy of the newest backup
	rm -rf "${TEST_DIR:?}/$1"
	cp -a "$BACKUPS/$(cd "$BACKUPS" && printf '%s\n' * | tail -n 1)" "$TEST_DIR/$1"
}
refused() { # refused NAME PATTERN: restore of $TEST_DIR/NAME exits 2 with PATTERN, no login
	l0=$(tb_logins node-1)
	# shellcheck disable=SC2086 # $P: options, one a word
	expect_status 2 "$PROVISION" restore -i "$INV" $P --yes "$TEST_DIR/$1" >"$1.out" 2>&1
	cat "$1.out"
	expect_grep "$2" "$1.out"
	expect_grep "refused before reaching any node: nothing was changed" "$1.out"
	expect_eq "$l0" "$(tb_logins node-1)" "SSH logins on node-1"
	expect_status 1 x test -e /var/lib/provision/etcd-restore
}

test_case "restore of a corrupt or truncated snapshot: refused here (exit 2), the node not reached" '
	spoil corrupt
	printf "\\377\\377\\377\\377" | dd of="$TEST_DIR/corrupt/snapshot.db" bs=1 seek=9000 conv=notrunc 2>/dev/null
	refused corrupt "does not have the SHA-256 the backup recorded"
	spoil truncated
	truncate -s -5000 "$TEST_DIR/truncated/snapshot.db"
	refused truncated "bytes; the backup recorded [0-9]*: truncated or changed"
	# the same with the manifest made to match: etcd'"'"'s own appended hash catches them
	for c in corrupt truncated; do
		s=$(sha256sum <"$TEST_DIR/$c/snapshot.db" | cut -c1-64)
		sed -i "s/^snapshot.db .*/snapshot.db sha256 $s bytes $(stat -c %s "$TEST_DIR/$c/snapshot.db")/" "$TEST_DIR/$c/manifest"
	done
	refused corrupt "corrupt or truncated: the SHA-256 etcd appended does not match"
	refused truncated "truncated or padded: [0-9]* bytes is not whole"
'

test_case "restore without --yes and without a terminal: refused (exit 2), says what it would replace" '
	l0=$(tb_logins node-1)
	expect_status 2 "$PROVISION" restore -i "$INV" $P </dev/null >noyes.out 2>&1
	cat noyes.out
	expect_grep "/etc/kubernetes/pki and /var/lib/etcd are replaced by backup" noyes.out
	expect_grep "not on a terminal" noyes.out
	expect_eq "$l0" "$(tb_logins node-1)" "SSH logins on node-1"
'

test_case "data folder and PKI wiped, provision restore, etcd started again: every key and value back (count and hash)" '
	etcd_stop
	x rm -rf /var/lib/etcd /etc/kubernetes/pki
	"$PROVISION" restore -i "$INV" $P --yes >r.out 2>&1 || { cat r.out; exit 1; }
	cat r.out
	expect_grep "etcd-restore › 10-pki … changed" r.out
	expect_grep "etcd-restore › 20-etcd-data … changed" r.out
	expect_eq 600 "$(x stat -c %a /etc/kubernetes/pki/etcd/ca.key)" "ca.key on the node"
	expect_eq 644 "$(x stat -c %a /etc/kubernetes/pki/etcd/ca.crt)" "ca.crt on the node"
	expect_eq 700 "$(x stat -c %a /var/lib/etcd)" "/var/lib/etcd"
	expect_eq "" "$(x sh -c "ls /var/lib/provision/etcd-restore | grep -v -e \\.restored -e pki.done || true")" "uploads left on the node"
	etcd_start
	after=$(contents)
	echo "# before: $BEFORE"
	echo "# after:  $after"
	expect_eq "$BEFORE" "$after" "keys and values"
	expect_eq "$SENTINEL" "$(ec get /registry/secrets/default/lab --print-value-only)" "the sentinel"
	ec member list >members
	cat members
	expect_grep "node-1, https://$ADDR:2380" members
	# the upload is the run'"'"'s own work too: steps of its node log and its record,
	# before the role'"'"'s (issue 35)
	"$PROVISION" logs -i "$INV" --state "$STATE" node-1 >r1.log
	expect_grep "etcd-restore › upload: ok" r1.log
	expect_grep "etcd-restore › upload snapshot.db: ok" r1.log
	expect_grep "etcd-restore › upload pki.tar: ok" r1.log
	expect_grep "etcd-restore › remove the upload: ok" r1.log
	git -C "$STATE" show HEAD:nodes/node-1/timings >r1.timings
	expect_grep "^etcd-restore	upload snapshot.db	[0-9]*	ok" r1.timings
	up=$(grep -n "etcd-restore › upload pki.tar: ok" r1.log | head -n 1 | cut -d : -f 1)
	role=$(grep -n "etcd-restore › 10-pki" r1.log | head -n 1 | cut -d : -f 1)
	expect_eq yes "$([ "$up" -lt "$role" ] && echo yes)" "the upload before the role'"'"'s steps (lines $up, $role)"
'

test_case "restore again: nothing to do (the steps unchanged)" '
	"$PROVISION" restore -i "$INV" $P --yes >r2.out 2>&1 || { cat r2.out; exit 1; }
	expect_no_grep "… changed" r2.out
'

test_case "restore of the other backup while etcd runs: the node refuses (exit 1), etcd and its data untouched" '
	older=$(cd "$BACKUPS" && printf "%s\n" * | head -n 1)
	expect_status 1 "$PROVISION" restore -i "$INV" $P --yes "$older" >r3.out 2>&1
	cat r3.out
	expect_grep "etcd is running on node-1: its data folder is not replaced under it" r3.out
	expect_eq "$BEFORE" "$(contents)" "keys and values"
	expect_eq "" "$(x sh -c "ls -d /var/lib/etcd.before-restore-* 2>/dev/null || true")" "moved-aside data"
	expect_status 1 x test -e /var/lib/provision/etcd-restore/snapshot.db
'

# Issue 31 F8: the snapshot is streamed to disk, never whole in memory
# (before: read into one buffer, up to etcd's 8 GiB quota, then written).
# 32 values of ~1 MB make a snapshot of more than 30 MiB; provision's peak
# RSS while it takes the backup stays under BACKUP_RSS_MAX_KIB.  The values
# go again afterwards (deleted, compacted, defragmented): the backups after
# this one stay small.
BACKUP_RSS_MAX_KIB=${BACKUP_RSS_MAX_KIB:-24576}
test_case "a 30+ MiB snapshot: provision's peak RSS stays under $((BACKUP_RSS_MAX_KIB / 1024)) MiB (streamed to disk)" '
	[ -x /usr/bin/time ] || { echo "# needs /usr/bin/time (GNU time)"; exit 1; }
	i=0
	while [ $i -lt 32 ]; do
		head -c 750000 /dev/urandom | base64 -w 0 | ec put "/registry/big/value-$i" >/dev/null
		i=$((i + 1))
	done
	sleep 1
	/usr/bin/time -f %M -o big.rss "$PROVISION" backup -i "$INV" $P >big.out 2>&1 ||
		{ cat big.out; exit 1; }
	id=$(ls "$BACKUPS" | tail -n 1)
	size=$(stat -c %s "$BACKUPS/$id/snapshot.db")
	rss=$(tail -n 1 big.rss)
	echo "# snapshot $size bytes, provision'"'"'s peak RSS $rss KiB"
	[ "$size" -gt 31457280 ] || { echo "the snapshot is only $size bytes"; exit 1; }
	[ "$rss" -lt "$BACKUP_RSS_MAX_KIB" ] || { echo "peak RSS $rss KiB >= $BACKUP_RSS_MAX_KIB KiB"; exit 1; }
	expect_grep "^snapshot.db sha256 $(sha256sum <"$BACKUPS/$id/snapshot.db" | cut -c1-64) bytes $size\$" "$BACKUPS/$id/manifest"
	rev=$(ec del /registry/big/ --prefix -w json | sed -n "s/.*\"revision\":\([0-9]*\).*/\1/p")
	ec compaction "$rev" >/dev/null
	ec defrag >/dev/null
'

# provision upgrade asks the control plane's kubectl for the versions first;
# this stand-in answers those two calls (/version, `get nodes -o json`) as
# kubectl 1.30 prints them, the Node cut to what upgrade reads (the
# node has no API server: the upgrade's own stage then fails on the node).
x sh -c 'cat >/usr/local/bin/kubectl && chmod 0755 /usr/local/bin/kubectl' <<'KUBECTL'
#!/bin/sh
case "$*" in
*"get --raw /version"*) printf '{\n  "major": "1",\n  "minor": "30",\n  "gitVersion": "v1.30.4"\n}\n' ;;
*"get nodes -o json"*) printf '{\n    "apiVersion": "v1",\n    "items": [\n        {"kind": "Node", "metadata": {"name": "node-1"}, "status": {"nodeInfo": {"kubeletVersion": "v1.30.4"}}}\n    ],\n    "kind": "List",\n    "metadata": {"resourceVersion": ""}\n}\n' ;;
*) echo "error: the stand-in kubectl of t0460 answers only version and nodes" >&2; exit 1 ;;
esac
KUBECTL
test_case "provision upgrade takes a backup before its first stage, and stops before it when the backup fails" '
	n0=$(cd "$BACKUPS" && printf "%s\n" * | wc -l)
	set +e
	# the stage fails at once: its package mirror refuses connections (the node has no internet)
	sed "s|^  backups_keep: 2\$|&\n  apt_mirror: http://127.0.0.1:9/kubernetes|" "$INV" >up.yaml
	grep -q "apt_mirror" up.yaml
	"$PROVISION" upgrade -i up.yaml $P >u1.out 2>&1
	set -e
	cat u1.out
	expect_grep "^upgrade: an etcd backup first" u1.out
	expect_grep "^backup: [0-9T]*Z: etcd snapshot of node-1" u1.out
	b=$(grep -n "^backup: [0-9T]*Z: etcd snapshot" u1.out | cut -d: -f1)
	s=$(grep -n "^upgrade: the control plane node-1 to 1.30.4" u1.out | cut -d: -f1)
	[ "$b" -lt "$s" ] || { echo "the backup (line $b) is not before the stage (line $s)"; exit 1; }
	expect_eq 2 "$(cd "$BACKUPS" && printf "%s\n" * | wc -l)" "backups kept (backups_keep: 2, $n0 before)"
	etcd_stop
	expect_status 1 "$PROVISION" upgrade -i up.yaml $P >u2.out 2>&1
	cat u2.out
	expect_grep "does not answer" u2.out
	expect_grep "^upgrade: stopped: the backup before the upgrade failed; nothing was upgraded" u2.out
	expect_no_grep "upgrade-control-plane" u2.out
'

etcd_stop >/dev/null 2>&1 || true
test_done
