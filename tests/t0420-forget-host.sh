#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 10 s in CI (beside another; tests/run.sh starts the longest first)
# t0420-forget-host: a testbed node is rebuilt (`testbed.sh rekey`: a new
# SSH host key, real OpenSSH sshd); strict host-key checking then refuses
# it, and `provision forget-host` shows the known and the offered
# fingerprints (compared with ssh-keygen -lf of the node's old and new
# public keys) and replaces only that node's entry, only when confirmed:
# --yes, --fingerprint with the right key, or "y" on a terminal (script(1)
# gives it one).  Refusals (no terminal and no --yes, a wrong
# --fingerprint, "n" on the terminal, an unknown node) exit 2 and leave
# known_hosts byte for byte as it was.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$SRC_ROOT/tests/lib-testbed.sh"

test_need_cmd script ssh-keygen sha256sum
tb_up --chroot 3
KH=$TB/known_hosts
fp() { ssh-keygen -lf "$1" | cut -d ' ' -f 2; }

cp "$TB/nodes/node-2/hostkey.pub" "$TEST_DIR/old2.pub"
cp "$TB/nodes/node-3/hostkey.pub" "$TEST_DIR/old3.pub"
tb rekey "$TB" node-2
tb rekey "$TB" node-3

test_case "a rebuilt node is refused by strict host-key checking" "
	expect_status 1 '$PROVISION' run -i '$TB_INV' -l node-2 -- true >out 2>err
	expect_grep 'host key of .* has CHANGED' err
"

test_case "no terminal and no --yes: both fingerprints shown, exit 2, known_hosts unchanged" "
	sha256sum '$KH' >before
	expect_status 2 '$PROVISION' forget-host -i '$TB_INV' node-2 >out 2>err </dev/null
	expect_grep \"known:   ssh-ed25519 \$(fp old2.pub) (line \" out
	expect_grep \"offered: ssh-ed25519 \$(fp '$TB/nodes/node-2/hostkey.pub')\" out
	expect_grep 'not on a terminal' err
	expect_grep 'run it again with --yes' err
	sha256sum -c before >/dev/null
	[ ! -e '$KH.old' ]
"

test_case "--fingerprint that is not the offered key: exit 2, unchanged" "
	sha256sum '$KH' >before
	expect_status 2 '$PROVISION' forget-host -i '$TB_INV' --fingerprint \"\$(fp old2.pub)\" node-2 >out 2>err
	expect_grep 'intercepting' err
	sha256sum -c before >/dev/null
"

test_case "an unknown node: exit 2, unchanged" "
	sha256sum '$KH' >before
	expect_status 2 '$PROVISION' forget-host -i '$TB_INV' --yes node-9 >out 2>err
	expect_grep \"no node 'node-9'\" err
	sha256sum -c before >/dev/null
"

test_case "--fingerprint with the new key: only node-2's entry replaced, the old file kept" "
	cp '$KH' kh.before
	a2=\$(awk '\$1 == \"node-2\" { print \$2 }' '$TB/nodes.txt')
	grep -v \"^\$a2[ ,]\" kh.before >others.before
	'$PROVISION' forget-host -i '$TB_INV' --fingerprint \"\$(fp '$TB/nodes/node-2/hostkey.pub')\" node-2 >out 2>err
	expect_grep '^replaced: 1 old entry of node-2 removed' out
	cmp kh.before '$KH.old'
	grep -v \"^\$a2[ ,]\" '$KH' | cmp - others.before
	expect_eq 2 \"\$(grep -n \"^\$a2 ssh-ed25519 \" '$KH' | cut -d : -f 1)\" 'line of the new entry (where the old one was)' 
	[ \"\$(wc -l <'$KH')\" = \"\$(wc -l <kh.before)\" ]
	'$PROVISION' run -i '$TB_INV' -l node-2 -- echo reachable >out 2>err
	expect_grep '^node-2: reachable' out
"

test_case "the same key again: nothing to forget, exit 0" "
	sha256sum '$KH' >before
	'$PROVISION' forget-host -i '$TB_INV' node-2 >out 2>err </dev/null
	expect_grep 'nothing to forget' out
	sha256sum -c before >/dev/null
"

test_case "on a terminal: 'n' changes nothing (exit 2), 'y' replaces the entry" "
	sha256sum '$KH' >before
	printf 'n\\n' | script -qec \"'$PROVISION' forget-host -i '$TB_INV' node-3\" /dev/null >tty-n.out 2>&1 || echo \$? >status
	expect_eq 2 \"\$(cat status)\" 'exit status after n'
	expect_grep 'replace the 1 known key of node-3 with ssh-ed25519' tty-n.out
	expect_grep 'not confirmed; nothing was changed' tty-n.out
	sha256sum -c before >/dev/null
	printf 'y\\n' | script -qec \"'$PROVISION' forget-host -i '$TB_INV' node-3\" /dev/null >tty-y.out 2>&1
	expect_grep \"known:   ssh-ed25519 \$(fp old3.pub)\" tty-y.out
	expect_grep 'replaced: 1 old entry of node-3' tty-y.out
	'$PROVISION' run -i '$TB_INV' -l node-3 -- echo reachable >out 2>err
	expect_grep '^node-3: reachable' out
"

test_done
