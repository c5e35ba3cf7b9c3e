#!/bin/sh
# t0301-tui-status: `provision status` against three testbed nodes: the table
# off a terminal (exit 1 while a check fails), the grid of checks in a tmux
# pane, `r` to read the nodes again, a node whose sshd stops turning red and
# back, the detail of a check (expected, observed, fix), `q`, the table left
# on the terminal -- and no file on any node changed by any of it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$(dirname "$0")/lib-testbed.sh"
# shellcheck source=tests/lib-tui.sh
. "$(dirname "$0")/lib-tui.sh"

test_need_cmd tmux python3
tb_up --chroot 3
INV=$TB_INV

# snapshot DIR: every file of every node that provision or a role could touch, hashed.
snapshot() {
	mkdir -p "$1"
	for n in node-1 node-2 node-3; do
		# shellcheck disable=SC2016 # expanded by the node's shell
		tb exec "$TB" "$n" sh -c '{ find /etc /var/lib/provision /var/lib/dpkg /srv /usr/local /root -xdev -type l -printf "%p -> %l\\n"
			find /etc /var/lib/provision /var/lib/dpkg /srv /usr/local /root -xdev -type f -print0 | xargs -0 -r sha256sum; } 2>/dev/null | LC_ALL=C sort' >"$1/$n"
	done
}
snapshot "$TEST_DIR/before"

test_case "off a terminal: one table, a line per failed check, exit 1" "
	expect_status 1 '$PROVISION' status -i '$INV' >table.out 2>err.out &&
	expect_grep '^NODE    REACH  GPUS  PREFLIGHT  SWAP  SWAP@BOOT  CONTAINERD  CGROUP  KUBE PKGS  READY  KUBELET  GPU ALLOC  LAST RUN' table.out &&
	expect_eq 3 \"\$(grep -c '^node-[123]  ok     ok    ok   .*FAIL       n/a    n/a      n/a        n/a' table.out)\" 'rows: reach, gpus, preflight ok; kube pkgs failed; ready, kubelet, gpu alloc, last run n/a' &&
	expect_grep '^node-2: kube-packages failed: expected kubeadm, kubelet, kubectl 1.30.4, held; observed kubeadm missing, kubelet missing, kubectl missing' table.out &&
	expect_grep '^  fix: provision up --phases kube-packages' table.out &&
	expect_grep '^node-1: cluster failed: expected .*; observed no cluster yet' table.out &&
	expect_grep '^n/a: kubelet, gpu-alloc and last-run are not checked by this version' table.out &&
	expect_grep '^exit status 1: some check failed' table.out &&
	expect_eq '' \"\$(cat err.out)\" 'stderr'
"

run status 160 50 LANG=C.UTF-8 -- status -i "$INV" --interval 60

test_case "on a terminal: the grid of checks, a row per node" "
	wait_for status 'read [0-9]+s ago' &&
	expect_grep '^ provision status · testbed │ 3 nodes: 0 ok, 3 with problems' status.screen &&
	expect_eq 3 \"\$(grep -cE '^.node-[123] +(cp|worker) ' status.screen)\" 'node rows' &&
	expect_cell status node-1 reach '✓' &&
	expect_cell status node-2 'kube pkgs' '✗' &&
	expect_cell status node-3 kubelet 'n/a' &&
	expect_grep '── node-1 · reachable: ok' status.screen
"

test_case "a node that stops answering turns red at the next read (r), then back" "
	tb stop-sshd '$TB' node-2 &&
	keys status r &&
	wait_for status 'reading' 10 &&
	wait_for status 'read [0-9]+s ago' 60 &&
	expect_cell status node-2 reach '✗' &&
	keys status Down &&
	wait_for status '── node-2 · reachable: FAIL' &&
	expect_grep '^expected  the node answers over SSH' status.screen &&
	expect_grep '^observed  no facts: unreachable or the facts script failed' status.screen &&
	expect_grep '^fix       ' status.screen &&
	tb start-sshd '$TB' node-2 &&
	keys status r &&
	wait_for status 'reading' 10 &&
	wait_for status 'read [0-9]+s ago' 60 &&
	expect_cell status node-2 reach '✓'
"

test_case "the detail of a failed check: expected, observed, how to fix" "
	keys status Right Right Right Right Right Right Right &&
	wait_for status '── node-2 · kube-packages: FAIL' &&
	expect_grep '^expected  kubeadm, kubelet, kubectl 1.30.4, held' status.screen &&
	expect_grep '^observed  kubeadm missing, kubelet missing, kubectl missing' status.screen &&
	expect_grep '^fix       provision up --phases kube-packages' status.screen
"

test_case "q quits at once: the table stays on the terminal, which is as before" "
	keys status q &&
	expect_eq 1 \"\$(wait_rc status)\" 'exit status' &&
	shot status &&
	expect_grep '^NODE  *REACH  *GPUS' status.screen &&
	expect_grep '^exit status 1: some check failed' status.screen &&
	expect_no_grep 'provision status · testbed' status.screen &&
	expect_sane_terminal status
"

test_case "nothing on any node changed" "
	snapshot after &&
	for n in node-1 node-2 node-3; do
		diff -u before/\$n after/\$n || { echo \"status changed files on \$n\"; exit 1; }
	done
"

test_done
