#!/bin/sh
# t0110: `provision run` against real OpenSSH sshd test nodes: fan-out to 64
# nodes, live lines, --group, JSON, exit codes, -l selection, streaming,
# timeouts, sudo with and without a password, host keys, dead and hung nodes.
. "$(dirname "$0")/lib.sh"
. "$SRC_ROOT/tests/lib-testbed.sh"

tb_up --chroot 64 --sudo-password-nodes node-3 --batch 32

test_case "run -- true on 64 nodes: every node answers, exit 0" '
	"$PROVISION" run -i "$TB_INV" -- "echo hello from \$(hostname)" >out 2>err
	[ "$(grep -c "^node-[0-9]*: hello from node-[0-9]*$" out)" = 64 ]
	! grep . err
'

test_case "lines are prefixed with the node that printed them" '
	"$PROVISION" run -i "$TB_INV" -l "node-[1-5]" -- hostname >out
	for i in 1 2 3 4 5; do grep -qx "node-$i: node-$i" out; done
	[ "$(wc -l <out)" = 5 ]
'

test_case "--group prints identical outputs once under a compressed list" '
	"$PROVISION" run -i "$TB_INV" --group -- "cat /etc/debian_version >/dev/null; echo same" >out
	expect_grep "^node-\[1-64\] (64 nodes, exit 0)$" out
	[ "$(grep -c "^same$" out)" = 1 ]
'

test_case "--group keeps different outputs and exit codes apart" '
	expect_status 1 "$PROVISION" run -i "$TB_INV" -l "node-[1-6]" --group -- \
		"n=\$(hostname); n=\${n#node-}; echo parity \$((n % 2)); exit \$((n % 2))" >out 2>err
	expect_grep "^node-\[2,4,6\] (3 nodes, exit 0)$" out
	expect_grep "^node-\[1,3,5\] (3 nodes, exit 1)$" out
	[ "$(grep -c "^parity" out)" = 2 ]
'

test_case "-o json: one valid object per node with status and output" '
	"$PROVISION" run -i "$TB_INV" -l "node-[1-3]" -o json -- "echo out; echo err >&2" >out
	[ "$(wc -l <out)" = 3 ]
	jq -e -s "length == 3 and all(.status == \"done\" and .exit_status == 0 and .stdout == \"out\n\" and .stderr == \"err\n\")" out >/dev/null
'

test_case "exit status: 1 when any node fails, the others still report" '
	expect_status 1 "$PROVISION" run -i "$TB_INV" -l node-1,node-2 -- "[ \$(hostname) = node-1 ]" >out 2>err
	expect_grep "node-2: command exited with status 1" err
	expect_grep "2 nodes: 1 ok, 1 failed" err
'

test_case "-l takes names, ranges and roles; an unknown name is an error (exit 2)" '
	"$PROVISION" run -i "$TB_INV" -l "@control-plane" -- hostname >out
	[ "$(cat out)" = "node-1: node-1" ]
	[ "$("$PROVISION" run -i "$TB_INV" -l "@worker" -- true >/dev/null; echo $?)" = 0 ]
	expect_status 2 "$PROVISION" run -i "$TB_INV" -l node-99 -- true 2>err
	expect_grep "node-99" err
'

test_case "output streams: the first line arrives before the command ends" '
	"$PROVISION" run -i "$TB_INV" -l node-7 -- "echo first; sleep 2; echo second" |
		while IFS= read -r line; do echo "$(date +%s.%N) $line"; done >out
	t1=$(awk "/first/ {print \$1}" out)
	t2=$(awk "/second/ {print \$1}" out)
	awk -v a="$t1" -v b="$t2" "BEGIN { exit !(b - a > 1.5) }"
'

test_case "stdout to stdout, stderr to stderr" '
	"$PROVISION" run -i "$TB_INV" -l node-8 -- "echo to-out; echo to-err >&2" >out 2>err
	expect_grep "^node-8: to-out$" out
	expect_grep "^node-8: to-err$" err
	expect_no_grep to-err out
'

test_case "a command that outlives --timeout is stopped, the others finish" '
	start=$(date +%s)
	expect_status 1 "$PROVISION" run -i "$TB_INV" -l node-9,node-10 -t 2 -- \
		"if [ \$(hostname) = node-9 ]; then sleep 30; fi; echo done" >out 2>err
	[ $(( $(date +%s) - start )) -lt 10 ]
	expect_grep "^node-10: done$" out
	expect_grep "node-9: .*tim" err
	# the sleep was killed on the node
	! tb exec "$TB" node-9 pgrep -f "sleep 30"
'

test_case "sudo without a password: commands run as root" '
	"$PROVISION" run -i "$TB/inventory-admin.yaml" -l node-1,node-2 --sudo -- id -u >out
	expect_grep "^node-1: 0$" out
	expect_grep "^node-2: 0$" out
	"$PROVISION" run -i "$TB/inventory-admin.yaml" -l node-2 -- id -un >out
	expect_grep "^node-2: admin$" out
'

test_case "sudo that needs a password we do not have: a clear error for that node only" '
	env -u PROVISION_SUDO_PASSWORD "$PROVISION" run -i "$TB/inventory-admin.yaml" -l node-2,node-3 --sudo -- id -u \
		>out 2>err </dev/null && exit 1
	expect_grep "^node-2: 0$" out
	expect_grep "node-3: .*sudo.*password" err
'

test_case "sudo with PROVISION_SUDO_PASSWORD: works, and the password appears nowhere" '
	. "$TB/sudo.env"
	export PROVISION_SUDO_PASSWORD
	"$PROVISION" run -i "$TB/inventory-admin.yaml" -l node-3 --sudo -- "id -u; ps -eo args" >out 2>err
	expect_grep "^node-3: 0$" out
	expect_no_grep "$PROVISION_SUDO_PASSWORD" out
	expect_no_grep "$PROVISION_SUDO_PASSWORD" err
	! grep -rF "$PROVISION_SUDO_PASSWORD" "$TB/nodes/node-3/sshd.log"
'

test_case "a changed host key is refused with its SHA256 fingerprint; the others go on" '
	tb rekey "$TB" node-11
	expect_status 1 "$PROVISION" run -i "$TB_INV" -l node-11,node-12 -- echo reached >out 2>err
	expect_grep "node-11: unreachable: .*host key .* has CHANGED" err
	expect_grep "SHA256:" err
	expect_grep "^node-12: reached$" out
	expect_no_grep "^node-11: reached" out
'

test_case "sshd stopped: connection refused, clearly" '
	tb stop-sshd "$TB" node-13
	expect_status 1 "$PROVISION" run -i "$TB_INV" -l node-13 -- true 2>err
	expect_grep "node-13: unreachable: .*refused" err
	tb start-sshd "$TB" node-13
	"$PROVISION" run -i "$TB_INV" -l node-13 -- true
'

test_case "a hung node times out within connect_timeout; the others finish" '
	sed "s/^  sudo: auto$/  sudo: auto\n  connect_timeout: 3/" "$TB_INV" >short.yaml
	tb hang "$TB" node-14
	start=$(date +%s)
	expect_status 1 "$PROVISION" run -i short.yaml -l node-14,node-15 -- echo ok >out 2>err
	tb resume "$TB" node-14
	[ $(( $(date +%s) - start )) -lt 15 ]
	expect_grep "^node-15: ok$" out
	expect_grep "node-14: unreachable: .*tim" err
'

test_case "a node that dies mid-command fails alone with a clear error" '
	( sleep 1.5; tb kill-node "$TB" node-16 ) &
	expect_status 1 "$PROVISION" run -i "$TB_INV" -l node-16,node-17 -- "sleep 4; echo finished" >out 2>err
	wait
	expect_grep "^node-17: finished$" out
	expect_grep "node-16: .*\(lost\|closed\|disconnect\)" err
'

test_case "an invalid inventory opens no connection (exit 2, no new login)" '
	before=$(tb_logins node-18)
	sed "s/^  - name: node-18$/  - name: node-18\n    adress: x/" "$TB_INV" >bad.yaml
	expect_status 2 "$PROVISION" run -i bad.yaml -- true 2>err
	expect_grep "unknown key .adress." err
	[ "$(tb_logins node-18)" = "$before" ]
'

test_done
