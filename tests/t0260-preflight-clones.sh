#!/bin/sh
# t0260: preflight catches nodes cloned from one disk image.  node-2 gets
# node-1's SSH host key (and known_hosts is told, as an admin who accepted
# the key would have done), node-3 stays unique: plan fails node-1 and
# node-2 in preflight, each naming the other and the key's SHA256
# fingerprint as `ssh-keygen -lf` prints it, before any step runs there;
# node-3 goes on.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-testbed.sh"

test_need_root
test_need_cmd python3 ssh-keygen
tb_up --chroot 3
x() { "$TESTBED" exec "$TB" "$@"; }

test_case "node-2 answers with node-1's host key (a cloned image)" "
	x node-1 cat /etc/ssh/ssh_host_ed25519_key >key
	x node-1 cat /etc/ssh/ssh_host_ed25519_key.pub >key.pub
	x node-2 sh -c 'cat >/etc/ssh/ssh_host_ed25519_key' <key
	x node-2 sh -c 'cat >/etc/ssh/ssh_host_ed25519_key.pub' <key.pub
	'$TESTBED' stop-sshd '$TB' node-2
	'$TESTBED' start-sshd '$TB' node-2
	read -r t k _ <key.pub
	sed -i \"s|^\\([^ ]*,node-2\\) .*|\\1 \$t \$k|\" '$TB/known_hosts'
	expect_eq 2 \"\$(grep -c \" \$k\\\$\" '$TB/known_hosts')\" 'known_hosts lines with the key'
	x node-2 true
"

test_case "plan: node-1 and node-2 fail preflight naming each other and the fingerprint; node-3 goes on" "
	fp=\$(ssh-keygen -lf key.pub | awk '{ print \$2 }')
	expect_status 1 timeout 120 '$PROVISION' plan -i '$TB_INV' --roles '$SRC_ROOT/roles' --phases prep --no-tui -o json >plan.json
	python3 -c '
import json
ev = [json.loads(l) for l in open(\"plan.json\")]
for e in ev:
    if e[\"event\"] == \"node\":
        last = e
state = {e[\"node\"]: e[\"state\"] for e in ev if e[\"event\"] == \"node\"}
print(\" \".join(\"%s=%s\" % kv for kv in sorted(state.items())))
for e in ev:
    if e[\"event\"] == \"message\" and e.get(\"result\") == \"failed\":
        print(e[\"node\"], e[\"phase\"], e[\"text\"])
    if e[\"event\"] == \"step_end\" and e.get(\"phase\") == \"prep\":
        print(e[\"node\"], \"step\", e[\"step\"])
' >result.out
	cat result.out
	expect_grep '^node-1=failed node-2=failed node-3=done\$' result.out
	expect_grep \"^node-1 preflight SSH host key ssh-ed25519 \$fp is the same as on node 'node-2' (a cloned disk image?) (hint: give each machine its own SSH host keys\" result.out
	expect_grep \"^node-2 preflight SSH host key ssh-ed25519 \$fp is the same as on node 'node-1'\" result.out
	expect_no_grep '^node-[12] step ' result.out
	expect_grep '^node-3 step ' result.out
"

test_done
