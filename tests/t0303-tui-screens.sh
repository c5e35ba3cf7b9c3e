#!/bin/sh
# t0303-tui-screens: the live view at 80x24, 120x40 and 200x60 as a person
# sees it, compared with the expected screens (issue 22).
#
# No nodes: tests/tools/tui-replay draws provision's own view (tui.h: the
# same model, layout and drawing) from a scripted `up` of lab B's first
# four nodes (tests/tui-screens/run.txt: facts from tests/facts, steps,
# output lines, a failed join), stopping at fixed points (after facts,
# mid-init, after flannel) until the test has read the screen.  Times and
# durations are masked; every heading on the two heading rows must be a
# whole phase name, its documented short form or a fixed heading (no two
# run together, nothing cut), and no line is wider than the terminal.
# A fourth view, started at 200x60, is made 80x24 mid-init (tmux
# resize-window: SIGWINCH) and must then show the 80x24 screen exactly.
# At the end, at 80x24, the validation matrix (v) as it opens and
# scrolled to its last column, and the role view (x), first as it opens and then scrolled to its
# last column: their titles are check and role names or the short forms
# provision(1) lists, none cut at the right edge.
# Seconds, no testbed: CI's time is tight.  REGEN=1 writes the expected
# screens from this build (read them before committing them).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
PROVISION=$BUILD/tests/tools/tui-replay
# shellcheck source=tests/lib-tui.sh
. "$(dirname "$0")/lib-tui.sh"

test_need_cmd tmux python3
DATA=$SRC_ROOT/tests/tui-screens
SIZES="80x24 120x40 200x60"
POINTS="facts init cni"

# Each pane's replay ends at q; one the test did not reach is killed at exit.
test_at_exit "for f in '$TEST_DIR'/*.pid; do [ -f \"\$f\" ] && kill \"\$(cat \"\$f\")\" 2>/dev/null; done; true"
for s in $SIZES; do
	sed "s#@FACTS@#$SRC_ROOT/tests/facts#; s#@HOLD@#$TEST_DIR/$s.hold#" "$DATA/run.txt" >"$TEST_DIR/$s.run"
	run "s$s" "${s%x*}" "${s#*x}" LANG=C.UTF-8 -- "$DATA/inventory.yaml" "$SRC_ROOT/roles" "$TEST_DIR/$s.run"
done
# One more, started at 200x60 and made 80x24 while it holds mid-init.
sed "s#@FACTS@#$SRC_ROOT/tests/facts#; s#@HOLD@#$TEST_DIR/rs.hold#" "$DATA/run.txt" >"$TEST_DIR/rs.run"
run rs 200 60 LANG=C.UTF-8 -- "$DATA/inventory.yaml" "$SRC_ROOT/roles" "$TEST_DIR/rs.run"

# mask FILE: times and durations out (the title row after 'elapsed' or 'took'),
# and the rule that fills the pane's title row after them (its length follows
# theirs: 9.8s, 10.2s), trailing blanks off
mask() {
	sed -E 's/~?([0-9]+h)?([0-9]+m)?[0-9]+(\.[0-9]+)?(ms|s)\b/<t>/g; 1s/ (elapsed|took) .*/ \1 <t>/; /^── /s/ ─+$/ ─<fill>/; s/ +$//' "$1"
}

# headings SCREEN COLS [KIND]: every word of the heading rows is a heading; no line wider
# than COLS.  KIND phases (the grid): a phase's name or its short form; checks or roles
# (the matrix, the role view): a check's or a role's name, or a short form provision(1)
# lists as "short (name)".  The scroll marks beside the titles are not words.
headings() {
	python3 - "$1" "$2" "${3:-phases}" "$SRC_ROOT/doc/provision.1" "$SRC_ROOT/roles" <<'PY'
import os, re, sys
screen, cols, kind, man, roles = sys.argv[1:6]
lines = open(screen, encoding="utf-8").read().split("\n")
ok = {"NODE", "ROLES", "GPU", "PROGRESS", "PROG", "ETA"}
if kind == "phases":
    ok |= {"prep", "kube-packages", "nfs", "init", "cni", "join", "addons", "validate",
           "kube", "addon", "valid"}
else:
    # THE LIVE VIEW in provision(1), its roff requests and escapes out
    text = open(man, encoding="utf-8").read()
    text = text[text.index(".SH THE LIVE VIEW"):]
    text = text[:text.index("\n.SH", 1)]
    text = " ".join(re.sub(r"^\.[A-Z]+ ?", "", l) for l in text.split("\n")).replace("\\-", "-")
    ok |= {w for pair in re.findall(r'([^\s(),"]+) \(([a-z][a-z0-9@#-]*)\)', text) for w in pair}
    ok |= set(os.listdir(roles)) | {"reach", "gpus", "facts", "preflight", "validate"}
bad = [w for row in lines[1:3] for w in re.sub("[\u2039\u203a]", " ", row).split() if w not in ok]
wide = [l for l in lines if len(l) > int(cols)]
if bad or wide:
    sys.exit("headings run together or cut: %r; lines too wide: %r" % (bad, wide))
PY
}

for p in $POINTS; do
	# The replay goes on (its hold file) whatever this point found.
	test_case "at $p: the screens at $SIZES are as expected" "
		rc=0
		for s in $SIZES; do
			wait_for s\$s '^── ' 20 >/dev/null
			sleep 0.3
			shot s\$s
			touch '$TEST_DIR/'\$s.hold.$p
			cp s\$s.screen \$s-$p.screen
			mask s\$s.screen >\$s.$p
			headings s\$s.screen \${s%x*} || rc=1
			if [ -n \"\${REGEN:-}\" ]; then cp \$s.$p '$DATA/'\$s.$p; fi
			diff -u '$DATA/'\$s.$p \$s.$p || rc=1
		done
		[ \$rc = 0 ]
	"
done

test_case "a resize from 200x60 to 80x24 mid-init: the screen is the one an 80x24 terminal shows there, nothing left of the wide one" "
	touch '$TEST_DIR/rs.hold.facts'
	wait_for rs 'kubeadm-init › 30-init' 20 >/dev/null
	sleep 0.3
	tm resize-window -t rs -x 80 -y 24
	sleep 1
	shot rs
	mask rs.screen >rs.init
	headings rs.screen 80
	diff -u '$DATA/80x24.init' rs.init
	touch '$TEST_DIR/rs.hold.init' '$TEST_DIR/rs.hold.cni'
	wait_for rs 'Finished: 1 node failed' 20 && keys rs q &&
	expect_eq 0 \"\$(wait_rc rs)\" 'exit status after the resize' && expect_sane_terminal rs resized
"

test_case "mid-init: the cells are the phases' states with the changed steps; the pane says what it shows" "
	expect_cell 120x40-init node-1 prep '\\+5' &&
	expect_cell 120x40-init node-2 nfs '\\+3' &&
	expect_cell 120x40-init node-1 init '▸30-' &&
	expect_cell 120x40-init node-2 init '' &&
	expect_cell 80x24-init node-3 prep '▸5' &&
	grep -q '^── node-1 · kubeadm-init › 30-init · ' 120x40.init &&
	grep -q '^prep:  facts ✓  preflight ✓  kernel +2  containerd +2  swap-off +1' 120x40.init &&
	grep -q '^── node-1 · log, last flannel › 20-running: unchanged ─' 120x40.cni
"

# at_end NAME: the 80x24 screen now, masked, into NAME, its headings checked (KIND
# $2) and compared with the expected screen (REGEN=1: written).
at_end() {
	shot s80x24 &&
	cp s80x24.screen "80x24-$1.screen" &&
	mask s80x24.screen >"80x24.$1" &&
	headings s80x24.screen 80 "$2" &&
	if [ -n "${REGEN:-}" ]; then cp "80x24.$1" "$DATA/80x24.$1"; fi &&
	diff -u "$DATA/80x24.$1" "80x24.$1"
}

test_case "the end at 80x24, the matrix (v) as it opens and scrolled to its last column: every title on screen whole or its documented short form, none cut at the right edge" "
	wait_for s80x24 'Finished: 1 node failed' 20 >/dev/null &&
	keys s80x24 v && wait_for s80x24 '^── node-4 · reachable' 10 >/dev/null && sleep 0.3 &&
	at_end checks checks &&
	for i in \$(seq 30); do keys s80x24 l; done &&
	wait_for s80x24 '^── node-4 · nfs-provisioner' 10 >/dev/null && sleep 0.3 &&
	at_end checks-end checks
"

test_case "the end at 80x24, the role view (x): nodes x roles, the failed role selected, the pane naming the node and the role; every title whole or its documented short form" "
	keys s80x24 x && wait_for s80x24 '^── node-4 · kubeadm-join: failed' 10 >/dev/null && sleep 0.3 &&
	at_end roles roles &&
	expect_cell 80x24-roles node-4 join '✗1' &&
	expect_cell 80x24-roles node-1 init '\\+3' &&
	expect_cell 80x24-roles node-2 nfs-srv '\\+3' &&
	grep -q '^fix: check the token' 80x24.roles
"

test_case "the role view scrolled to its last column: validate whole at the right edge; Esc goes back to the phases" "
	for i in \$(seq 30); do keys s80x24 l; done &&
	wait_for s80x24 '^── node-4 · validate' 10 >/dev/null && sleep 0.3 &&
	at_end roles-end roles &&
	keys s80x24 Escape && wait_for s80x24 'PROGRESS' 10 >/dev/null
"

test_case "the end: the failed join, q leaves, the terminal is as before" "
	for s in $SIZES; do wait_for s\$s 'Finished: 1 node failed' 20 && keys s\$s q || exit 1; done &&
	expect_cell s120x40 node-4 join '✗' &&
	for s in $SIZES; do expect_eq 0 \"\$(wait_rc s\$s)\" \"exit status at \$s\" && expect_sane_terminal s\$s || exit 1; done
"

test_done
