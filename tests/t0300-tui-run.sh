#!/bin/sh
# t0300-tui-run: the live view of `up` and `plan`, as a person sees it.
#
# The real binary runs in a tmux pane (tmux new-session -d -x 120 -y 40,
# send-keys, capture-pane) against three testbed nodes, with a copy of the
# roles plus a test role, tui-gate, whose first step waits until the test
# touches /tmp/tui-go on the node (so the screen can be read mid-run) and
# whose second step fails on the node that has /tmp/tui-fail, with output
# and a `::hint`.  node-3 declares a GPU it does not have, so preflight
# fails it.  Each pane records `stty -a` before and after provision and
# its exit status, so a test can compare the terminal before and after.
# Every wait polls the screen with a deadline.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$(dirname "$0")/lib-testbed.sh"
# shellcheck source=tests/lib-tui.sh
. "$(dirname "$0")/lib-tui.sh"

test_need_cmd tmux python3
tb_up --chroot 3

# ---- the roles and the inventory

ROLES=$TEST_DIR/roles
cp -R "$SRC_ROOT/roles" "$ROLES"
mkdir -p "$ROLES/tui-gate/steps"
cat >"$ROLES/tui-gate/role.yaml" <<'EOF'
description: for the TUI tests; waits for /tmp/tui-go, then fails where /tmp/tui-fail is
phase: prep
EOF
cat >"$ROLES/tui-gate/steps/10-wait.sh" <<'EOF'
# Waits (120 s at most) until the test touches /tmp/tui-go on this node.
echo "waiting for /tmp/tui-go"
i=0
while [ ! -f /tmp/tui-go ] && [ "$i" -lt 1200 ]; do
	sleep 0.1
	i=$((i + 1))
done
exit 0
EOF
cat >"$ROLES/tui-gate/steps/20-disk.sh" <<'EOF'
# Fails on the node that has /tmp/tui-fail, as a step that misses a disk would.
if [ -f /tmp/tui-fail ]; then
	echo "looking for the scratch disk"
	echo "error: /dev/sdz is not there" >&2
	echo "::hint attach the scratch disk, then run provision up again"
	exit 3
fi
exit 0
EOF
INV=$TEST_DIR/inventory.yaml
# node-3 declares one GPU; testbed nodes have none.
awk '{ print } /- name: node-3$/ { n3 = 1 } n3 && /roles:/ { print "    gpus: 1"; n3 = 0 }' \
	"$TB_INV" >"$INV"
grep -q 'gpus: 1' "$INV" || { echo "# could not edit the inventory"; exit 1; }
tb exec "$TB" node-2 touch /tmp/tui-fail

gate() { # gate open|close: the 10-wait step of every node goes on, or waits
	for n in node-1 node-2 node-3; do
		if [ "$1" = open ]; then tb exec "$TB" "$n" touch /tmp/tui-go; else tb exec "$TB" "$n" rm -f /tmp/tui-go; fi
	done
}

# ---- the terminal

run_up() { # run_up NAME: provision up on the three nodes in a 120x40 UTF-8 terminal
	run "$1" 120 40 LANG=C.UTF-8 -- up -i "$INV" --roles "$ROLES" --phases prep
}

# ---- plan, in ASCII and without colours

gate close
run plan 100 30 LANG=C NO_COLOR=1 -- plan -i "$INV" --roles "$ROLES" --phases prep

test_case "plan: ASCII glyphs without UTF-8, no colours with NO_COLOR" "
	wait_for plan 'tui-gate' &&
	wait_for plan '^-- node-1 - tui-gate > 10-wait' &&
	expect_cell plan node-1 prep '>' &&
	expect_cell plan node-3 prep 'X' &&
	expect_grep '^prep:  facts =  preflight =  kernel ~[0-9]' plan.screen &&
	# Nothing but ASCII on the screen, and no colour in the escape codes.
	! LC_ALL=C grep -n '[^ -~]' plan.screen &&
	tm capture-pane -e -p -t plan >plan.attrs &&
	! grep -nE '\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5|48;5)(;[0-9;]*)?m' plan.attrs &&
	grep -q '\[7m\|;7m\|\[1m' plan.attrs
"

test_case "plan: a failed node stays on screen until q; then the summary" "
	gate open &&
	wait_for plan 'Finished: 2 nodes failed' &&
	keys plan q &&
	expect_eq 1 \"\$(wait_rc plan)\" 'exit status' &&
	shot plan &&
	expect_grep '^plan testbed: 3 nodes, ' plan.screen &&
	expect_grep '^failed: node-2: tui-gate .* 20-disk' plan.screen &&
	expect_grep '^exit status 1: some node failed' plan.screen &&
	expect_sane_terminal plan
"

# ---- up: the grid, cells changing, failures, the matrix, the log, resizing

gate close
run_up up

test_case "up: the grid has a row per node and a column per phase" "
	wait_for up 'tui-gate' &&
	wait_for up '^.node-1 +cp +no GPU ' &&
	head -n 3 up.screen | tail -n 2 >heads &&
	# --phases prep: one phase, facts and preflight counted in it; its roles are under the grid.
	for h in NODE ROLES GPU prep PROGRESS ETA; do
		grep -qE \"(^| )\$h( |\$)\" heads || { echo \"no heading \$h:\"; cat heads; exit 1; }
	done &&
	expect_grep '^ provision up · testbed · 3 nodes' up.screen &&
	expect_eq 3 \"\$(grep -cE '^.node-[123] +(cp|worker) ' up.screen)\" 'node rows' &&
	expect_grep '^.node-1  *cp  *no GPU ' up.screen &&
	# The GPU summary comes from the facts (node-3 declares one it does not have).
	wait_for up '^.node-3 +worker +no GPU '
"

test_case "up: cells change as phases complete; the pane's title names the running step" "
	wait_for up '^── node-1 · tui-gate › 10-wait' &&
	wait_cell up node-2 prep '▸' &&
	wait_cell up node-3 prep '✗' &&
	expect_cell up node-1 prep '▸' &&
	# The phase's roles on the selected node: facts, preflight, then each role (nvidia
	# does not apply to node-1: not listed).
	grep '^prep:  facts ✓  preflight ✓  ' up.screen >detail &&
	expect_grep 'kernel +[0-9]' detail &&
	expect_grep 'swap-off +[0-9]' detail &&
	expect_grep 'tui-gate ▸' detail &&
	expect_no_grep nvidia detail &&
	expect_grep '── node-1 · tui-gate › 10-wait' up.screen &&
	expect_grep '^  waiting for /tmp/tui-go' up.screen &&
	expect_grep '3 nodes │ 0 done, 1 failed, 2 running' up.screen &&
	# Whatever writes to stderr meanwhile is held back, not drawn over the screen.
	echo 'a message on stderr' >\"/proc/\$(cat up.pid)/fd/2\" &&
	sleep 0.3 &&
	shot up &&
	expect_no_grep 'a message on stderr' up.screen &&
	gate open &&
	wait_for up 'Finished: 2 nodes failed' &&
	expect_cell up node-1 prep '\\+[0-9]' &&
	expect_cell up node-2 prep '✗' &&
	expect_grep '^ node-1 .*████  *[0-9.]*m*s' up.screen
"

test_case "up: the view stops on the first failure, its output and its fix" "
	shot up &&
	expect_grep '── node-3 · failed: preflight' up.screen &&
	expect_grep 'the inventory declares 1 GPU but 0 NVIDIA GPUs were found' up.screen &&
	expect_grep '^fix: fix .gpus. in the inventory' up.screen &&
	keys up f &&
	wait_for up '── node-2 · failed: tui-gate › 20-disk' &&
	expect_grep '^check failed (exit 3): error: /dev/sdz is not there' up.screen &&
	expect_grep '^fix: attach the scratch disk, then run provision up again' up.screen &&
	expect_grep '^  looking for the scratch disk' up.screen &&
	expect_grep '^  error: /dev/sdz is not there' up.screen
"

test_case "up: selecting a node shows its output; the failed one shows the failing step's" "
	keys up Escape Up Up Up &&
	wait_for up '^▶node-1 ' &&
	expect_no_grep 'sdz' up.screen &&
	keys up Down &&
	wait_for up '^▶node-2 ' &&
	# The pane's title says what the lines are: the log, ending with the failed step.
	expect_grep '── node-2 · log, last tui-gate › 20-disk: failed' up.screen &&
	expect_grep '^  error: /dev/sdz is not there' up.screen
"

test_case "up: v shows failed checks with what was expected and observed" "
	keys up v &&
	wait_for up ' reach ' &&
	keys up Right Right Right Right Right Right Right &&
	wait_for up '── node-2 · tui-gate: FAIL' &&
	expect_grep '^expected  every step.s check passes after apply' up.screen &&
	expect_grep '^observed  check failed (exit 3): error: /dev/sdz is not there' up.screen &&
	expect_grep '^fix       attach the scratch disk, then run provision up again' up.screen &&
	expect_cell up node-2 tui-gate '✗' &&
	expect_cell up node-1 tui-gate '✓' &&
	keys up Down Left Left Left Left Left Left &&
	wait_for up '── node-3 · gpus: FAIL' &&
	expect_grep '^expected  1 NVIDIA GPU (the inventory.s gpus), each seen by the driver' up.screen &&
	expect_grep '^observed  0 NVIDIA GPUs found' up.screen &&
	keys up v &&
	wait_for up 'PROGRESS'
"

test_case "up: Enter opens the node's whole log, scrollable" "
	keys up Up &&
	wait_for up '^▶node-2 ' &&
	keys up Enter &&
	wait_for up '^ log of node-2 · lines ' &&
	expect_grep '^  error: /dev/sdz is not there' up.screen &&
	keys up g &&
	wait_for up '^facts › gather' &&
	expect_grep '^  facts_version=' up.screen &&
	keys up Escape &&
	wait_for up 'PROGRESS'
"

test_case "up: resizing to 80x24 and back redraws without garbage" "
	tm resize-window -t up -x 80 -y 24 &&
	wait_for up '^ provision up · testbed' &&
	sleep 0.5 &&
	shot up &&
	cp up.screen small.screen &&
	expect_grep '^ NODE ' small.screen &&
	expect_eq 3 \"\$(grep -cE '^.node-[123] ' small.screen)\" 'node rows at 80x24' &&
	expect_grep 'Finished: 2 nodes failed' small.screen &&
	python3 -c 'import sys; bad = [l for l in open(sys.argv[1], encoding=\"utf-8\").read().split(chr(10)) if len(l) > 80]; print(*bad, sep=chr(10)); sys.exit(len(bad) > 0)' small.screen &&
	# A full repaint (^L) draws exactly what the resize left: nothing stale remained.
	keys up C-l &&
	sleep 0.5 &&
	shot up &&
	diff -u small.screen up.screen &&
	tm resize-window -t up -x 120 -y 40 &&
	sleep 0.5 &&
	shot up &&
	cp up.screen big.screen &&
	expect_eq 3 \"\$(grep -cE '^.node-[123] ' big.screen)\" 'node rows at 120x40' &&
	head -n 3 big.screen | grep -q PROGRESS &&
	keys up C-l &&
	sleep 0.5 &&
	shot up &&
	diff -u big.screen up.screen
"

test_case "up: q leaves; the terminal is as before and the summary is printed" "
	keys up q &&
	expect_eq 1 \"\$(wait_rc up)\" 'exit status' &&
	wait_for up '^--- pane done ---' &&
	expect_grep '^node-1  done ' up.screen &&
	expect_grep '^node-2  failed ' up.screen &&
	expect_grep '^up testbed: 3 nodes, ' up.screen &&
	expect_grep '^changed on [0-9] nodes\\?: node-' up.screen &&
	expect_grep '^failed: node-3: preflight: ' up.screen &&
	expect_grep '^failed: node-2: tui-gate › 20-disk: check failed (exit 3): error: /dev/sdz is not there' up.screen &&
	expect_grep '^  fix: attach the scratch disk, then run provision up again' up.screen &&
	expect_grep '^exit status 1: some node failed' up.screen &&
	expect_grep '^a message on stderr' up.screen &&
	expect_no_grep 'PROGRESS' up.screen &&
	expect_sane_terminal up
"

# ---- stopping a run

gate close
run_up stop

test_case "q then y: nodes finish their current step, the run is reported interrupted" "
	wait_for stop '^── node-1 · tui-gate › 10-wait' &&
	keys stop q &&
	wait_for stop 'Stop the run\\? Nodes finish their current step' &&
	keys stop y &&
	wait_for stop 'Stopping: nodes finish their current step' &&
	gate open &&
	expect_eq 130 \"\$(wait_rc stop)\" 'exit status' &&
	shot stop &&
	expect_grep '^node-1  cancelled ' stop.screen &&
	expect_grep 'interrupted before tui-gate › 20-disk' stop.screen &&
	expect_grep '^exit status 130: interrupted' stop.screen &&
	expect_sane_terminal stop
"

gate close
run_up ctrlc

test_case "^C: the view says the run is stopping as after q then y, nodes end their current step, exit 130, the terminal is as before" "
	wait_for ctrlc '^── node-1 · tui-gate › 10-wait' &&
	keys ctrlc C-c &&
	wait_for ctrlc 'Stopping: nodes finish their current step' &&
	gate open &&
	expect_eq 130 \"\$(wait_rc ctrlc)\" 'exit status' &&
	shot ctrlc &&
	expect_grep 'interrupted before tui-gate › 20-disk' ctrlc.screen &&
	expect_grep '^exit status 130: interrupted' ctrlc.screen &&
	expect_sane_terminal ctrlc
"

gate close
run_up cancel

test_case "q, y, then q again cancels the running steps at once" "
	wait_for cancel '^── node-1 · tui-gate › 10-wait' &&
	keys cancel q &&
	wait_for cancel 'Stop the run\\?' &&
	keys cancel y &&
	wait_for cancel 'Stopping:' &&
	start=\$(date +%s) &&
	keys cancel q &&
	expect_eq 130 \"\$(wait_rc cancel 15)\" 'exit status' &&
	[ \$((\$(date +%s) - start)) -le 10 ] || { echo 'cancelling took more than 10 s'; false; } &&
	shot cancel &&
	expect_grep '^up testbed: 3 nodes, .*, interrupted, ' cancel.screen &&
	expect_grep 'tui-gate › 10-wait: command on .* cancelled' cancel.screen &&
	expect_grep '^exit status 130: interrupted' cancel.screen &&
	expect_sane_terminal cancel
"

# ---- ^C without the live view (issue 33): plain lines and JSON lines

gate close
run plainc 200 40 LANG=C.UTF-8 -- up -i "$INV" --roles "$ROLES" --phases prep --no-tui -v

test_case "plain output: the first ^C says at once that the run stops after the steps running now (named) and what a second ^C does; the second cancels them, exit 130" "
	wait_for plainc '^\\[node-1\\] │ waiting for /tmp/tui-go' &&
	t0=\$(date +%s%N) &&
	keys plainc C-c &&
	wait_for plainc '^\\^C: stopping: no new step starts; the steps running now finish first \\(.*node-1: tui-gate › 10-wait.*\\), then the run ends \\(exit 130\\)\\.  \\^C again stops them at once\\.' 5 &&
	ms=\$(( (\$(date +%s%N) - t0) / 1000000 )) &&
	echo \"# the first ^C's line after \$ms ms\" &&
	[ \"\$ms\" -le 2000 ] || { echo \"the first ^C's line came after \$ms ms\"; false; } &&
	keys plainc C-c &&
	wait_for plainc '^\\^C again: cancelling: the commands running now are stopped \\(.*node-1: tui-gate › 10-wait' 5 &&
	expect_eq 130 \"\$(wait_rc plainc 15)\" 'exit status'
"
# whatever the case did: that run is over before the next one takes the state folder
finish() { # finish NAME: a provision still running in NAME's pane is stopped
	[ -s "$TEST_DIR/$1.rc" ] || { keys "$1" C-c; keys "$1" C-c; wait_rc "$1" 20 >/dev/null || true; }
}
finish plainc

gate close
run jsonc 250 40 LANG=C.UTF-8 -- up -i "$INV" --roles "$ROLES" --phases prep -o json -v

test_case "JSON output: each ^C is an interrupt object (stopping, then cancelling) with the steps running" "
	wait_for jsonc 'waiting for /tmp/tui-go' &&
	keys jsonc C-c &&
	# (the terminal's echo of ^C may come first: JSON lines are not written over it)
	wait_for jsonc '^(\\^C)?\\{\"event\":\"interrupt\",\"interrupts\":1,\"action\":\"stopping\",\"running\":\\[.*\\{\"node\":\"node-1\",\"step\":\"tui-gate \\\\u203A 10-wait\"\\}' 5 &&
	keys jsonc C-c &&
	wait_for jsonc '^(\\^C)?\\{\"event\":\"interrupt\",\"interrupts\":2,\"action\":\"cancelling\"' 5 &&
	expect_eq 130 \"\$(wait_rc jsonc 15)\" 'exit status'
"
finish jsonc

run runc 200 40 LANG=C.UTF-8 -- run -i "$INV" -- "echo started; sleep 60"

test_case "provision run: the first ^C says at once that no new node starts and the running commands finish; the second stops them, exit 130" "
	wait_for runc '^node-1: started' &&
	keys runc C-c &&
	wait_for runc '^\\^C: stopping: no new node starts; the commands running now finish first \\(exit 130\\)\\.  \\^C again stops them at once\\.' 5 &&
	keys runc C-c &&
	wait_for runc '^\\^C again: cancelling: the commands running now are stopped \\(exit 130\\)\\.' 5 &&
	expect_eq 130 \"\$(wait_rc runc 15)\" 'exit status'
"
finish runc

# ---- check: the same view, opened on the matrix
# (check runs the roles' checks too, tui-gate's among them: not held, and
# node-2's disk there, so that the failures are node-3's preflight and
# node-1's cluster; the roles of a cluster not built yet are drift, warned)

gate open
tb exec "$TB" node-2 rm -f /tmp/tui-fail
run check 120 40 LANG=C.UTF-8 -- check -i "$INV"

# The failures come in as the nodes reach them: which one the view opens on
# (node-3's preflight, node-1's images-init: these nodes run no containerd,
# so no image can be there) depends on the order they came; f (the next
# failed node) goes round them.
# images-init fails where containerd does not answer (these nodes run none):
# no image can be there.
f_until() { # f_until REGEX: press f until the detail shows REGEX
	for _i in 1 2 3 4 5 6; do
		shot check
		grep -qE -- "$1" "$TEST_DIR/check.screen" && return 0
		keys check f
		sleep 0.3
	done
	wait_for check "$1" 2
}
test_case "check opens on the matrix and stays on the first failed check; f reaches node-3's" "
	wait_for check 'Finished: [0-9]+ nodes? failed' &&
	expect_grep ' reach ' check.screen &&
	expect_grep '── node-[13] · [a-z-]*: FAIL' check.screen &&
	expect_cell check node-3 preflight '✗' &&
	expect_cell check node-1 images-init '✗' &&
	expect_cell check node-1 cluster '✗' &&
	expect_cell check node-2 cluster 'n/a' &&
	f_until '── node-3 · preflight: FAIL' &&
	expect_grep '^observed  the inventory declares 1 GPU but 0 NVIDIA GPUs were found' check.screen &&
	keys check q &&
	expect_eq 1 \"\$(wait_rc check)\" 'exit status' &&
	expect_sane_terminal check
"
tb exec "$TB" node-2 touch /tmp/tui-fail

# ---- signals

gate close
run_up term

test_case "SIGTERM during a run: interrupted, the terminal restored" "
	wait_for term '^── node-1 · tui-gate › 10-wait' &&
	# The first stops after the current step (which waits), the second cancels it.
	kill -TERM \"\$(cat term.pid)\" &&
	sleep 0.5 &&
	kill -TERM \"\$(cat term.pid)\" 2>/dev/null || true &&
	expect_eq 130 \"\$(wait_rc term 15)\" 'exit status' &&
	expect_sane_terminal term
"

gate close
run_up crash

test_case "a crash (SIGSEGV) restores the terminal and keeps the signal's status" "
	wait_for crash '^── node-1 · tui-gate › 10-wait' &&
	kill -SEGV \"\$(cat crash.pid)\" &&
	expect_eq 139 \"\$(wait_rc crash 15)\" 'exit status (128 + SIGSEGV)' &&
	expect_sane_terminal crash
"

test_done
