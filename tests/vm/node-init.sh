#!/bin/sh
# pvvm-init (tests/vm/node-init.sh, installed into the VM image as
# /usr/local/sbin/pvvm-init and run by pvvm-init.service at every boot,
# before the network and sshd): the VM's identity, handed in by vm.sh on
# this machine's side.
#
#   kernel command line: pvvm.name=NAME pvvm.addr=A.B.C.D/LEN
#                        pvvm.hosts=NAME@ADDR,NAME@ADDR,...
#                        (and systemd.machine_id=, which systemd reads itself)
#   QEMU fw_cfg:         opt/org.provision/hostkey       the ed25519 host key
#                        opt/org.provision/hostkey.pub
#                        opt/org.provision/authorized_keys  root's client key
#
# Keys do not go on the command line (every process can read
# /proc/cmdline).  The same values come at every boot of a VM (vm.sh
# restarts it with the same ones), so running this again changes nothing.
# Booted without pvvm.name (not by vm.sh): does nothing.
set -eu

name='' addr='' hosts=''
# shellcheck disable=SC2013 # words, not lines
for a in $(cat /proc/cmdline); do
	case $a in
	pvvm.name=*) name=${a#*=} ;;
	pvvm.addr=*) addr=${a#*=} ;;
	pvvm.hosts=*) hosts=${a#*=} ;;
	esac
done
[ -n "$name" ] || exit 0

# put SRC DEST MODE: DEST gets SRC's bytes, replaced atomically, only if
# they differ.
put() {
	if [ -f "$2" ] && cmp -s "$1" "$2"; then
		return 0
	fi
	cp "$1" "$2.pvvm-tmp"
	chmod "$3" "$2.pvvm-tmp"
	mv -f "$2.pvvm-tmp" "$2"
}

fw=/sys/firmware/qemu_fw_cfg/by_name/opt/org.provision
[ -d "$fw" ] || modprobe qemu_fw_cfg
i=0
while [ ! -r "$fw/hostkey/raw" ]; do
	i=$((i + 1))
	if [ "$i" -gt 50 ]; then
		echo "pvvm-init: no $fw/hostkey from the host" >&2
		exit 1
	fi
	sleep 0.1
done
put "$fw/hostkey/raw" /etc/ssh/ssh_host_ed25519_key 0600
put "$fw/hostkey.pub/raw" /etc/ssh/ssh_host_ed25519_key.pub 0644
mkdir -p /root/.ssh
chmod 0700 /root/.ssh
put "$fw/authorized_keys/raw" /root/.ssh/authorized_keys 0600

if [ "$(cat /etc/hostname 2>/dev/null)" != "$name" ]; then
	echo "$name" >/etc/hostname
fi
hostname "$name"
{
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n'
	echo "$hosts" | tr ',' '\n' | while IFS=@ read -r h a; do
		[ -n "$h" ] && printf '%s\t%s\n' "$a" "$h"
	done
} >/run/pvvm-hosts
put /run/pvvm-hosts /etc/hosts 0644
rm -f /run/pvvm-hosts

if [ -n "$addr" ]; then
	ip link set dev lo up
	ip link set dev eth0 up
	ip addr replace "$addr" dev eth0
fi
echo "pvvm-init: $name $addr"
