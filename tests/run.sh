#!/bin/sh
# tests/run.sh: run the whole suite and end with one line
#   N passed, N failed, N skipped
# Unit binaries (cmocka, TAP output) and tests/tNNNN-*.sh scripts (TAP via
# tests/lib.sh).  PROVISION_TEST_TIERS=unit runs only the unit binaries;
# PROVISION_TESTS="t0001 t0003" runs only the named scripts;
# PROVISION_TESTS_SKIP="t0412" leaves the named ones out (counted as skipped).
# Exits non-zero on any failure, or when no test ran at all.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 3
build=${BUILD_DIR:-build}
log_dir=tests/.work
mkdir -p "$log_dir"
pass=0 fail=0 skip=0
failed_names=

count() { # count NAME LOGFILE EXIT_STATUS
	name=$1 log=$2 rc=$3
	p=$(grep -cE '^ok [0-9]+' "$log" | head -n1)
	s=$(grep -cE '^ok [0-9]+.*# *(skip|SKIP)' "$log" | head -n1)
	f=$(grep -cE '^not ok [0-9]+' "$log" | head -n1)
	# A script that skipped itself entirely.
	p=$((p - s))
	# A script that skipped itself entirely (TAP "1..0 # skip").
	if grep -qE '^1\.\.0 # skip' "$log"; then
		s=$((s + 1))
	fi
	# A crash or non-zero exit without a "not ok" is still a failure.
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		echo "# $name exited with status $rc"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$f" != 0 ]; then
		failed_names="$failed_names $name"
		grep -E '^not ok|^#' "$log" | head -n 60
	fi
	printf '%-36s %3d passed, %d failed, %d skipped\n' "$name" "$p" "$f" "$s"
}

for bin in "$build"/tests/test_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	log="$log_dir/$name.log"
	CMOCKA_MESSAGE_OUTPUT=TAP "$bin" >"$log" 2>&1
	count "$name" "$log" $?
done

if [ "${PROVISION_TEST_TIERS:-all}" != unit ]; then
	for t in tests/t[0-9][0-9][0-9][0-9]-*.sh; do
		[ -f "$t" ] || continue
		name=$(basename "$t" .sh)
		if [ -n "${PROVISION_TESTS:-}" ]; then
			case " $PROVISION_TESTS " in *" ${name%%-*} "*) ;; *) continue ;; esac
		fi
		# PROVISION_TESTS_SKIP="t0412 t0426": left out, counted as skipped.
		case " ${PROVISION_TESTS_SKIP:-} " in
		*" ${name%%-*} "*)
			skip=$((skip + 1))
			printf '%-36s left out (PROVISION_TESTS_SKIP)\n' "$name"
			continue
			;;
		esac
		log="$log_dir/$name.log"
		start=$(date +%s)
		sh "$t" >"$log" 2>&1
		rc=$?
		count "$name ($(( $(date +%s) - start ))s)" "$log" $rc
	done
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

[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ] && [ $((pass + skip)) -gt 0 ] && [ "$pass" -gt 0 ]
