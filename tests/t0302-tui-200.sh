#!/bin/sh
# t0302-tui-200: the live view with 200 nodes (chroot testbed nodes).
#
# `provision plan --phases prep` on 200 nodes runs four times in a 120x40
# tmux pane, alternating: in the TUI, with --no-tui, with --no-tui, in the
# TUI.  During the first, the grid must scroll and answer keys while the
# runner works (End, Home, v), within a bounded time.  Then the runner's
# own time (the summary line: plan_execute from the first connection to the
# last result) in the TUI must be no worse than with --no-tui, within the
# noise of a shared machine (15 % + 3 s).  The figures are printed as TAP
# comments (# ...) for the record.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$(dirname "$0")/lib-testbed.sh"
# shellcheck source=tests/lib-tui.sh
. "$(dirname "$0")/lib-tui.sh"

test_need_cmd tmux python3
tb_up --chroot 200 --timeout 60
INV=$TB_INV

# seconds NAME: the runner's time from the pane's summary line
# ("plan testbed: 200 nodes, ... 1m16s" / "12.3s" / "850ms").
seconds() {
	tm capture-pane -p -S -200 -t "$1" | python3 -c '
import re, sys
for line in sys.stdin:
    m = re.match(r"plan testbed: 200 nodes, .*, (?:(\d+)m(\d+)s|([\d.]+)s|(\d+)ms)$", line.strip())
    if m:
        mi, se, s, ms = m.groups()
        print(int(mi) * 60 + int(se) if mi else float(s) if s else int(ms) / 1000)
        sys.exit(0)
sys.exit("no summary line")'
}
# cpu NAME: user + system seconds of provision (the pane shell's children).
cpu() {
	sed -n 2p "$TEST_DIR/$1.times" | python3 -c '
import re, sys
t = [float(a or 0) * 60 + float(b) for a, b in re.findall(r"(?:(\d+)m)?([\d.]+)s", sys.stdin.read())]
print("%.1f" % sum(t))'
}
wall() { # wall NAME: seconds from start to end of provision
	python3 -c "print('%.1f' % (float(open('$TEST_DIR/$1.end').read()) - float(open('$TEST_DIR/$1.start').read())))"
}
latency() { # latency NAME KEY REGEX: seconds from the key to the screen showing REGEX
	t0=$(date +%s.%N)
	keys "$1" "$2"
	wait_for "$1" "$3" 10 >/dev/null || return 1
	python3 -c "print('%.2f' % ($(date +%s.%N) - $t0))"
}

run tui1 120 40 LANG=C.UTF-8 -- plan -i "$INV" --roles "$SRC_ROOT/roles" --phases prep

test_case "200 nodes: the grid scrolls and answers keys while the runner works" "
	wait_for tui1 '200 nodes │ .* running' 120 &&
	expect_grep '^ 1-[0-9]*/200' tui1.screen &&
	end=\$(latency tui1 End '^▶node-200 ') &&
	echo \"# End: node-200 selected and shown after \$end s\" >>latency.txt &&
	expect_grep '^ [0-9]*-200/200' tui1.screen &&
	[ ! -s tui1.rc ] &&
	home=\$(latency tui1 Home '^▶node-1 ') &&
	echo \"# Home: node-1 after \$home s\" >>latency.txt &&
	v=\$(latency tui1 v ' reach ') &&
	echo \"# v: the matrix after \$v s\" >>latency.txt &&
	back=\$(latency tui1 v 'PROGRESS') &&
	echo \"# v again: the grid after \$back s\" >>latency.txt &&
	python3 -c \"import sys; sys.exit(not max(\$end, \$home, \$v, \$back) < 1.5)\" ||
		{ echo \"a key took 1.5 s or more: \$end \$home \$v \$back\"; exit 1; }
"

cat "$TEST_DIR/latency.txt" 2>/dev/null

test_case "200 nodes in the TUI: the run ends by itself, terminal sane, summary printed" "
	expect_eq 0 \"\$(wait_rc tui1 900)\" 'exit status' &&
	wait_for tui1 '^exit status 0: every node ok' &&
	expect_sane_terminal tui1
"

run plain1 120 40 LANG=C.UTF-8 -- plan -i "$INV" --roles "$SRC_ROOT/roles" --phases prep --no-tui
rc_plain1=$(wait_rc plain1 900)
run plain2 120 40 LANG=C.UTF-8 -- plan -i "$INV" --roles "$SRC_ROOT/roles" --phases prep --no-tui
rc_plain2=$(wait_rc plain2 900)
run tui2 120 40 LANG=C.UTF-8 -- plan -i "$INV" --roles "$SRC_ROOT/roles" --phases prep
rc_tui2=$(wait_rc tui2 900)

A1=$(seconds tui1) A2=$(seconds tui2) B1=$(seconds plain1) B2=$(seconds plain2)
for r in tui1 plain1 plain2 tui2; do
	echo "# $r: runner $(seconds "$r") s, provision wall $(wall "$r") s, CPU (user+sys) $(cpu "$r") s"
done
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"

test_case "the runner in the TUI is no slower than with --no-tui (TUI $A1 s, $A2 s; --no-tui $B1 s, $B2 s)" "
	expect_eq '0 0 0' '$rc_plain1 $rc_plain2 $rc_tui2' 'exit statuses' &&
	python3 -c 'import sys; a = ($A1 + $A2) / 2; b = ($B1 + $B2) / 2; print(\"# mean: TUI %.1f s, --no-tui %.1f s\" % (a, b)); sys.exit(not a <= b * 1.15 + 3)'
"

test_done
