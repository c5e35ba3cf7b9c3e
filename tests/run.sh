#!/bin/sh
# tests/run.sh: run the whole suite and end with one line
#   N passed, N failed, N skipped
# Unit binaries (cmocka, TAP output) and tests/tNNNN-*.sh scripts (TAP via
# tests/lib.sh).  PROVISION_TEST_TIERS=unit runs only the unit binaries;
# PROVISION_TESTS="t0001 t0003" runs only the named scripts;
# PROVISION_TESTS_SKIP="t0412" leaves the named ones out (counted as skipped).
# Exits non-zero on any failure, or when no test ran at all.
#
# A script whose header has the line "# run.sh: beside others" may run
# beside other such scripts, PROVISION_TEST_JOBS at a time (default 2): the
# cluster scripts (t04NN), most of whose time is their stand-ins' and
# nodes' waiting, and a few short scripts that mostly wait for their own
# timeouts and time nothing tightly (t0120, t0200, t0272, t0500, t0510: in
# the block they fill the slots the long ones leave at its end); each has
# its own scratch folder, testbed subnet, bridge and ports.  Every other script runs alone (the TUI
# scripts time keys and cells, the VM tier's QEMU/TCG guests want every
# core, others time their own timeouts).  Results are printed as scripts
# finish.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 3
build=${BUILD_DIR:-build}
log_dir=tests/.work
mkdir -p "$log_dir"
pass=0 fail=0 skip=0
failed_names=

count() { # count NAME LOGFILE EXIT_STATUS
	c_name=$1 c_log=$2 c_rc=$3
	p=$(grep -cE '^ok [0-9]+' "$c_log" | head -n1)
	s=$(grep -cE '^ok [0-9]+.*# *(skip|SKIP)' "$c_log" | head -n1)
	# cmocka's TAP prints a skip() as "not ok N # SKIP name": a skip.
	cs=$(grep -cE '^not ok [0-9]+ # *(skip|SKIP)' "$c_log" | head -n1)
	f=$(grep -cE '^not ok [0-9]+' "$c_log" | head -n1)
	f=$((f - cs))
	# A script that skipped itself entirely.
	p=$((p - s))
	# A script that skipped itself entirely (TAP "1..0 # skip").
	if grep -qE '^1\.\.0 # skip' "$c_log"; then
		s=$((s + 1))
	fi
	# A crash or non-zero exit without a "not ok" is still a failure.
	if [ "$c_rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		echo "# $c_name exited with status $c_rc"
	fi
	s=$((s + cs))
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$f" != 0 ]; then
		failed_names="$failed_names $c_name"
		grep -E '^not ok|^#' "$c_log" | head -n 60
	fi
	printf '%-36s %3d passed, %d failed, %d skipped\n' "$c_name" "$p" "$f" "$s"
}

case_times=${PROVISION_TEST_WORK:-$top/tests/.work}/case-times.tsv
rm -f "$case_times"
for bin in "$build"/tests/test_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	log="$log_dir/$name.log"
	CMOCKA_MESSAGE_OUTPUT=TAP "$bin" >"$log" 2>&1
	count "$name" "$log" $?
done

jobs=${PROVISION_TEST_JOBS:-2}
case $jobs in '' | *[!0-9]* | 0) echo "PROVISION_TEST_JOBS: expected a number >= 1, got '$jobs'" >&2; exit 2 ;; esac
running= # names of the scripts running in the background

# reap: count every background script that has finished.
reap() {
	still=
	for r in $running; do
		if [ -f "$log_dir/$r.rc" ]; then
			read -r r_rc r_secs <"$log_dir/$r.rc"
			rm -f "$log_dir/$r.rc"
			count "$r (${r_secs}s)" "$log_dir/$r.log" "$r_rc"
		else
			still="$still $r"
		fi
	done
	running=$still
}
# wait_slots N: until at most N scripts run in the background.
wait_slots() {
	while :; do
		reap
		n=0
		for r in $running; do n=$((n + 1)); done
		[ "$n" -gt "$1" ] || return 0
		sleep 1
	done
}
# start SCRIPT NAME: run it in the background; NAME.rc gets "STATUS SECONDS".
start() {
	rm -f "$log_dir/$2.rc"
	(
		t0=$(date +%s)
		sh "$1" >"$log_dir/$2.log" 2>&1
		rc=$?
		echo "$rc $(($(date +%s) - t0))" >"$log_dir/$2.rc.tmp" && mv "$log_dir/$2.rc.tmp" "$log_dir/$2.rc"
	) &
	running="$running $2"
}

# run_beside SCRIPT / run_alone SCRIPT: start it beside others, or alone
# after every other.
run_beside() {
	wait_slots $((jobs - 1))
	start "$1" "$(basename "$1" .sh)"
}
run_alone() {
	wait_slots 0
	start "$1" "$(basename "$1" .sh)"
	wait_slots 0
}

if [ "${PROVISION_TEST_TIERS:-all}" != unit ]; then
	# The scripts that run alone run first, in file order, then the ones
	# that run beside others as one block, longest first (their "# run.sh:
	# about N s" line, CI's figure): two slots end closest together when
	# the long ones start first (in file order, t0462 ran alone for the
	# last ~8 minutes); then the VM tier (t09NN), alone: its QEMU/TCG
	# guests want every core.
	before='' beside='' after=''
	for t in tests/t[0-9][0-9][0-9][0-9]-*.sh; do
		[ -f "$t" ] || continue
		name=$(basename "$t" .sh)
		if [ -n "${PROVISION_TESTS:-}" ]; then
			case " $PROVISION_TESTS " in *" ${name%%-*} "*) ;; *) continue ;; esac
		fi
		# PROVISION_TESTS_SKIP="t0412 t0450": left out, counted as skipped.
		case " ${PROVISION_TESTS_SKIP:-} " in
		*" ${name%%-*} "*)
			skip=$((skip + 1))
			printf '%-36s left out (PROVISION_TESTS_SKIP)\n' "$name"
			continue
			;;
		esac
		if grep -q '^# run.sh: beside others' "$t"; then
			cost=$(sed -n 's/^# run.sh: about \([0-9][0-9]*\) s.*/\1/p' "$t" | head -n 1)
			beside="$beside${cost:-0} $t
"
		else
			case $name in
			t09[0-9][0-9]-*) after="$after $t" ;;
			*) before="$before $t" ;;
			esac
		fi
	done
	for t in $before; do run_alone "$t"; done
	for t in $(printf '%s' "$beside" | sort -k1,1nr -k2,2 | cut -d ' ' -f 2); do run_beside "$t"; done
	for t in $after; do run_alone "$t"; done
	wait_slots 0
	wait
fi

# Every test ends every process it starts: whatever still names this tree's
# work folder on its command line is a leak, listed and counted a failure.
work=${PROVISION_TEST_WORK:-$(pwd)/tests/.work}
if command -v pgrep >/dev/null 2>&1 && left=$(pgrep -af -- "$work/" | grep -v "pgrep -af") &&
	[ -n "$left" ]; then
	echo "# processes the tests left running (their command line names $work):"
	printf '%s\n' "$left" | sed 's/^/#   /'
	fail=$((fail + 1))
	failed_names="$failed_names leftover-processes"
fi

# The slowest cases (tests/lib.sh writes each case's seconds): where the
# suite's time goes, in CI's output too.
if [ -s "$case_times" ]; then
	echo "# the slowest cases (seconds, script, case):"
	sort -t "$(printf '\t')" -k1,1nr "$case_times" | head -n 15 |
		awk -F '\t' '{ printf "#   %5d  %s %s: %s\n", $1, $2, $3, $4 }'
fi
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ] && [ $((pass + skip)) -gt 0 ] && [ "$pass" -gt 0 ]
