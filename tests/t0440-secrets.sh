#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 370 s in CI (beside another; tests/run.sh starts the longest first)
# t0440-secrets: no secret in any file, log, output or on the screen after a
# whole cluster's life on three nspawn testbed nodes with the Kubernetes
# stand-ins (tests/fakes): `up` of node-1 (control plane) and node-2 in
# the terminal view, `add-node node-3` in the terminal view, then `check`,
# `show`, `logs`, `history` and `bundle`.
#
# The secrets, set to known values or learnt from where they live:
#   - the sudo password: every node's admin needs one (testbed
#     --sudo-password-nodes); it is set to a marker string on each node and
#     given to provision through the inventory's ssh.sudo_password_file;
#   - every bootstrap (join) token the fake API server stored (knob
#     record-tokens) and its secret half;
#   - three base64 lines of each CA key and the service-account key.
# (The hub is off here: its secrets are grepped for by t0435-hub, which runs it.)
# Then every file under this test's folder -- provision's state folder and
# its logs and records, every output of every command, the byte streams the
# terminal received (script(1) between tmux and provision), the final
# screens, the extracted bundle, the nodes' kubelet journals and pod logs,
# and every node's sshd log -- is grepped for every secret: zero hits.
# Controls: the marker is found in the password file (the grep works), the
# sudo password was needed (without it `run --sudo` fails), tokens were made.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="up-in-terminal add-node-in-terminal check-show-logs-bundle password-needed no-secrets"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
test_need_cmd tmux script jq
K8S=1.30.4
cluster_testbed 3 "$K8S" --sudo-password-nodes 1,2,3 || skip_all_cases "$CLUSTER_SKIP"
# The binary under test as built (it finds the roles beside it), before
# lib-tui.sh puts a copy in PROVISION for the terminal runs.
PV=$PROVISION
# shellcheck source=tests/lib-tui.sh
. "$SRC_ROOT/tests/lib-tui.sh"

tb() { "$TESTBED" exec "$TB" "$@"; }
knob node-1 record-tokens

# The sudo password: a marker, on every node, in a file only the inventory names.
read -r uuid </proc/sys/kernel/random/uuid
MARK=pvSECRETsudo${uuid#*-}
MARK=$(printf '%s' "$MARK" | tr -d -)
umask 077
printf '%s\n' "$MARK" >"$TEST_DIR/secrets.list.password"
chmod 600 "$TEST_DIR/secrets.list.password" # provision refuses one others can read
umask 022
for n in $TESTBED_NODES; do
	printf 'admin:%s\n' "$MARK" | tb "$n" chpasswd
done
STATE=$TEST_DIR/state
FULL=$TEST_DIR/cluster.yaml
sed "s|^  sudo: auto\$|  sudo: auto\n  sudo_password_file: $TEST_DIR/secrets.list.password|" "$INV_ADMIN" >"$FULL"
grep -q '^  sudo_password_file: ' "$FULL" || { echo "# no sudo_password_file in $FULL"; exit 1; }
# The same cluster before node-3 was added.
TWO=$TEST_DIR/cluster-two.yaml
awk '/^  - name: node-3$/ { skip = 1; next } skip && /^    / { next } { skip = 0; print }' "$FULL" >"$TWO"
grep -q 'node-3' "$TWO" && { echo "# node-3 still in $TWO"; exit 1; }

# The terminal: provision under script(1), so that every byte it writes to
# the terminal lands in NAME.typescript, inside a tmux pane (lib-tui.sh).
REAL=$PROVISION
PROVISION=$TEST_DIR/pvterm
cat >"$PROVISION" <<EOF
#!/bin/sh
# provision ARGS with every byte it writes to the terminal in \$CAPTURE.
exec script -q -e -f -c "$REAL \$*" "\$CAPTURE"
EOF
chmod +x "$PROVISION"

# term NAME SECONDS ARGS...: provision ARGS in a 120x40 terminal until it
# exits (a view that stays, Finished, gets a look at the first node's log
# and q); its exit status on stdout; the last screen in NAME.screen.
term() {
	name=$1 secs=$2
	shift 2
	run "$name" 120 40 "CAPTURE=$TEST_DIR/$name.typescript" -- "$@"
	deadline=$(($(date +%s) + secs))
	until [ -s "$TEST_DIR/$name.rc" ]; do
		shot "$name"
		if grep -q ' Finished: ' "$TEST_DIR/$name.screen"; then
			cp "$TEST_DIR/$name.screen" "$TEST_DIR/$name.finished.screen"
			keys "$name" Enter
			sleep 1
			shot "$name"
			cp "$TEST_DIR/$name.screen" "$TEST_DIR/$name.log.screen"
			keys "$name" Escape
			sleep 0.5
			keys "$name" q
			wait_rc "$name" 30 >/dev/null || return 1
			break
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "$name: not finished within $secs s" >&2
			sed 's/^/| /' "$TEST_DIR/$name.screen" >&2
			return 1
		fi
		sleep 1
	done
	wait_for "$name" '^--- pane done ---' >/dev/null || return 1
	cat "$TEST_DIR/$name.rc"
}

test_case "up of node-1 and node-2 in the terminal view: exit 0" "
	rc=\$(term up 1200 up -i $TWO --state $STATE --roles $ROLES) &&
	sed 's/^/| /' up.screen &&
	expect_eq 0 \"\$rc\" 'exit status' &&
	expect_grep '^node-1  done ' up.screen &&
	expect_grep '^node-2  done ' up.screen
"

test_case "add-node node-3 in the terminal view: exit 0, node-3 joined" "
	rc=\$(term add 1200 add-node -i $FULL --state $STATE --roles $ROLES node-3) &&
	sed 's/^/| /' add.screen &&
	expect_eq 0 \"\$rc\" 'exit status' &&
	expect_grep '^node-3  done ' add.screen &&
	tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf get node node-3 -o name >n3 &&
	expect_grep '^node/node-3\$' n3
"

test_case "show, logs, bundle of the add-node run (the bundle extracted), then check (text and JSON), history" "
	$PV show -i $FULL --state $STATE >show.out 2>&1 &&
	for n in node-1 node-2 node-3; do $PV logs -i $FULL --state $STATE \$n >logs.\$n.out 2>&1; done &&
	expect_grep 'join-tokens' logs.node-1.out &&
	expect_grep 'kubeadm-join' logs.node-3.out &&
	$PV bundle -i $FULL --state $STATE -o bundle.tar >bundle.out 2>&1 &&
	mkdir bundle && tar -xf bundle.tar -C bundle &&
	find bundle -type f | grep -q . &&
	$PV check -i $FULL --state $STATE --roles $ROLES >check.out 2>&1 &&
	$PV check -i $FULL --state $STATE --roles $ROLES -o json >check.json 2>check.err &&
	$PV history -i $FULL --state $STATE >history.out 2>&1
"

test_case "the sudo password was needed: run --sudo without it fails, with it works" "
	sed '/^  sudo_password_file: /d' $FULL >nopw.yaml &&
	expect_status 1 env -u PROVISION_SUDO_PASSWORD $PV run -i nopw.yaml --sudo -- id -u >nopw.out 2>nopw.err </dev/null &&
	expect_grep 'needs a password' nopw.err &&
	$PV run -i $FULL --sudo -- id -u >pw.out 2>pw.err &&
	expect_eq 3 \"\$(grep -c ': 0\$' pw.out)\" 'nodes where sudo worked'
"

test_case "no secret in any file, log, output, terminal capture or screen: zero hits" "
	collect_node_logs collected &&
	for n in $TESTBED_NODES; do cp '$TB'/nodes/\$n/sshd.log collected/\$n.sshd.log 2>/dev/null || true; done &&
	secrets_collected secrets.list &&
	tokens=\$(tb node-1 cat /var/lib/fake-kubernetes/tokens.log | grep -c .) &&
	echo \"\$tokens join tokens were made\" &&
	[ \"\$tokens\" -ge 3 ] &&
	cat secrets.list.password >>secrets.list &&
	echo \"\$(grep -c . secrets.list) secret strings\" &&
	grep -qxF '$MARK' secrets.list &&
	grep -qF -f secrets.list secrets.list.password &&
	files_written files &&
	for f in ./state ./up.typescript ./add.typescript ./up.screen ./add.screen ./check.out ./check.json ./bundle ./collected/node-1.sshd.log; do
		grep -q \"^\$f\" files || { echo \"\$f is not among the files searched\"; exit 1; }
	done &&
	echo \"\$(grep -c . files) files searched, \$(cat \$(cat files) 2>/dev/null | wc -c) bytes\" &&
	found=\$(tr '\\n' '\\0' <files | xargs -0 grep -l -F -f secrets.list || true) &&
	expect_eq '' \"\$found\" 'files holding a secret'
"

test_done
