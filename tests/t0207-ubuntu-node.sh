#!/bin/sh
# t0207-ubuntu-node: what an Ubuntu node (20.04, 22.04, 24.04) has that a
# Debian one has not, rebuilt on one chroot node of the testbed (no Ubuntu
# machine can be had here; the facts are those of
# tests/facts/ubuntu*-documented.facts, written from documentation):
#   - swap: Ubuntu's installer makes a swap FILE, /swap.img, listed in
#     /etc/fstab (`/swap.img	none	swap	sw	0	0`), not a partition.
#     swap-off, run as provision runs it (tests/roles/steps.sh role),
#     comments the line out, keeps the file itself and the original fstab,
#     and changes nothing the second time.
#   - DNS: systemd-resolved; /etc/resolv.conf a symlink to its stub file
#     (nameserver 127.0.0.53, unreachable from a pod), the real servers in
#     /run/systemd/resolve/resolv.conf.  facts.sh, run on the node, reports
#     both; the kubeadm patch that kubeadm-init and kubeadm-join upload
#     (rendered by the real template engine from those facts) gives the
#     kubelet /run/systemd/resolve/resolv.conf there, and /etc/resolv.conf
#     once the node has a plain resolv.conf of its own.
# What a chroot node cannot do is left out: swapoff (no CAP_SYS_ADMIN: the
# step says so and skips) and a running systemd-resolved.
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/lib-testbed.sh
. "$SRC_ROOT/tests/lib-testbed.sh"

tb_up --chroot 1
RENDER=$BUILD/tests/tools/render
[ -x "$RENDER" ] || { echo "# $RENDER is missing: run make tests"; exit 1; }
# shellcheck disable=SC2034 # read by the single-quoted test bodies
STEPS=$SRC_ROOT/tests/roles/steps.sh
ROLES=${ROLES:-$SRC_ROOT/roles}
export ROLES
x() { "$TESTBED" exec "$TB" node-1 "$@"; }

FSTAB='# /etc/fstab: static file system information.
/dev/disk/by-uuid/4d2c8f7e-1b3a-4c5d-9e6f-7a8b9c0d1e2f / ext4 defaults 0 1
/dev/disk/by-uuid/9A3B-1C2D /boot/efi vfat defaults 0 1
/swap.img	none	swap	sw	0	0'
printf '%s\n' "$FSTAB" | x sh -c 'cat >/etc/fstab'
# a swap file's first page with the signature at its end (mkswap's layout),
# as the installer leaves it; its bytes must survive
x sh -c 'head -c 4086 /dev/zero >/swap.img && printf SWAPSPACE2 >>/swap.img && head -c 61440 /dev/urandom >>/swap.img && chmod 0600 /swap.img'
# shellcheck disable=SC2034 # read by the single-quoted test bodies
swap_sum=$(x sha256sum /swap.img)

test_case "swap-off on /swap.img: the fstab line commented, the file and the original kept" '
	"$STEPS" role "$TB" node-1 swap-off >run1.out 2>run1.err || { cat run1.out run1.err; false; }
	cat run1.out
	expect_grep "^swap-off 20-fstab changed\$" run1.out
	x cat /etc/fstab >fstab
	expect_eq "# swap off for Kubernetes (provision swap-off): /swap.img	none	swap	sw	0	0" "$(grep swap.img fstab)" "the /swap.img line"
	expect_eq 4 "$(wc -l <fstab | tr -d " ")" "fstab lines"
	expect_grep "^/dev/disk/by-uuid/4d2c8f7e-1b3a-4c5d-9e6f-7a8b9c0d1e2f / ext4 defaults 0 1\$" fstab
	expect_eq "$FSTAB" "$(x cat /var/lib/provision/backup/etc/fstab)" "the original fstab, kept"
	expect_eq "$swap_sum" "$(x sha256sum /swap.img)" "/swap.img itself"
	expect_eq 600 "$(x stat -c %a /swap.img)" "/swap.img mode"
'

test_case "swap-off again: nothing changes" '
	x sha256sum /etc/fstab >before
	"$STEPS" role "$TB" node-1 swap-off >run2.out 2>run2.err || { cat run2.out run2.err; false; }
	cat run2.out
	expect_no_grep " changed\$" run2.out
	expect_grep "^swap-off 20-fstab unchanged\$" run2.out
	expect_eq "$(cat before)" "$(x sha256sum /etc/fstab)" "fstab"
	expect_eq "$swap_sum" "$(x sha256sum /swap.img)" "/swap.img itself"
'

# render ROLE FACTS: the kubelet patch the role uploads to node-1.
render() {
	"$RENDER" template "$ROLES" "$1" kubelet-patch.yaml.tmpl "$TB/inventory.yaml" node-1 "$2" | grep -v "^#"
}

x sh -c 'cp /etc/resolv.conf /etc/resolv.conf.debian'
test_case "systemd-resolved stub: facts see both files; the kubelet gets /run/systemd/resolve/resolv.conf" '
	x sh -c "mkdir -p /run/systemd/resolve &&
		printf \"nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lab.example\n\" >/run/systemd/resolve/stub-resolv.conf &&
		printf \"nameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch lab.example\n\" >/run/systemd/resolve/resolv.conf &&
		ln -sfn ../run/systemd/resolve/stub-resolv.conf /etc/resolv.conf"
	expect_eq ../run/systemd/resolve/stub-resolv.conf "$(x readlink /etc/resolv.conf)" "the symlink"
	x sh -s <"$SRC_ROOT/provision/facts.sh" >stub.facts
	expect_eq "nameserver=127.0.0.53" "$(grep "^nameserver=" stub.facts)" "facts: /etc/resolv.conf"
	expect_eq "resolved_nameserver=192.0.2.53
resolved_nameserver=192.0.2.54" "$(grep "^resolved_nameserver=" stub.facts)" "facts: resolved upstream"
	for r in kubeadm-init kubeadm-join; do
		expect_eq "resolvConf: \"/run/systemd/resolve/resolv.conf\"" "$(render $r stub.facts)" "$r patch"
	done
'

test_case "a plain resolv.conf (Debian, or resolved taken away): the kubelet keeps /etc/resolv.conf" '
	x sh -c "rm /etc/resolv.conf && cp /etc/resolv.conf.debian /etc/resolv.conf && rm -r /run/systemd/resolve"
	x sh -s <"$SRC_ROOT/provision/facts.sh" >plain.facts
	expect_no_grep "^resolved_nameserver=" plain.facts
	for r in kubeadm-init kubeadm-join; do
		expect_eq "resolvConf: \"/etc/resolv.conf\"" "$(render $r plain.facts)" "$r patch"
	done
'

test_done
