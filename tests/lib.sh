# shellcheck shell=sh
# tests/lib.sh: the harness every tests/tNNNN-*.sh sources (git's t/test-lib.sh shape).
#
# A test script calls `test_case DESCRIPTION COMMANDS` (COMMANDS run in a
# subshell with `set -e`), `test_skip DESCRIPTION REASON`, and `test_done`
# at the end.  Output is TAP; tests/run.sh counts it for the one summary line.
# Helpers: test_need_root, test_need_cmd CMD, test_need_upstream [FILE]
# (skip the whole script when missing), and $PROVISION (the binary under test), $BUILD (the build tree
# it comes from: BUILD_DIR, default build/; its test tools are under
# $BUILD/tests/tools), $TEST_DIR (this script's scratch directory, removed at
# exit unless PROVISION_TEST_KEEP=1).
# PROVISION_TEST_TRACE=1 traces every command of the bodies (set -x) into
# the failure output.

TESTS_ROOT=$(cd "$(dirname "$0")" && pwd)
SRC_ROOT=$(cd "$TESTS_ROOT/.." && pwd)
BUILD=${BUILD_DIR:-build}
case $BUILD in /*) ;; *) BUILD=$SRC_ROOT/$BUILD ;; esac
PROVISION=${PROVISION:-$BUILD/provision}
test_name=$(basename "$0" .sh)
# One folder per run (the pid), so that two runs of one script never share it.
TEST_DIR=${PROVISION_TEST_WORK:-$SRC_ROOT/tests/.work}/$test_name.$$
rm -rf "$TEST_DIR"
mkdir -p "$TEST_DIR"
test_count=0
test_failed=0
test_verbose=${PROVISION_TEST_VERBOSE:-0}
# SECONDS<TAB>SCRIPT<TAB>CASE<TAB>DESCRIPTION per case (tests/run.sh prints the slowest)
test_times=${PROVISION_TEST_WORK:-$SRC_ROOT/tests/.work}/case-times.tsv

# test_at_exit CMD: run CMD when the script ends, however it ends (LIFO).
# The hooks are kept in a file, not a variable: test_case bodies run in a
# subshell, and a server a body starts must be stopped all the same.
test_hooks=$TEST_DIR/.at-exit
: >"$test_hooks"
test_at_exit() {
	printf '%s\n' "$1" >>"$test_hooks"
}
test_run_cleanup() {
	if [ -f "$test_hooks" ]; then
		# LIFO: the last registered runs first
		awk '{ l[NR] = $0 } END { for (i = NR; i > 0; i--) print l[i] }' "$test_hooks" |
			while IFS= read -r hook; do
				[ -n "$hook" ] && eval "$hook" >/dev/null 2>&1
			done
		: >"$test_hooks"
	fi
	[ "${PROVISION_TEST_KEEP:-0}" = 1 ] || rm -rf "$TEST_DIR"
}
trap 'test_run_cleanup' EXIT
trap 'exit 130' INT TERM

test_case() {
	desc=$1
	body=$2
	test_count=$((test_count + 1))
	out="$TEST_DIR/case-$test_count.out"
	case_t0=$(date +%s)
	# Not `if (...)`: set -e is ignored in a condition, and every command
	# of a body must count, not only its last one.
	(
		cd "$TEST_DIR" || exit 1
		set -e
		[ "${PROVISION_TEST_TRACE:-0}" = 1 ] && set -x
		eval "$body"
	) >"$out" 2>&1
	# shellcheck disable=SC2181 # `if (...)` or `(...) || ...` would disable set -e inside
	case_rc=$?
	# every case's seconds, for tests/run.sh's list of the slowest
	printf '%s\t%s\t%s\t%.60s\n' "$(($(date +%s) - case_t0))" "$test_name" "$test_count" "$desc" \
		>>"$test_times" 2>/dev/null || :
	if [ "$case_rc" = 0 ]; then
		echo "ok $test_count - $desc"
		[ "$test_verbose" = 1 ] && sed 's/^/#   /' "$out"
	else
		echo "not ok $test_count - $desc"
		test_failed=$((test_failed + 1))
		sed 's/^/#   /' "$out" | tail -n 40
	fi
	return 0
}

test_skip() {
	test_count=$((test_count + 1))
	echo "ok $test_count - $1 # skip $2"
}

# Skip every case of the script (call before any test_case).
test_skip_all() {
	echo "1..0 # skip $1"
	trap - EXIT
	rm -rf "$TEST_DIR"
	exit 0
}

test_need_root() {
	[ "$(id -u)" = 0 ] || test_skip_all "needs root (network namespaces)"
}

test_need_cmd() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || test_skip_all "needs $c"
	done
}

# $UPSTREAM: the real tools' and charts' definitions beside the repository
# (../shared/upstream, its README.md says where each file comes from): the
# team's reference data, not part of the product nor of a bare clone.  What
# the demo and the stand-ins need is the project's own (tests/fakes/cli);
# a test that compares with $UPSTREAM skips, saying so, without it.
UPSTREAM=${PROVISION_UPSTREAM:-$SRC_ROOT/../shared/upstream}
UPSTREAM_WHY="team reference data, not part of a bare clone"
# test_have_upstream [FILE...]: true when $UPSTREAM and those files under it
# exist; else false, with the reason in $UPSTREAM_MISSING (for test_skip).
test_have_upstream() {
	if [ ! -d "$UPSTREAM" ]; then
		UPSTREAM_MISSING="needs $UPSTREAM ($UPSTREAM_WHY)"
		return 1
	fi
	for f in "$@"; do
		if [ ! -e "$UPSTREAM/$f" ]; then
			UPSTREAM_MISSING="needs $UPSTREAM/$f ($UPSTREAM_WHY; ../shared/upstream/README.md)"
			return 1
		fi
	done
}
# test_need_upstream [FILE...]: skip the whole script, saying so, when
# $UPSTREAM (or one of those files under it) is absent.
test_need_upstream() {
	test_have_upstream "$@" || test_skip_all "$UPSTREAM_MISSING"
}

test_done() {
	echo "1..$test_count"
	[ "$test_failed" = 0 ]
}

# Assertions for use inside test_case bodies; each prints what it saw on failure.
expect_eq() { # expect_eq EXPECTED ACTUAL [WHAT]
	if [ "$1" != "$2" ]; then
		printf 'expected %s: %s\n     got: %s\n' "${3:-value}" "$1" "$2"
		return 1
	fi
}
expect_status() { # expect_status N CMD...
	want=$1
	shift
	set +e
	"$@"
	got=$?
	set -e
	if [ "$got" != "$want" ]; then
		echo "expected exit status $want from: $*; got $got"
		return 1
	fi
}
# run_tail FILE: what a failed provision run printed, for the case's
# failure output (which keeps its last 40 lines): the summary, the failed
# steps and the hints, without the steps that went well (a run's hundreds
# of "… changed" lines hid the reason in CI's log).
run_tail() {
	grep -v '^\[[^]]*\] .* … \(changed\|pulled\|skipped\|unchanged\|ok\)\b' "$1" | tail -n 30
}
expect_grep() { # expect_grep PATTERN FILE
	grep -q -e "$1" "$2" || { echo "'$1' not found in $2:"; sed 's/^/| /' "$2" | head -40; return 1; }
}
expect_no_grep() { # expect_no_grep PATTERN FILE
	if grep -n -e "$1" "$2"; then echo "'$1' unexpectedly found in $2"; return 1; fi
}
