#!/bin/sh
# run.sh: beside others (tests/run.sh: a chroot testbed of its own; nothing here times itself tightly)
# run.sh: about 26 s in CI (beside another; tests/run.sh starts the longest first)
# t0510-state: the run record on testbed nodes (nspawn node-1, chroot
# node-2..4; node-3's sudo needs the admin password), with no route from any
# node to anywhere but the testbed bridge:
#
# - three runs (first, no change, one node's file altered by hand):
#   `history` lists three, `diff` of the last two shows exactly the altered
#   file and the step that put it back; `show`, `logs`;
# - an artifact fetched from a loopback HTTP server on this machine (that no
#   node can reach) and pushed to every node over SSH;
# - the lock: a second `up` while one runs stops, naming its pid and start;
# - SIGKILL in the middle of node preparation: the lock is left behind, the
#   next `up` says the run was killed, records its logs, starts from the
#   facts, does not re-apply what the killed run finished, and converges;
# - secrets: a ::secret value (in a log line and a rendered file), a file
#   fetched into private/, and the sudo password never enter the repository
#   (log -p --all, every object, the work tree) nor the support bundle;
# - the ETA: estimates against the real durations of repeated runs.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

CASES="nodes-no-route first-up second-up third-up history diff show-logs lock kill resume secrets bundle eta"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
[ "$(id -u)" = 0 ] || skip_all_cases "needs root (testbed nodes)"
for c in systemd-nspawn dpkg-deb apt-ftparchive gpg timeout python3 git; do
	command -v "$c" >/dev/null 2>&1 || skip_all_cases "needs $c"
done

TESTBED=$SRC_ROOT/tests/testbed/testbed.sh
TB=$TEST_DIR/tb
INV=$TEST_DIR/lab.yaml
STATE=$TEST_DIR/lab.state
ROLES=$TEST_DIR/roles
K8S=1.30.4
export PROVISION_CACHE="$TEST_DIR/cache"
# shellcheck disable=SC2034 # used in the test_case bodies (eval)
# (Not the nfs phase: no NFS in this kernel, and nfs-client sorts before the
# nfs-server it waits for, so whether it waits or skips is a race.)
UP="$PROVISION up -i $INV --roles $ROLES --phases prep,kube-packages --no-tui"

tb() { "$TESTBED" exec "$TB" "$@"; }

if ! "$TESTBED" up "$TB" --nspawn 1 --chroot 3 --sudo-password-nodes node-3 \
	--kubernetes-version "$K8S" >"$TEST_DIR/testbed.log" 2>&1; then
	tail -n 20 "$TEST_DIR/testbed.log" | sed 's/^/# /'
	skip_all_cases "the testbed did not start (see above)"
fi
test_at_exit "'$TESTBED' down '$TB'"
# shellcheck disable=SC1091
. "$TB/testbed.env"
# shellcheck disable=SC1091
. "$TB/sudo.env"
export PROVISION_SUDO_PASSWORD

wait_port() { # LOG SED-EXPR -> prints the port
	i=0
	until [ -f "$1" ] && p=$(sed -n "$2" "$1") && [ -n "$p" ]; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || return 1
		sleep 0.1
	done
	echo "$p"
}

# The fake Kubernetes apt repository on the bridge (as t0200), for 15 minutes at most.
"$SRC_ROOT/tests/fakes/kube-debs/build.sh" "$TEST_DIR/kube" "$K8S" 1.30.5 >"$TEST_DIR/kube.log" 2>&1 || {
	sed 's/^/# /' "$TEST_DIR/kube.log"
	exit 1
}
timeout 900 python3 -u -m http.server --bind "$TESTBED_HOST_ADDR" --directory "$TEST_DIR/kube/repo" 0 \
	>"$TEST_DIR/apt-http.log" 2>&1 &
test_at_exit "kill $!"
apt_port=$(wait_port "$TEST_DIR/apt-http.log" 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p') || exit 1

# The artifact, served on this machine's loopback only: no node can reach it.
mkdir -p "$TEST_DIR/files"
head -c 300000 /dev/urandom >"$TEST_DIR/files/probe.tar"
PROBE_SHA=$(sha256sum <"$TEST_DIR/files/probe.tar" | cut -c1-64)
python3 -u "$SRC_ROOT/tests/tools/artifact-server.py" --dir "$TEST_DIR/files" --lifetime 900 \
	>"$TEST_DIR/artifact-http.log" 2>&1 &
test_at_exit "kill $!"
art_port=$(wait_port "$TEST_DIR/artifact-http.log" 's/^port \([0-9]*\)$/\1/p') || exit 1

# Markers: a token each node hands as ::secret, a private file node-1 hands with ::fetch.
TOKEN=probe-token-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
PRIVATE=probe-private-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
for n in $TESTBED_NODES; do
	printf '%s\n' "$TOKEN" | tb "$n" sh -c 'cat >/root/probe-token'
done
printf 'not a PEM key, just %s\n' "$PRIVATE" | tb node-1 sh -c 'umask 077; cat >/root/probe-private'

# The roles: the node-preparation roles of the tree, and a probe role.
mkdir -p "$ROLES"
for r in lib.sh kubernetes.yaml swap-off kernel containerd-release containerd nvidia kube-packages nfs-server nfs-client; do
	cp -R "$SRC_ROOT/roles/$r" "$ROLES/"
done
mkdir -p "$ROLES/probe/steps" "$ROLES/probe/templates"
cat >"$ROLES/artifacts.yaml" <<EOF
# t0510: one artifact, from this machine's loopback
probe-archive:
  url: http://127.0.0.1:$art_port/probe.tar
  sha256: $PROBE_SHA
  description: an archive a role needs from outside
EOF
# containerd-release's archives (it applies only with containerd: release,
# which this inventory does not say: never fetched here)
sed -n '/^containerd-linux-amd64:$/,$p' "$SRC_ROOT/roles/artifacts.yaml" >>"$ROLES/artifacts.yaml"
cat >"$ROLES/probe/role.yaml" <<'EOF'
description: t0510 probe - a secret, a file that holds it, a fetched private file, an artifact
phase: prep
applies_to: [control-plane, worker]
depends_on: [kernel]
artifacts:
  - name: probe-archive
    dest: /var/lib/provision/probe/probe.tar
    before: 20-use
templates:
  - src: probe.conf.tmpl
    dest: /etc/provision-probe.conf
    mode: "0600"
    before: 20-use
hands:
  - {name: probe_token, secret: true, to: self}
fetches:
  - {name: probe.key, path: /root/probe-private}
EOF
cat >"$ROLES/probe/templates/probe.conf.tmpl" <<'EOF'
# t0510 probe on {{ node.name }}
token = {{ set.probe_token }}
EOF
cat >"$ROLES/probe/steps/10-token.sh" <<'EOF'
# probe 10-token: hands the node's token as a secret, and prints it (redacted).
set -eu
t=$(cat /root/probe-token)
echo "::secret probe_token=$t"
echo "the probe token is $t"
exit 0
EOF
cat >"$ROLES/probe/steps/20-use.sh" <<'EOF'
# probe 20-use: the rendered file holds the token, the artifact is there.
set -eu
case ${1:-} in
check)
	tok=$(pv_secret probe_token)
	[ -n "$tok" ] && [ "$(sed -n 's/^token = //p' /etc/provision-probe.conf)" = "$tok" ] || exit 1
	echo "probe.conf holds $tok"
	sha256sum /var/lib/provision/probe/probe.tar
	if [ "$PROVISION_NODE" = node-1 ]; then
		echo "::fetch /root/probe-private probe.key"
	fi
	exit 0
	;;
apply) exit 0 ;;
esac
EOF

# The admin inventory (sudo; a password on node-3), the mirror and NFS on node-1.
sed -e "s|^  kubernetes_version: .*|&\n  apt_mirror: http://$TESTBED_HOST_ADDR:$apt_port\n  apt_key_fingerprint: $(cat "$TEST_DIR/kube/key.fpr")|" \
	-e 's/roles: \[control-plane\]/roles: [control-plane, nfs-server]/' "$TB/inventory-admin.yaml" >"$INV"
printf 'storage:\n  nfs:\n    server: node-1\n    path: /srv/nfs\n' >>"$INV"

# Only the bridge: each node's default route goes (the node's own network namespace).
for n in $TESTBED_NODES; do
	tb "$n" ip route del default 2>/dev/null || true
done

summary_of() { # RUN KEY
	git -C "$STATE" show "$1:summary" | sed -n "s/^$2: //p"
}

test_case "nodes-no-route: every node routes only the bridge; this machine's addresses beyond it are unreachable" '
	for n in $TESTBED_NODES; do
		expect_eq "" "$(tb "$n" ip route | grep -v "^$TESTBED_SUBNET ")" "$n: routes beyond the bridge"
		if tb "$n" ip route get 1.1.1.1 >route.out 2>&1; then
			cat route.out
			echo "$n has a route to 1.1.1.1"
			false
		fi
		expect_grep "unreachable" route.out
	done
'

test_case "first-up: converges; the artifact from loopback is on every node; private file kept 0600" '
	$UP >up1.out 2>&1 || { cat up1.out; false; }
	expect_grep "^up testbed: no earlier run to estimate the time from" up1.out
	expect_grep "^fetched probe-archive: 293.0 KiB, sha256 verified" up1.out
	for n in $TESTBED_NODES; do
		expect_grep "^$n  *done .* 0 failed" up1.out
		expect_eq "$PROBE_SHA" "$(tb "$n" sha256sum /var/lib/provision/probe/probe.tar | cut -c1-64)" "$n: artifact"
		expect_eq "token = $TOKEN" "$(tb "$n" grep ^token /etc/provision-probe.conf)" "$n: rendered file on the node"
	done
	expect_eq 600 "$(stat -c %a "$STATE/private/probe.key")" "mode of private/probe.key"
	expect_grep "$PRIVATE" "$STATE/private/probe.key"
	expect_grep "^up testbed: recorded as run 1 " up1.out
	expect_eq 1 "$(git -C "$STATE" rev-list --count HEAD)" commits
'

test_case "second-up: nothing changes" '
	$UP >up2.out 2>&1 || { cat up2.out; false; }
	for n in $TESTBED_NODES; do expect_grep "^$n  *done  *0 changed .* 0 failed" up2.out; done
	expect_grep "^up testbed: estimated " up2.out
'

test_case "third-up: a file changed by hand on node-3 is put back" '
	tb node-3 sh -c "echo \"# a local note\" >>/etc/sysctl.d/99-provision-k8s.conf"
	$UP >up3.out 2>&1 || { cat up3.out; false; }
	expect_grep "^\[node-3\] kernel › /etc/sysctl.d/99-provision-k8s.conf … changed" up3.out
	expect_grep "^node-3  *done  *1 changed" up3.out
	for n in node-1 node-2 node-4; do expect_grep "^$n  *done  *0 changed" up3.out; done
	tb node-3 grep -c "a local note" /etc/sysctl.d/99-provision-k8s.conf >n || true
	expect_eq 0 "$(cat n)" "the note on node-3"
'

test_case "history: three runs, newest first, with result and duration" '
	$PROVISION history -i "$INV" >hist
	cat hist
	expect_eq 4 "$(wc -l <hist | tr -d " ")" "lines (header + 3 runs)"
	expect_eq "3 2 1" "$(awk "NR > 1 {print \$1}" hist | paste -sd " ")" "run numbers"
	expect_eq "ok ok ok" "$(awk "NR > 1 {print \$6}" hist | paste -sd " ")" "results"
	expect_eq "up up up" "$(awk "NR > 1 {print \$5}" hist | paste -sd " ")" "commands"
	expect_eq "" "$(awk "NR > 1 && \$7 == \"-\"" hist)" "runs without a duration"
	expect_eq "1 0 4" "$(awk "NR > 1 {print \$10}" hist | paste -sd " ")" "nodes changed"
	git -C "$STATE" log -1 --format=%s >subject
	expect_grep "^up testbed: 4 nodes, 1 changed, 0 failed, [0-9.]*m*[0-9.]*s$" subject
'

test_case "diff: exactly the altered file and the step that put it back" '
	$PROVISION diff -i "$INV" >diff.out
	cat diff.out
	expect_grep "^from run 2 " diff.out
	expect_grep "^  to run 3 " diff.out
	expect_eq "node-3" "$(grep "^[a-z]" diff.out | grep -v "^from\|^  to")" "nodes in the diff"
	expect_eq "  ~ kernel › /etc/sysctl.d/99-provision-k8s.conf: unchanged -> changed" "$(grep "^  [~+-] " diff.out)" "steps in the diff"
	expect_grep "^    | -# a local note$" diff.out
	expect_no_grep "^  rendered \|^  facts:\|^  artifacts:\|^validation\|^inventory" diff.out
	$PROVISION diff -i "$INV" 1 2 >diff12.out
	expect_grep "unchanged\|changed" diff12.out
'

test_case "show-logs: a run and a node log" '
	$PROVISION show -i "$INV" 3 >show.out
	expect_grep "^run 3 " show.out
	expect_grep "^  result: ok" show.out
	expect_grep "^node-3:" show.out
	expect_grep "kernel › /etc/sysctl.d/99-provision-k8s.conf[[:space:]]*changed" show.out
	$PROVISION logs -i "$INV" node-3 >log3
	expect_grep "kernel › /etc/sysctl.d/99-provision-k8s.conf: changed" log3
	expect_grep "kernel › /etc/sysctl.d/99-provision-k8s.conf | -# a local note" log3
	expect_grep "node: done" log3
	$PROVISION logs -i "$INV" node-3 1 >log1
	expect_grep "^# provision up testbed: node node-3" log1
	expect_status 2 $PROVISION logs -i "$INV" node-9 2>err
	expect_grep "has no log of node .node-9." err
'

test_case "lock: a second up while one runs stops, naming its pid and start time" '
	$UP >upA.out 2>&1 &
	pid=$!
	i=0
	until [ -s "$STATE/lock" ]; do i=$((i + 1)); [ $i -lt 100 ]; sleep 0.05; done
	expect_status 3 $UP >upB.out 2>&1
	started=$(sed -n "s/^started=//p" "$STATE/lock")
	expect_grep "another run is using the state folder .*: provision up, pid $pid on .*, started $started" upB.out
	expect_grep "hint: wait for it to end, or stop it first (kill $pid)" upB.out
	wait $pid
	[ ! -e "$STATE/lock" ]
	expect_eq 4 "$(git -C "$STATE" rev-list --count HEAD)" "runs (the refused one is not recorded)"
'

# Undo part of node preparation on every node, so the next up has work in prep.
unprepare() {
	for n in $TESTBED_NODES; do
		tb "$n" rm -f /etc/modules-load.d/provision-k8s.conf /etc/sysctl.d/99-provision-k8s.conf \
			/etc/containerd/config.toml /etc/provision-probe.conf /var/lib/provision/probe/probe.tar || return 1
	done
}

test_case "kill: SIGKILL in the middle of node preparation leaves the lock and partial logs" '
	unprepare
	$UP >upK.out 2>&1 &
	pid=$!
	i=0
	until grep -q "kernel › /etc/sysctl.d/99-provision-k8s.conf: changed" "$STATE/logs/node-2.log" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 600 ] || { cat upK.out; false; }; sleep 0.05
	done
	kill -9 $pid
	wait $pid || true
	expect_eq "$pid" "$(sed -n "s/^pid=//p" "$STATE/lock")" "pid in the lock left behind"
	expect_no_grep "node: done" "$STATE/logs/node-2.log"
	cp "$STATE/logs/node-2.log" killed-node-2.log
'

test_case "resume: the next up says so, records the killed run, re-applies nothing finished, converges" '
	$UP >upR.out 2>&1 || { cat upR.out; false; }
	expect_grep "^provision up: the previous run (up, pid [0-9]* on .*, started .*) did not finish: it was killed; this run starts again from the facts" upR.out
	expect_grep "^provision up: its logs are recorded as run " upR.out
	for n in $TESTBED_NODES; do expect_grep "^$n  *done .* 0 failed" upR.out; done
	$PROVISION history -i "$INV" >hist
	expect_eq "killed" "$(awk "NR == 3 {print \$6}" hist)" "the run before the last"
	expect_eq "ok" "$(awk "NR == 2 {print \$6}" hist)" "the last run"
	# What the killed run changed on node-2 is found as desired and not applied again.
	grep " › .*: changed " killed-node-2.log | sed "s/^ *[0-9.]* \(.*\): changed .*/\1/" >done-steps
	[ -s done-steps ]
	tab=$(printf "\t")
	while IFS= read -r s; do
		grep -qxF "$s${tab}unchanged" "$STATE/nodes/node-2/results" || { echo "$s: not unchanged after the kill"; cat "$STATE/nodes/node-2/results"; false; }
	done <done-steps
	# ... and what it had not reached is done now.
	grep -q "${tab}changed$" "$STATE/nodes/node-2/results"
	for n in $TESTBED_NODES; do
		tb "$n" test -f /etc/containerd/config.toml
		expect_eq "$PROBE_SHA" "$(tb "$n" sha256sum /var/lib/provision/probe/probe.tar | cut -c1-64)" "$n: artifact"
	done
	$UP >upR2.out 2>&1 || { cat upR2.out; false; }
	for n in $TESTBED_NODES; do expect_grep "^$n  *done  *0 changed .* 0 failed" upR2.out; done
'

# grep_secrets WHAT: nothing in WHAT (a file) matches the token, the private marker or the password.
grep_secrets() {
	for m in "$TOKEN" "$PRIVATE" "$PROVISION_SUDO_PASSWORD"; do
		if grep -aF -- "$m" "$1" >/dev/null; then
			echo "a secret marker is in $1:"
			grep -anF -- "$m" "$1" | head -5
			return 1
		fi
	done
}

test_case "secrets: no token, private file or sudo password in the repository, history included" '
	# They did exist: on the nodes, and in private/ on this machine.
	tb node-2 grep -q "$TOKEN" /etc/provision-probe.conf
	grep -q "$PRIVATE" "$STATE/private/probe.key"
	[ ${#PROVISION_SUDO_PASSWORD} -ge 6 ]
	git -C "$STATE" log -p --all >all-history
	[ -s all-history ]
	grep_secrets all-history
	git -C "$STATE" cat-file --batch-all-objects --batch >all-objects
	[ -s all-objects ]
	grep_secrets all-objects
	find "$STATE" -path "$STATE/private" -prune -o -path "$STATE/.git" -prune -o -type f -print >state-files
	while IFS= read -r f; do grep_secrets "$f"; done <state-files
	for f in up1.out up2.out up3.out upR.out; do grep_secrets "$f"; done
	expect_grep "the probe token is \[secret\]" "$STATE/logs/node-2.log"
	git -C "$STATE" show HEAD:nodes/node-2/files/etc/provision-probe.conf >probe.conf
	expect_eq "token = [secret]" "$(grep ^token probe.conf)" "the recorded rendered file"
	git -C "$STATE" ls-tree -r --name-only HEAD >tree
	expect_no_grep "^private\|^lock" tree
	expect_eq "" "$(git -C "$STATE" status --porcelain)" "git status of the state folder"
'

test_case "bundle: inventory, facts, logs, validation of the last run; no secret in it" '
	$PROVISION bundle -i "$INV" -o bundle.tar >bundle.out
	tar -tf bundle.tar >list
	top=$(head -1 list | cut -d/ -f1)
	for f in README summary inventory.yaml nodes/node-1/facts nodes/node-3/results logs/node-4.log; do
		expect_grep "^$top/$f$" list
	done
	expect_no_grep "private\|/files/" list
	grep_secrets bundle.tar
	mkdir -p x && tar -xf bundle.tar -C x
	expect_grep "^command: up$" "x/$top/summary"
'

test_case "eta: estimates against real durations of repeated runs" '
	for i in 1 2 3 4 5 6; do
		$UP >eta$i.out 2>&1 || { cat eta$i.out; false; }
	done
	git -C "$STATE" log --format=%H -6 >ids
	: >eta.txt
	while read -r id; do
		printf "%s %s\n" "$(summary_of "$id" eta_ms)" "$(summary_of "$id" duration_ms)" >>eta.txt
	done <ids
	awk "{ e = (\$2 - \$1) / \$2 * 100; if (e < 0) e = -e; s += e; printf \"# estimated %6d ms, took %6d ms, off by %5.1f%%\\n\", \$1, \$2, e } END { printf \"# mean absolute error %.1f%% over %d runs\\n\", s / NR, NR }" eta.txt | tee eta.report
	expect_eq 6 "$(grep -c "^# estimated" eta.report)" "runs with an estimate"
'
[ -f "$TEST_DIR/eta.report" ] && cat "$TEST_DIR/eta.report"

test_done
