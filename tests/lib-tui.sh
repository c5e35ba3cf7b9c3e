# shellcheck shell=sh
# tests/lib-tui.sh: drive provision's terminal view in tmux, as a person would
# (htop drives itself in a virtual terminal).  Source after tests/lib.sh.
#
#   run NAME COLS ROWS [VAR=VALUE...] -- ARGS...   provision ARGS in a new tmux session
#   wait_for NAME REGEX [SECONDS]   poll the screen until it shows REGEX (grep -E)
#   wait_gone NAME REGEX [SECONDS]  ... until it no longer does
#   keys NAME KEY...                tmux send-keys
#   shot NAME                       the screen now, in $TEST_DIR/NAME.screen
#   cell NAME NODE COLUMN           what the grid shows in NODE's row under COLUMN
#   expect_cell NAME NODE COLUMN REGEX
#   wait_rc NAME [SECONDS]          provision's exit status, once it exited
#   expect_sane_terminal NAME       stty -a as before, cursor shown, main screen, keypad off
#
# Each session runs on a private tmux server (killed at exit).  The pane
# records `stty -a` before and after provision, provision's pid, its exit
# status, its start and end (date +%s.%N) and its CPU time (`times`: the
# second line is the children's user and system time) in $TEST_DIR/NAME.*,
# then prints a marker and waits.
# Test bodies chain their commands with && (lib.sh runs a body as the
# condition of an `if`, where `set -e` has no effect).
# The binary under test is copied first: a rebuild of the shared build/
# while a long test runs must not pull it away under the panes (pass --roles:
# the copy has no roles/ beside it).
cp "$PROVISION" "$TEST_DIR/provision" || exit 1
PROVISION=$TEST_DIR/provision

# The server's socket lives in the script's scratch directory: nothing is left behind.
SOCK=$TEST_DIR/tmux.sock
tm() { tmux -S "$SOCK" -f /dev/null "$@"; }
test_at_exit "tmux -S '$SOCK' kill-server"

# run NAME COLS ROWS [VAR=VALUE...] -- ARGS...: provision ARGS in a new
# session.  The pane writes NAME.stty-before/-after (stty -a), NAME.pid (of
# provision itself) and NAME.rc, then prints a marker and waits; a ^C sent to
# the pane (keys NAME C-c) reaches provision, not the pane's shell.
run() {
	name=$1 cols=$2 rows=$3
	shift 3
	envs=
	while [ "$1" != -- ]; do
		envs="$envs '$1'"
		shift
	done
	shift
	args=
	for a in "$@"; do args="$args '$a'"; done
	# The pane's shell survives a ^C (a person's interactive shell ignores it):
	# a caught signal is the default again in provision, which sets its own.
	cat >"$TEST_DIR/$name.sh" <<EOF
trap : INT
cd '$TEST_DIR'
stty -a >'$name.stty-before'
date +%s.%N >'$name.start'
sh -c 'echo \$\$ >$name.pid; exec "\$@"' sh env $envs '$PROVISION' $args
echo \$? >'$name.rc.tmp'
date +%s.%N >'$name.end'
times >'$name.times'
mv '$name.rc.tmp' '$name.rc'
stty -a >'$name.stty-after'
echo '--- pane done ---'
exec sleep 3600
EOF
	rm -f "$TEST_DIR/$name.rc" "$TEST_DIR/$name.pid" "$TEST_DIR/$name.times"
	tm new-session -d -s "$name" -x "$cols" -y "$rows" "sh '$TEST_DIR/$name.sh'"
}

shot() { # shot NAME: the screen now, into NAME.screen
	tm capture-pane -p -t "$1" >"$TEST_DIR/$1.screen"
}

# wait_for NAME EXTENDED-REGEX [SECONDS]: until the screen shows it.
wait_for() {
	deadline=$(($(date +%s) + ${3:-30}))
	while :; do
		shot "$1"
		grep -qE -- "$2" "$TEST_DIR/$1.screen" && return 0
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "timed out waiting for '$2' on the screen of $1:"
			sed 's/^/| /' "$TEST_DIR/$1.screen"
			return 1
		fi
		sleep 0.1
	done
}

wait_gone() { # wait_gone NAME REGEX [SECONDS]
	deadline=$(($(date +%s) + ${3:-30}))
	while :; do
		shot "$1"
		grep -qE -- "$2" "$TEST_DIR/$1.screen" || return 0
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "timed out waiting for '$2' to go from the screen of $1:"
			sed 's/^/| /' "$TEST_DIR/$1.screen"
			return 1
		fi
		sleep 0.1
	done
}

keys() { # keys NAME KEY...
	n=$1
	shift
	tm send-keys -t "$n" "$@"
}

# cell NAME NODE COLUMN: what the grid shows in that node's row under that
# column heading (headings alternate between two rows when they are long).
cell() {
	python3 - "$TEST_DIR/$1.screen" "$2" "$3" <<'EOF'
import re, sys
screen, node, label = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(screen, encoding="utf-8").read().split("\n")
heads = []
for row in lines[1:3]:
    # Headings of two words ("kube pkgs", "gpu alloc") are one heading.
    row = re.sub(r"\b(kube|gpu|last) (?=\S)", r"\1_", row)
    for m in re.finditer(r"\S+", row):
        heads.append((m.start(), m.group().replace("_", " ")))
stops = sorted(x for x, w in heads if w not in ("NODE", "ROLES", "GPU"))
xs = [x for x, w in heads if w == label or (w.endswith("\u2026") and label.startswith(w[:-1]))]
if not xs:
    sys.exit("no heading '%s' in: %r" % (label, lines[1:3]))
x = xs[0]
# the last column runs to the end of the row (its heading may be on either row)
end = min([s for s in stops if s > x] or [10 ** 6])
rows = [l for l in lines[3:] if l[1:].startswith(node + " ")]
if not rows:
    sys.exit("no row for '%s'" % node)
print(rows[0][x:end].strip())
EOF
}

expect_cell() { # expect_cell NAME NODE COLUMN GLYPH-REGEX
	got=$(cell "$1" "$2" "$3") || return 1
	printf '%s\n' "$got" | grep -qE -- "^($4)" || {
		echo "$2 / $3: expected '$4', the screen shows '$got':"
		sed 's/^/| /' "$TEST_DIR/$1.screen"
		return 1
	}
}

# wait_cell NAME NODE COLUMN GLYPH-REGEX [SECONDS]: until that cell shows it
# (nodes run at their own pace: one node reaching a step says nothing of the
# others).
wait_cell() {
	deadline=$(($(date +%s) + ${5:-30}))
	while :; do
		shot "$1"
		got=$(cell "$1" "$2" "$3") || return 1
		printf '%s\n' "$got" | grep -qE -- "^($4)" && return 0
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "timed out waiting for $2 / $3 to show '$4'; it shows '$got':"
			sed 's/^/| /' "$TEST_DIR/$1.screen"
			return 1
		fi
		sleep 0.1
	done
}

# The terminal after provision: as before, cursor shown, main screen, keypad off.
expect_sane_terminal() { # NAME [resized]: resized, the size on stty's first line may differ
	if [ "${2:-}" = resized ]; then
		sed 1d "$TEST_DIR/$1.stty-before" >"$TEST_DIR/$1.stty-before.modes"
		sed 1d "$TEST_DIR/$1.stty-after" >"$TEST_DIR/$1.stty-after.modes"
		diff -u "$TEST_DIR/$1.stty-before.modes" "$TEST_DIR/$1.stty-after.modes" || { echo "stty -a changed"; return 1; }
	else
		diff -u "$TEST_DIR/$1.stty-before" "$TEST_DIR/$1.stty-after" || { echo "stty -a changed"; return 1; }
	fi
	expect_eq 1 "$(tm display -p -t "$1" '#{cursor_flag}')" "cursor visible (tput cnorm)"
	expect_eq 0 "$(tm display -p -t "$1" '#{alternate_on}')" "back on the main screen"
	expect_eq 0 "$(tm display -p -t "$1" '#{keypad_cursor_flag}')" "cursor keys back in normal mode"
}

wait_rc() { # wait_rc NAME [SECONDS]: provision has exited; prints its exit status
	deadline=$(($(date +%s) + ${2:-30}))
	while [ ! -s "$TEST_DIR/$1.rc" ]; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "provision did not exit within ${2:-30} s; the screen:"
			shot "$1"
			sed 's/^/| /' "$TEST_DIR/$1.screen"
			return 1
		fi
		sleep 0.1
	done
	cat "$TEST_DIR/$1.rc"
}
