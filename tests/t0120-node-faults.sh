#!/bin/sh
# run.sh: beside others (tests/run.sh: testbed chroot nodes, mostly waiting for its own timeouts; nothing here times itself tightly)
# run.sh: about 63 s in CI (beside another; tests/run.sh starts the longest first)
# t0120-node-faults: `provision up --phases prep` on six testbed nodes
# (real OpenSSH sshd and sudo, chroot nodes) while four of them go wrong in
# four different ways, all in the same run:
#   node-2  never answers: every process of the node stopped (SIGSTOP)
#           before the run; TCP connects, sshd never speaks;
#   node-3  answers, then hangs: stopped while one of its steps runs (a
#           pausing step added to a copy of the roles, only node-3 pauses);
#   node-4  its host key changed (strict host keys refuse it);
#   node-5  its sudo needs a password provision was not given.
# Each ends with its own clear error, node-1 and node-6 finish (their real
# files are in place), exit status 1, and the nodes that were never reached
# are untouched.  Then, the faults gone, the next up converges every node
# but the one whose key changed (still refused: provision never trusts a new
# key by itself).
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$SRC_ROOT/tests/lib-testbed.sh"

test_need_cmd jq
tb_up --chroot 6 --sudo-password-nodes node-5

# Short timeouts: the hung nodes are found within seconds, not minutes.
INV=$TEST_DIR/inventory.yaml
sed 's/^  sudo: auto$/  sudo: auto\n  connect_timeout: 10\n  command_timeout: 30/' "$TB/inventory-admin.yaml" >"$INV"
grep -q '^  command_timeout: 30$' "$INV" || { echo "# could not set the timeouts in $INV"; exit 1; }

# The real roles plus kernel/steps/05-pause.sh: its check pauses (60 s) on
# a node that has /etc/pvtest-pause, and does nothing anywhere else.
ROLES=$TEST_DIR/roles
cp -R "$SRC_ROOT/roles" "$ROLES"
cat >"$ROLES/kernel/steps/05-pause.sh" <<'EOF'
# test only (t0120): a step that pauses on a marked node.
case ${1:-} in
check)
	if [ -e /etc/pvtest-pause ]; then
		echo "pausing"
		sleep 60
	fi
	exit 0
	;;
apply) exit 0 ;;
*) exit 2 ;;
esac
EOF
tb exec "$TB" node-3 touch /etc/pvtest-pause
test_at_exit "'$TESTBED' resume '$TB' node-2; '$TESTBED' resume '$TB' node-3"

PROV_FILES="/etc/sysctl.d/99-provision-k8s.conf /etc/modules-load.d/provision-k8s.conf /etc/containerd/config.toml"

# written NODE: which of provision's files are on the node (read with
# testbed.sh exec, not over ssh).
written() {
	tb exec "$TB" "$1" sh -c "for f in $PROV_FILES; do [ -e \$f ] && echo \$f; done; true"
}

# final NODE JSON: "STATE TEXT" of the node's last node event.
final() {
	jq -r "select(.event == \"node\" and .node == \"$1\") | \"\(.state) \(.text // \"\")\"" "$2" | tail -n 1
}

test_case "four nodes fail four ways in one run: each its own error, the other two finish, exit 1" '
	for n in node-2 node-4 node-5; do written $n >before.$n; done
	tb hang "$TB" node-2
	tb rekey "$TB" node-4
	start=$(date +%s)
	env -u PROVISION_SUDO_PASSWORD "$PROVISION" up -i "$INV" --roles "$ROLES" --phases prep --no-tui -o json \
		</dev/null >up.json 2>up.err &
	pid=$!
	# node-3 answers and works; hang it once its pausing step runs.
	i=0
	# Not jq -e: jq 1.6 exits 0 on an empty file (before the first event).
	until jq -c "select(.event == \"step_start\" and .node == \"node-3\" and .step == \"05-pause\")" up.json 2>/dev/null | grep -q .; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
			echo "node-3 never started 05-pause"; cat up.json up.err; kill $pid; exit 1
		fi
		sleep 0.1
	done
	tb hang "$TB" node-3
	i=0
	while kill -0 $pid 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 1200 ]; then echo "provision still running after 120 s"; kill -KILL $pid; break; fi
		sleep 0.1
	done
	set +e; wait $pid; rc=$?; set -e
	echo "took $(($(date +%s) - start)) s"
	for n in node-1 node-2 node-3 node-4 node-5 node-6; do echo "$n: $(final $n up.json)"; done
	cat up.err
	expect_eq 1 "$rc" "exit status"
	for n in node-1 node-6; do
		expect_eq "done " "$(final $n up.json)" "$n: final state"
		expect_eq "$PROV_FILES" "$(written $n | paste -sd " ")" "$n: provision s files"
	done
	final node-2 up.json | grep -Eq "^unreachable .*(timed out|timeout)"
	final node-3 up.json | grep -Eq "^(failed|unreachable) .*(timed out|timeout)"
	jq -r "select(.event == \"step_end\" and .node == \"node-3\" and .step == \"05-pause\") | .result" up.json | grep -qx failed
	final node-4 up.json | grep -Eq "^unreachable .*host key .*CHANGED"
	final node-4 up.json | grep -q "SHA256:"
	final node-5 up.json | grep -Eq "^unreachable .*sudo .*needs a password"
	# Four different messages, not one generic error.
	for n in node-2 node-3 node-4 node-5; do final $n up.json; done | sort -u | wc -l | grep -qx 4
	# The nodes that were never reached are as they were.
	tb resume "$TB" node-2
	for n in node-2 node-4 node-5; do expect_eq "$(cat before.$n)" "$(written $n)" "$n: untouched"; done
'

test_case "the faults gone, the next up converges every node but the one whose key changed" '
	tb resume "$TB" node-2
	tb resume "$TB" node-3
	tb exec "$TB" node-3 rm -f /etc/pvtest-pause
	. "$TB/sudo.env"
	export PROVISION_SUDO_PASSWORD
	set +e
	"$PROVISION" up -i "$INV" --roles "$ROLES" --phases prep --no-tui -o json </dev/null >up2.json 2>up2.err
	rc=$?
	set -e
	for n in node-1 node-2 node-3 node-4 node-5 node-6; do echo "$n: $(final $n up2.json)"; done
	expect_eq 1 "$rc" "exit status (node-4 still refused)"
	for n in node-1 node-2 node-3 node-5 node-6; do
		expect_eq "done " "$(final $n up2.json)" "$n: final state"
		expect_eq "$PROV_FILES" "$(written $n | paste -sd " ")" "$n: provision s files"
	done
	final node-4 up2.json | grep -Eq "^unreachable .*host key .*CHANGED"
	! grep -rF "$PROVISION_SUDO_PASSWORD" up2.json up2.err "$TB/nodes/node-5/sshd.log"
'

test_case "what a cut-off write leaves (pv_backup s copy, pv_write s temporary) goes with the next write; the original stays the backup" '
	{
		cat "$SRC_ROOT/roles/lib.sh"
		cat <<-\EOF
			set -e
			mkdir -p /etc/pvtest "$PROVISION_BACKUP_DIR/etc/pvtest"
			printf "original\n" >/etc/pvtest/f.conf
			: >"$PROVISION_BACKUP_DIR/etc/pvtest/f.conf.tmp.999"
			printf "half" >/etc/pvtest/.f.conf.provision-AbC123
			printf "new\n" | pv_write /etc/pvtest/f.conf 0644
			cat /etc/pvtest/f.conf "$PROVISION_BACKUP_DIR/etc/pvtest/f.conf"
			ls -A /etc/pvtest "$PROVISION_BACKUP_DIR/etc/pvtest"
		EOF
	} | tb exec "$TB" node-6 sh -s >out
	cat out
	expect_eq "new
original
f.conf
f.conf" "$(grep -v -e "^/" -e "^\$" out)" "contents, then what is in both folders"
'

test_done
