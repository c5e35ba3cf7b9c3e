#!/bin/sh
# tests/caches.sh (`make test-caches`): build, before the tests need them,
# the cached trees and images the suite's testbeds start from -- the
# testbed's Debian 12 and 13 root file systems (tests/testbed/testbed.sh
# rootfs), the releases tier's trees of bookworm, trixie and sid
# (tests/releases/rootfs.sh), Debian's etcd packages (etcd-debs.sh) and the
# VM tier's node image (tests/vm/vm.sh image).  Each of them is built by the
# first test that needs it anyway, under its own lock; built here, ahead
# (.ci/run starts this in the background while it compiles), their minutes
# of downloading and unpacking use the time the tests leave the cores idle
# instead of stopping one test script each.
# Nothing is built twice: a cached item is only looked up, and a test that
# needs an item still being built here waits on its lock.
#
# Prints one line per item: its name, the seconds it took, and its path or
# why it failed (the builder's last lines).  Exits non-zero when one failed
# (the test that needs it will then fail with the same reason).  Skips the
# items whose tier cannot run here (not root: everything; the VM tier's
# reasons: tests/vm/lib-vm.sh).  Run as root.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 3
if [ "$(id -u)" != 0 ]; then
	echo "caches: skipped: needs root (debootstrap)"
	exit 0
fi
logs=${PROVISION_TEST_WORK:-$top/tests/.work}/caches
mkdir -p "$logs"

# item NAME CMD...: build one cached item, report it.
item() {
	i_name=$1
	shift
	i_t0=$(date +%s)
	if out=$("$@" 2>"$logs/$i_name.log"); then
		printf 'caches: %-20s %4ss  %s\n' "$i_name" $(($(date +%s) - i_t0)) "$(printf '%s' "$out" | tail -n 1)"
	else
		printf 'caches: %-20s %4ss  FAILED (%s):\n' "$i_name" $(($(date +%s) - i_t0)) "$logs/$i_name.log"
		tail -n 5 "$logs/$i_name.log" | sed 's/^/caches:     /'
		return 1
	fi
}

vm_why=$(
	# shellcheck disable=SC2034 # read by lib-vm.sh
	SRC_ROOT=$top
	# shellcheck source=tests/vm/lib-vm.sh
	. tests/vm/lib-vm.sh
	vm_skip_reason
)

t0=$(date +%s)
# One chain, in the order the suite first needs them: the Debian 12 testbed
# root (t0100, a minute into the suite) at normal priority, the others at
# nice 10 -- most of the suite keeps this machine's cores busy, and these
# are needed minutes later (the releases tier after the serial scripts'
# first half, Debian 13 nodes in the cluster block, the VM image at the
# end): they take what the tests leave idle instead of slowing them.
# Each builder takes one lock for its cache folder: a test that needs an
# item still being built here waits for it.
st=0
item testbed-bookworm tests/testbed/testbed.sh rootfs || st=1
for s in bookworm trixie sid; do
	item "release-$s" nice -n 10 sh tests/releases/rootfs.sh "$s" || st=1
done
item testbed-trixie env PROVISION_TESTBED_SUITE=trixie nice -n 10 tests/testbed/testbed.sh rootfs || st=1
item etcd-bookworm nice -n 10 sh tests/testbed/etcd-debs.sh bookworm || st=1
if [ -n "$vm_why" ]; then
	echo "caches: vm-image             skipped: $vm_why"
else
	item vm-image nice -n 10 tests/vm/vm.sh image || st=1
fi
echo "caches: done in $(($(date +%s) - t0))s$([ $st = 0 ] || echo ', some FAILED')"
exit $st
