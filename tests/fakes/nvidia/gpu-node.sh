#!/bin/sh
# gpu-node.sh: make a testbed node (tests/testbed) look like a machine with
# the GPUs of one profile of tests/fakes/nvidia/profiles, as far as
# provision's facts (provision/facts.sh) and the nvidia role can tell.
#
#   gpu-node.sh TESTBED-DIR NODE PROFILE [--driver-not-loaded] [--packages]
#
# Run as root on the machine that runs the testbed.  On the node:
#   /etc/provision-fake-gpu    the profile's lines ("driver loaded" or
#                              "driver not-loaded" first)
#   /usr/bin/nvidia-smi        the fake (tests/fakes/nvidia/nvidia-smi)
#   /sys/bus/pci/devices       a small tmpfs with one directory per GPU
#                              (vendor 0x10de, class 0x030000, device id),
#                              mounted inside the node's own mount namespace
#   --packages                 empty packages nvidia-driver-NNN and
#                              libnvidia-compute-NNN of the profile's driver
#                              version (Ubuntu's names), for the role's hold
#                              step and the package facts
# What stays the host's: /sys/module (no nvidia module shows, so the facts
# have no module=nvidia line and the role's diagnosis of a failing driver is
# "the nvidia kernel module is not loaded").
#
# The PCI tree: a node's /sys is a read-only sysfs mounted in the node's
# private mount namespace (testbed.sh mounts it with --propagation private
# for chroot nodes; systemd-nspawn does the same for its containers).  This
# script enters that namespace (nsenter --mount, from the host, with the
# host's root capabilities: the node's own processes cannot mount) and puts
# a tmpfs over /sys/bus/pci/devices there, then remounts it read-only.  The
# host's mount table and /sys are untouched (checked: the node's mount
# namespace must differ from this script's), and the mount goes away with
# the node's namespace at `testbed.sh down`.  provision itself has no
# test-only path: facts.sh and the role read /sys/bus/pci/devices as on a
# real machine.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TESTBED=$HERE/../../testbed/testbed.sh

die() {
	echo "gpu-node.sh: $*" >&2
	exit 1
}

[ $# -ge 3 ] || die "usage: gpu-node.sh TESTBED-DIR NODE PROFILE [--driver-not-loaded] [--packages]"
DIR=$1 NODE=$2 PROFILE=$3
shift 3
driver=loaded packages=no
for a in "$@"; do
	case $a in
	--driver-not-loaded) driver=not-loaded ;;
	--packages) packages=yes ;;
	*) die "unknown option $a" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root"
lines=$(grep "^$PROFILE|" "$HERE/profiles") || die "no profile $PROFILE in $HERE/profiles"
pidfile=$DIR/nodes/$NODE/init.pid
[ -r "$pidfile" ] || die "$NODE: no $pidfile (is the testbed up?)"
read -r pid <"$pidfile"

tb() { "$TESTBED" exec "$DIR" "$NODE" "$@"; }

# The profile and the fake.
printf '# tests/fakes/nvidia/gpu-node.sh: profile %s\ndriver %s\n%s\n' "$PROFILE" "$driver" "$lines" |
	tb sh -c 'cat >/etc/provision-fake-gpu'
tb sh -c 'cat >/usr/bin/nvidia-smi && chmod 0755 /usr/bin/nvidia-smi' <"$HERE/nvidia-smi"

# The PCI devices, in the node's mount namespace only.
# (/proc in there is the node's: its PID 1 shares the namespace, we do not.)
node_ns=$(stat -L -c %i "/proc/$pid/ns/mnt") || die "$NODE: pid $pid is gone"
[ "$node_ns" != "$(stat -L -c %i /proc/self/ns/mnt)" ] || die "$NODE: pid $pid shares this mount namespace"
tree=$(printf '%s\n' "$lines" | awk -F '|' '{
	printf "mkdir %s && echo 0x10de >%s/vendor && echo 0x030000 >%s/class && echo %s >%s/device\n", $2, $2, $2, $3, $2 }')
nsenter --target "$pid" --mount --root --wd -- /bin/sh -eu -c "
	d=/sys/bus/pci/devices
	if ! grep -q \" \$d tmpfs \" /proc/1/mounts; then
		mount -t tmpfs -o size=64k,mode=0755,nosuid,nodev,noexec provision-fake-pci \$d
	fi
	mount -o remount,rw \$d
	rm -rf \$d/*
	cd \$d
	$tree
	mount -o remount,ro \$d
"

# Driver packages, built here (dpkg-deb) and installed on the node.
if [ "$packages" = yes ]; then
	version=$(printf '%s\n' "$lines" | head -n 1 | awk -F '|' '{ split($6, f, ", "); print f[3] }')
	major=${version%%.*}
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	for p in "nvidia-driver-$major" "libnvidia-compute-$major"; do
		mkdir -p "$work/$p/DEBIAN"
		printf 'Package: %s\nVersion: %s-0ubuntu1\nArchitecture: all\nMaintainer: provision tests <tests@provision.invalid>\nDescription: empty stand-in of the NVIDIA driver package\n' \
			"$p" "$version" >"$work/$p/DEBIAN/control"
		dpkg-deb --root-owner-group --build "$work/$p" "$work/$p.deb" >/dev/null
		tb sh -c 'cat >/tmp/fake-nvidia.deb && dpkg -i /tmp/fake-nvidia.deb >/dev/null && rm -f /tmp/fake-nvidia.deb' <"$work/$p.deb"
	done
fi
