#!/bin/sh
# run.sh: beside others (tests/run.sh: an nspawn testbed of its own; nothing here times itself tightly)
# run.sh: about 19 s in CI (beside another; tests/run.sh starts the longest first)
# t0272-containerd-release: `containerd: release` (roles/containerd-release)
# on a testbed node (Debian 12, whose own containerd 1.6 package is
# installed): `provision up --phases prep` installs containerd from a
# release archive and runs it under provision's unit, roles/containerd
# writes the version 3 configuration for it, and the real daemon judges
# that: `ctr version` (server 2.x), `containerd config dump` (runc with
# SystemdCgroup = true), `ctr plugins ls` (the CRI plugins ok).
#
# The archive: containerd's real archive cannot be downloaded here, so one
# in its layout is made from Debian sid's containerd 2.1
# (tests/releases/containerd-archive.sh), with the node's own runc as
# runc.amd64.  The test's copy of roles/
# pins their SHA-256 in artifacts.yaml, and the artifact cache holds them,
# as `provision fetch` leaves it.  Also: the Debian package stays installed
# (nothing a user had is lost), a second run changes nothing, a binary
# changed on the node is put back, and a node whose inventory arch is not
# the machine's gets (is fetched) that arch's archives and is refused by
# preflight with the fix.
#
# Knob: PROVISION_TEST_RELEASES=0 skips it (as t0270: the ASan pass).
# shellcheck disable=SC2016 # test bodies are single-quoted: lib.sh evaluates them
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$(dirname "$0")/lib-testbed.sh"

[ "${PROVISION_TEST_RELEASES:-1}" != 0 ] || test_skip_all "PROVISION_TEST_RELEASES=0"
test_need_root
test_need_cmd python3 debootstrap flock tar
tb_up --nspawn 1 --chroot 0
x() { "$TESTBED" exec "$TB" node-1 "$@"; }
export TB TESTBED

# The archives, in the release layout, and the roles pinning them.
FILES=$TEST_DIR/files
CACHE=$TEST_DIR/cache
ROLES=$TEST_DIR/roles
mkdir -p "$FILES" "$CACHE/sha256"
x cat /usr/sbin/runc >"$TEST_DIR/node-runc"
sh "$SRC_ROOT/tests/releases/containerd-archive.sh" "$FILES" "$TEST_DIR/node-runc" 2>"$TEST_DIR/archive.err" || {
	cat "$TEST_DIR/archive.err"
	exit 1
}
tar -xzf "$FILES/containerd-2.4.1-linux-amd64.tar.gz" -C "$FILES" bin/ctr
cp -R "$SRC_ROOT/roles" "$ROLES"
for f in containerd-2.4.1-linux-amd64.tar.gz runc.amd64; do
	h=$(sha256sum <"$FILES/$f" | cut -c1-64)
	cp "$FILES/$f" "$CACHE/sha256/$h"
	case $f in
	containerd*) name=containerd-linux-amd64 ;;
	*) name=runc-amd64 ;;
	esac
	sed -i "/^$name:\$/,/^\$/s/^  sha256: .*/  sha256: $h/" "$ROLES/artifacts.yaml"
done
PROVISION_CACHE=$CACHE
export PROVISION_CACHE
sed 's/^  kubernetes_version: .*/&\n  containerd: release/' "$TB_INV" >"$TEST_DIR/inv.yaml"
grep -q "^  containerd: release$" "$TEST_DIR/inv.yaml" || { echo "# cannot write the inventory"; exit 1; }
# shellcheck disable=SC2034 # used in the single-quoted test bodies
P="--roles $ROLES --no-tui"

test_case "up --phases prep: containerd from the release archive, running under provision's unit" '
	"$PROVISION" up -i "$TEST_DIR/inv.yaml" $P --phases prep >up1.out 2>&1 || { cat up1.out; exit 1; }
	cat up1.out
	expect_grep "containerd-release › 10-install … changed" up1.out
	expect_grep "containerd-release › 20-service … changed" up1.out
	x /usr/local/bin/containerd --version >v
	expect_grep " 2\.1\." v
	x sh -c "readlink /proc/\$(systemctl show -p MainPID --value containerd)/exe" >exe
	expect_eq /usr/local/bin/containerd "$(cat exe)" "the running containerd"
	expect_eq /etc/systemd/system/containerd.service "$(x systemctl show -p FragmentPath --value containerd)" "the unit"
	x cmp /var/lib/provision/artifacts/runc /usr/local/sbin/runc
'

test_case "roles/containerd wrote version 3; the real containerd 2 loads it: server 2.x, runc with SystemdCgroup, CRI plugins ok" '
	x sed -n "/^version/p" /etc/containerd/config.toml >ver
	expect_eq "version = 3" "$(cat ver)" "config.toml"
	x ctr version >ctrv
	sed "s/^/# /" ctrv
	expect_grep "^Server:" ctrv
	awk "/^Server:/ { s = 1 } s && /Version:/ { print \$2; exit }" ctrv >sv
	expect_grep "^v*2\." sv
	x containerd config dump >dump
	awk "/runtimes.runc.options\]/ { o = 1 } o && /SystemdCgroup/ { print; exit }" dump >sc
	expect_grep "SystemdCgroup = true" sc
	x ctr plugins ls >plugins
	grep "cri" plugins | sed "s/^/# /"
	expect_grep "^io.containerd.cri.v1  *runtime  *.* ok" plugins
	expect_grep "^io.containerd.grpc.v1  *cri  *.* ok" plugins
'

test_case "the Debian package is still installed, its binary untouched; /usr/local/bin comes first" '
	expect_eq ii "$(x dpkg-query -W -f "\${db:Status-Abbrev}" containerd | cut -c1-2)" "the containerd package"
	x /usr/bin/containerd --version >dv
	expect_grep " 1\.6\." dv
	expect_eq /usr/local/bin/containerd "$(x sh -lc "command -v containerd")" "containerd on PATH"
'

test_case "a second up changes nothing" '
	"$PROVISION" up -i "$TEST_DIR/inv.yaml" $P --phases prep >up2.out 2>&1 || { cat up2.out; exit 1; }
	expect_grep "^node-1  *done  *0 changed" up2.out
'

test_case "a changed binary on the node is put back from the archive, and containerd restarted on it" '
	x sh -c "cp /usr/bin/ctr /usr/local/bin/ctr"
	"$PROVISION" up -i "$TEST_DIR/inv.yaml" $P --phases prep >up3.out 2>&1 || { cat up3.out; exit 1; }
	expect_grep "containerd-release › 10-install … changed" up3.out
	x sh -c "cd /usr/local/bin && sha256sum ctr" >h1
	(cd "$FILES/bin" && sha256sum ctr) >h2
	expect_eq "$(cat h2)" "$(cat h1)" "ctr"
'

test_case "inventory arch arm64 on an x86_64 node: up wants the arm64 archives; plan refuses the node with the fix; nothing changes" '
	sed "s/^    roles: .*/&\n    arch: arm64/" "$TEST_DIR/inv.yaml" >arm.yaml
	grep -q "^    arch: arm64" arm.yaml
	x stat -c %Y /usr/local/bin/containerd >m1
	"$PROVISION" up -i arm.yaml $P --phases prep >arm.out 2>&1 && { cat arm.out; exit 1; }
	cat arm.out
	expect_grep "cannot fetch artifact .containerd-linux-arm64." arm.out
	expect_grep "cannot fetch artifact .runc-arm64." arm.out
	expect_no_grep "amd64" arm.out
	"$PROVISION" plan -i arm.yaml $P --phases prep >plan.out 2>&1 && { cat plan.out; exit 1; }
	cat plan.out
	expect_grep "the node is an amd64 machine, but the inventory says arch arm64" plan.out
	expect_grep "write .arch: amd64. in the node.s entry of the inventory" plan.out
	x stat -c %Y /usr/local/bin/containerd >m2
	expect_eq "$(cat m1)" "$(cat m2)" "containerd untouched"
'

test_done
