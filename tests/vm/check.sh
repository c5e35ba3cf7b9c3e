#!/bin/sh
# tests/vm/check.sh (`make vm-check`): the VM tier alone.  Builds the node
# image unless it is cached (timed), then runs each tests/tNNNN-vm-*.sh and
# ends, as tests/run.sh does, with one line
#   N passed, N failed, N skipped
# Logs: tests/.work/NAME.log.  Exits non-zero on any failure.
set -u
# every VM scenario, the fault scenarios too (tests/t0930-vm-faults.sh)
PROVISION_TEST_VM_FAULTS=1
export PROVISION_TEST_VM_FAULTS
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 3
mkdir -p tests/.work
pass=0 fail=0 skip=0 failed_names=
all_start=$(date +%s)

# The same reasons the scripts skip for (tests/vm/lib-vm.sh).
why=$(
	SRC_ROOT=$top
	. tests/vm/lib-vm.sh
	vm_skip_reason
)
if [ -z "$why" ]; then
	start=$(date +%s)
	if tests/vm/vm.sh image >tests/.work/vm-image.log 2>&1; then
		printf '%-36s %s\n' "vm image" "ready in $(($(date +%s) - start))s: $(tail -n 1 tests/.work/vm-image.log)"
		grep '^vm: ' tests/.work/vm-image.log | sed 's/^/  /'
	else
		echo "vm image: build failed (tests/.work/vm-image.log):"
		tail -n 20 tests/.work/vm-image.log
		fail=$((fail + 1))
		failed_names=" vm-image"
	fi
else
	echo "VM tier skipped: $why"
fi

for t in tests/t[0-9][0-9][0-9][0-9]-vm-*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	log=tests/.work/$name.log
	start=$(date +%s)
	sh "$t" >"$log" 2>&1
	rc=$?
	p=$(grep -cE '^ok [0-9]+' "$log")
	s=$(grep -cE '^ok [0-9]+.*# *(skip|SKIP)' "$log")
	f=$(grep -cE '^not ok [0-9]+' "$log")
	p=$((p - s))
	# A script that skipped itself entirely (its plan says 1..0).
	if grep -qE '^1\.\.0 # skip' "$log"; then
		s=$((s + 1))
	fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$f" != 0 ]; then
		failed_names="$failed_names $name"
		grep -E '^not ok|^#' "$log" | head -n 60
	fi
	printf '%-36s %3d passed, %d failed, %d skipped\n' "$name ($(($(date +%s) - start))s)" "$p" "$f" "$s"
	grep -E '^# time: ' "$log" | sed 's/^# time: /  /'
done

echo "VM tier: $(($(date +%s) - all_start))s"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ] && [ $((pass + skip)) -gt 0 ]
