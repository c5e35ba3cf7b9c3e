#!/bin/sh
# run.sh: beside others (a cluster of its own, mostly waiting on the pulls)
# run.sh: about 185 s in CI (beside another; tests/run.sh starts the longest first)
# t0480-images: the pull phase of issue 32 on two nspawn nodes (node-1 the
# control plane, node-2 a worker), their REAL containerd pulling from REAL
# registries (Debian's docker-registry, tests/registry) on the testbed
# bridge:
#
#  1. Progress: the etcd image is ~1 GB (4 layers of 256 MiB), served by a
#     registry behind tests/tools/throttle.py (40 MB/s for every connection
#     together: a slow lab link), the first mirror of registry.k8s.io
#     (cluster.registries; the testbed's registry the second, for the other
#     images).  The live view at 80x24 (tmux) shows the block "pulling
#     images" with node-1, the image, bytes done of total, the rate and the
#     time left; the record keeps each image's bytes (nodes/NODE/pulls).
#     The image removed, a second `up --no-tui` prints plain progress lines
#     (bytes, rate, time left), says before the pull how long it will take
#     at node-1's earlier rate, and that estimate is within 25 % of the pull
#     step's own time; the step names the registry that answered.
#  2. Failures: node-2's kube-proxy image removed, registry.k8s.io routed to
#     a registry without it (not found), one that wants credentials (401),
#     and one answering 429 with Retry-After: each `up` fails node-2 at the
#     pull step within 30 s, naming the image, the registry and the cause
#     (and the fix).  Before the pull phase nothing pulled ahead: the first
#     wait on such an image was kubeadm's wait-control-plane (4m0s) on the
#     control plane, or a Helm --wait (5m to 20m, roles/*/steps) for an
#     addon's image.  Measured on 2 testbed nodes with NFS storage, the NFS
#     provisioner's image unpullable: a7ff137 (before; the stand-in
#     kubelet's knob image-pull-fail, no real pulls then) failed `up` after
#     5m51s, nfs-provisioner › 10-release failing at 5m01s (helm's --timeout
#     5m) with "Release ... does not exist. Installing it now." and a hint
#     about the NFS export, no image named; main (the testbed's registry
#     without that image) failed it after 72 s, images-addons › 10-pull
#     failing at 1.3s with "cannot pull registry.k8s.io/sig-storage/
#     nfs-subdir-external-provisioner:v4.0.2 from registry.k8s.io (tried
#     198.18.2.1:5000) on node-2: not found".
#     Mirror down: registry.k8s.io's one mirror has nothing listening, the
#     testbed's registry its upstream (server): node-2 pulls from the
#     upstream and the pull step names it ("pulled REF from HOST").
#  3. Offline: `provision fetch --images` stores every image of the list in
#     this machine's cache and lists it; the registries stopped and images
#     removed from node-2, `up` is green, importing what node-2 lacks from
#     the bundle; a second `up` imports nothing.
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="tui-progress record plain-eta not-found unauthorized rate-limited mirror-down fetch-images offline-up offline-again"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
for c in docker-registry tmux curl; do
	command -v $c >/dev/null 2>&1 || skip_all_cases "needs $c (make deps)"
done
K8S=1.36.4
cluster_testbed 2 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
# shellcheck source=tests/lib-tui.sh
. "$SRC_ROOT/tests/lib-tui.sh"
tb() { "$TESTBED" exec "$TB" "$@"; }
exec 3>&1
note() { awk -v l="$1" '{ print "# " l ": " $0 }' "$2" >&3; }
# secs DURATION: seconds of provision's "41.2s", "1m05s", "850ms"
secs() {
	echo "$1" | awk '{ s = $0
		if (s ~ /ms$/) { sub(/ms$/, "", s); print s / 1000; exit }
		if (s ~ /m/) { split(s, a, "m"); sub(/s$/, "", a[2]); print a[1] * 60 + a[2]; exit }
		sub(/s$/, "", s); print s + 0 }'
}

# fits_80x24 SCREEN: at most 24 rows of at most 80 characters (not bytes:
# the view draws with UTF-8 box and dot characters, which mawk counts as 3)
fits_80x24() {
	python3 - "$1" <<-'EOF'
		import sys
		rows = open(sys.argv[1], encoding="utf-8").read().rstrip("\n").split("\n")
		wide = [r for r in rows if len(r) > 80]
		if len(rows) > 24 or wide:
		    sys.exit("%d rows, %d wider than 80: %r" % (len(rows), len(wide), wide[:2]))
	EOF
}

# forget NODE REF [BIG]: REF gone from NODE's containerd, and with BIG its
# large blobs too (over 100 MB: the 1 GB image's layers; removing the image
# record alone kept them, and the next pull took 0 ms)
forget() {
	tb "$1" ctr -n k8s.io images rm --sync "$2" >/dev/null 2>&1 || :
	[ -z "${3:-}" ] && return 0
	for d in $(tb "$1" ctr -n k8s.io content ls |
		awk 'NR > 1 && (($2 ~ /GB$/) || ($2 ~ /MB$/ && $2 + 0 > 100) || ($2 ~ /GiB$/) || ($2 ~ /MiB$/ && $2 + 0 > 100)) { print $1 }'); do
		tb "$1" ctr -n k8s.io content rm "$d" >/dev/null
	done
	tb "$1" ctr -n k8s.io content ls | awk 'NR > 1 && $2 ~ /(GB|GiB)$/ { print "still there: " $0; bad = 1 } END { exit bad }'
}

H=$TESTBED_HOST_ADDR
ETCD=$(cut -f 1 "$TEST_DIR/images.list" | grep '^registry.k8s.io/etcd:' | head -n 1)
PROXY_IMG=registry.k8s.io/kube-proxy:v$K8S
[ -n "$ETCD" ] || skip_all_cases "no etcd image in the list"
BIG=$(registry_images "${ETCD#*/}=256M+256M+256M+256M") || skip_all_cases "the 1 GB image did not build"
registry_start big "$H:15480" --root "$BIG" || skip_all_cases "the big registry did not start"
timeout 1800 python3 -u "$SRC_ROOT/tests/tools/throttle.py" "$H:15481" "$H:15480" 40000000 \
	>"$TEST_DIR/throttle.out" 2>"$TEST_DIR/throttle.log" &
test_at_exit "kill $!"
i=0
until grep -q listening "$TEST_DIR/throttle.out"; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || skip_all_cases "throttle.py did not start"
	sleep 0.1
done

# reg_inv OUT MIRROR...: INV with registry.k8s.io mirrored to MIRROR... only
reg_inv() {
	_out=$1
	shift
	python3 - "$INV" "$_out" "$@" <<-'EOF'
		import re, sys
		src, dst, mirrors = sys.argv[1], sys.argv[2], sys.argv[3:]
		s = open(src).read()
		urls = ", ".join("{url: %s}" % m for m in mirrors)
		s, n = re.subn(r"(?m)^(    registry\.k8s\.io:\n      mirrors: )\[.*\]$", lambda m: m.group(1) + "[" + urls + "]", s)
		assert n == 1, "no registry.k8s.io entry"
		open(dst, "w").write(s)
	EOF
}
reg_inv "$TEST_DIR/slow.yaml" "http://$H:15481" "$REGISTRY"
# shellcheck disable=SC2034 # used in the test bodies
OPTS="--state $STATE --roles $ROLES" # for the test bodies

test_case "tui-progress: the live view at 80x24 shows node-1 pulling the 1 GB image: bytes, rate, time left" '
	run up 80 24 -- up -i "$TEST_DIR/slow.yaml" $OPTS &&
	wait_for up "pulling images" 600 &&
	wait_for up "node-1 .*[0-9.]+ [MG]B/[0-9.]+ [MG]B" 60 &&
	sleep 4 && shot up && cp "$TEST_DIR/up.screen" "$TEST_DIR/tui-pull.screen" &&
	expect_grep "pulling images .\{1,3\} 1 node .\{1,3\} [0-9.]* [kMG]\{0,1\}B/s" "$TEST_DIR/tui-pull.screen" &&
	expect_grep "node-1 .*etcd.* [0-9.]* [MG]B/[0-9.]* GB [0-9.]* [kMG]B/s ~[0-9]" "$TEST_DIR/tui-pull.screen" &&
	fits_80x24 "$TEST_DIR/tui-pull.screen" &&
	expect_eq 0 "$(wait_rc up 900)" "exit status of up"
'
# whatever became of the case, its up ends before the next one uses the state folder
[ -s "$TEST_DIR/up.rc" ] || wait_rc up 900 >/dev/null || :
[ -f "$TEST_DIR/tui-pull.screen" ] && note "80x24 during the pull" "$TEST_DIR/tui-pull.screen"

test_case "record: nodes/node-1/pulls keeps the image'\''s bytes as pulled" '
	git -C "$STATE" show HEAD:nodes/node-1/pulls >pulls
	awk -F "\t" -v r="$ETCD" "\$2 == r && \$3 > 1000000000 && \$5 == \"done\" { f = 1 } END { exit !f }" pulls
'

test_case "plain-eta: a second pull prints bytes and rate, and its estimate is within 25 % of the pull step'\''s time" '
	forget node-1 "$ETCD" big
	$PROVISION up -i "$TEST_DIR/slow.yaml" $OPTS --no-tui >up2.out 2>&1 || { run_tail up2.out; false; }
	grep -E "^\[node-1\] |pull" up2.out | cut -c1-200 >pull.lines
	grep "pulling $ETCD: [0-9.]* [MG]B of [0-9.]* [MG]B, [0-9.]* [kMG]B/s, ~[0-9.ms]* left" up2.out >"$TEST_DIR/plain.lines" ||
		{ echo "no plain progress line of $ETCD; node-1 and the pulls said:"; tail -n 25 pull.lines; false; }
	expect_grep "pulled $ETCD (1\.[0-9]* GB in " up2.out
	grep "node-1 pulls 1 image (1\.[0-9]* GB as last pulled): .* at its earlier pulls'\'' rate" up2.out >"$TEST_DIR/eta.line" ||
		{ echo "no estimate of node-1'\''s pull; node-1 and the pulls said:"; tail -n 25 pull.lines; false; }
	eta=$(secs "$(sed "s/.*as last pulled): \([0-9.ms]*\) at its.*/\1/" "$TEST_DIR/eta.line")")
	took=$(secs "$(sed -n "s/^\[node-1\] images-init › 10-pull … changed \([0-9.ms]*\).*/\1/p" up2.out)")
	echo "estimate $eta s, pull step $took s" >"$TEST_DIR/eta.figures"
	awk -v e="$eta" -v t="$took" "BEGIN { exit !(t > 0 && e >= 0.75 * t && e <= 1.25 * t) }" || { cat "$TEST_DIR/eta.figures"; false; }
	$PROVISION logs -i "$TEST_DIR/slow.yaml" --state $STATE node-1 >logs2
	expect_grep "pulled $ETCD from $H:15481 ([0-9]* bytes)" logs2
'
[ -f "$TEST_DIR/plain.lines" ] && note "plain progress" "$TEST_DIR/plain.lines"
[ -f "$TEST_DIR/eta.line" ] && note "estimate" "$TEST_DIR/eta.line"
[ -f "$TEST_DIR/eta.figures" ] && note "figures" "$TEST_DIR/eta.figures"

# fails NAME INVENTORY CAUSE-REGEX: up fails node-2 at its pull step within
# 30 s, naming the image, the registry and the cause
fails() {
	tb node-2 ctr -n k8s.io images rm --sync "$PROXY_IMG" >/dev/null 2>&1 || :
	t0=$(date +%s)
	if $PROVISION up -i "$2" --state "$STATE" --roles "$ROLES" -l node-2 --no-tui >"$1.out" 2>&1; then
		tail -n 20 "$1.out"
		return 1
	fi
	echo "$(($(date +%s) - t0)) s for the whole up" >"$TEST_DIR/$1.seconds"
	step=$(sed -n "s/^\[node-2\] images-init › 10-pull … failed \([0-9.ms]*\).*/\1/p" "$1.out")
	[ -n "$step" ] || { tail -n 30 "$1.out"; return 1; }
	echo "the pull step failed after $step" >>"$TEST_DIR/$1.seconds"
	awk -v s="$(secs "$step")" "BEGIN { exit !(s <= 30) }"
	grep -E "cannot pull $PROXY_IMG from registry.k8s.io \\(tried $H:[0-9]+\\) on node-2: $3" "$1.out" >"$TEST_DIR/$1.lines" ||
		{ tail -n 30 "$1.out"; return 1; }
	grep "node-2 cannot pull $PROXY_IMG from registry.k8s.io" "$1.out" >>"$TEST_DIR/$1.lines"
}

registry_start empty "$H:15482" || skip_all_cases "the empty registry did not start"
reg_inv "$TEST_DIR/missing.yaml" "http://$H:15482"
test_case "not-found: an image the registry does not have fails node-2 within 30 s, named" '
	fails missing "$TEST_DIR/missing.yaml" "not found"
'
printf 'lab-secret-%s\n' "$$" >"$TEST_DIR/registry.pw"
registry_start auth "$H:15483" --root "$BIG" --htpasswd lab "$TEST_DIR/registry.pw" || skip_all_cases "the auth registry did not start"
reg_inv "$TEST_DIR/auth.yaml" "http://$H:15483"
test_case "unauthorized: a registry answering 401 fails node-2 within 30 s, named" '
	fails unauthorized "$TEST_DIR/auth.yaml" "unauthorized \\(HTTP 401\\)"
'
front_start busy "$H:15484" 429 120 || skip_all_cases "front.py did not start"
reg_inv "$TEST_DIR/busy.yaml" "http://$H:15484"
test_case "rate-limited: a registry answering 429 fails node-2 within 30 s, with its Retry-After" '
	fails busy "$TEST_DIR/busy.yaml" "rate limited \\(HTTP 429 Too Many Requests\\), retry after 120 s"
'
for f in missing unauthorized busy; do
	[ -f "$TEST_DIR/$f.seconds" ] && note "$f" "$TEST_DIR/$f.seconds"
	[ -f "$TEST_DIR/$f.lines" ] && note "$f" "$TEST_DIR/$f.lines"
done

# registry.k8s.io's one mirror down (nothing listens there), the testbed's
# registry its upstream (server, upstream: true)
reg_inv "$TEST_DIR/fallback.yaml" "http://$H:15485"
sed -i "/^    registry\.k8s\.io:\$/,/^      upstream: false\$/s|^      upstream: false\$|      upstream: true\\
      server: $REGISTRY|" "$TEST_DIR/fallback.yaml"
test_case "mirror-down: with registry.k8s.io'\''s mirror down, node-2 pulls from the upstream, and the run says from which" '
	grep -A 3 "^    registry.k8s.io:" "$TEST_DIR/fallback.yaml" >reg.yaml
	expect_grep "server: $REGISTRY\$" reg.yaml
	forget node-2 "$PROXY_IMG"
	$PROVISION up -i "$TEST_DIR/fallback.yaml" --state "$STATE" --roles "$ROLES" -l node-2 --no-tui >fallback.out 2>&1 ||
		{ tail -n 30 fallback.out; false; }
	tb node-2 cat /etc/containerd/certs.d/registry.k8s.io/hosts.toml >hosts.toml
	expect_grep "^\\[host.\"http://$H:15485\"\\]" hosts.toml
	$PROVISION logs -i "$TEST_DIR/fallback.yaml" --state "$STATE" node-2 >fallback.logs 2>&1
	grep "pulled $PROXY_IMG from ${REGISTRY#http://} ([0-9]* bytes)" fallback.logs >"$TEST_DIR/fallback.lines" ||
		{ grep -i pull fallback.logs | tail -n 20; false; }
'
[ -f "$TEST_DIR/fallback.lines" ] && note "mirror down" "$TEST_DIR/fallback.lines"

test_case "fetch-images: every image of the list in this machine's cache, listed, verified" '
	$PROVISION fetch -i "$INV" --roles $ROLES --images >fetch.out 2>&1 || { run_tail fetch.out; false; }
	cut -f 1 "$TEST_DIR/images.list" | sort -u >all
	for ref in $($PROVISION fetch -i "$INV" --roles $ROLES --images --list | cut -f 1 | sort -u); do
		grep -q "^$ref	" fetch.out || { echo "$ref not in the bundle listing"; cat fetch.out; exit 1; }
	done
	cp fetch.out "$TEST_DIR/bundle.list"
'
[ -f "$TEST_DIR/bundle.list" ] && note "bundle" "$TEST_DIR/bundle.list"

test_case "offline-up: the registries stopped, up imports what node-2 lacks from the bundle and is green" '
	registry_stop lab
	registry_stop big
	! curl -s -m 5 -o /dev/null "$REGISTRY/v2/"
	for ref in "$PROXY_IMG" $(cut -f 1 "$TEST_DIR/images.list" | grep "^ghcr.io/flannel-io/"); do
		tb node-2 ctr -n k8s.io images rm --sync "$ref" >/dev/null 2>&1 || :
	done
	$PROVISION up -i "$INV" $OPTS --no-tui >off1.out 2>&1 || { run_tail off1.out; false; }
	grep "^\[node-2\] images-init › import … changed .*imported [0-9]* images\{0,1\} (.*) from this machine.s bundle" off1.out >"$TEST_DIR/import.lines"
	for n in node-1 node-2; do expect_grep "^$n  *done  .* 0 failed" off1.out; done
	tb node-2 ctr -n k8s.io images check >check.out
	expect_grep "^$PROXY_IMG .* complete " check.out
'
[ -f "$TEST_DIR/import.lines" ] && note "import" "$TEST_DIR/import.lines"

test_case "offline-again: a second up imports nothing" '
	$PROVISION up -i "$INV" $OPTS --no-tui >off2.out 2>&1 || { run_tail off2.out; false; }
	expect_no_grep "imported [0-9]" off2.out
	for n in node-1 node-2; do expect_grep "^$n  *done  *0 changed .* 0 failed" off2.out; done
'
test_done
