# shellcheck shell=bash disable=SC2034 # the ROOTFS_* variables are read by testbed.sh
# tests/testbed/rootfs-recipe.sh: what the cached test-node root filesystem is.
#
# Sourced by testbed.sh.  The cache key is the SHA-256 of this file, so any
# change here (a package, a cleanup) builds a new rootfs next to the old one;
# nothing else goes into the key (the mirror only changes where packages come
# from).  Everything that depends on a testbed (users, keys, sshd settings,
# addresses) or on the running kernel (the modprobe shim) is NOT here: it goes
# into the per-testbed layer that testbed.sh builds at `up` time, so changing
# it costs milliseconds instead of a debootstrap.

ROOTFS_SUITE=bookworm
ROOTFS_VARIANT=minbase
# What a Debian 12 lab node that provision prepares looks like: systemd as
# PID 1 (for nspawn nodes), sshd and sudo (the transport), the tools the
# roles call (ip, sysctl, ps, modprobe), and the packages the node
# preparation roles install, so that "already installed" paths run for real.
# conntrack and iptables: kubeadm's preflight requires them (Kubernetes <
# 1.32); python3 and openssl: the Kubernetes stand-ins of tests/fakes run on
# them (both were already pulled in as dependencies; named so they stay).
# ROOTFS_APT_PACKAGES: installed with apt-get inside the tree after
# debootstrap (debootstrap's own resolver cannot configure their node-*
# dependencies): jupyterhub and node-configurable-http-proxy, Debian's real
# JupyterHub (3.0) and its proxy, which the fake helm starts for the
# jupyterhub chart so that /hub/health is answered by a real hub
# (tests/fakes/README.md).
ROOTFS_APT_PACKAGES="jupyterhub node-configurable-http-proxy"
ROOTFS_PACKAGES=systemd-sysv,openssh-server,sudo,iproute2,procps,kmod,ca-certificates,containerd,runc,nfs-common,apt-utils,gnupg,conntrack,iptables,python3,openssl

# rootfs_customize DIR: turn a fresh debootstrap tree into the shared,
# read-only lower layer of every node.  Runs on the host, touching only DIR.
rootfs_customize() {
	local r=$1
	# Packages debootstrap cannot install (see ROOTFS_APT_PACKAGES), with
	# the tree's own apt (debootstrap left the host's resolv.conf in the
	# tree), no daemon started.
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 0755 "$r/usr/sbin/policy-rc.d"
	# shellcheck disable=SC2086 # one package a word
	chroot "$r" sh -c 'apt-get -q update && DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends install '"$ROOTFS_APT_PACKAGES" ||
		return 1
	rm -f "$r/usr/sbin/policy-rc.d"
	# Debian's jupyterhub package enables a system-wide hub on :8000; on a
	# lab node only the chart's hub runs (the fake kubelet starts it).
	rm -f "$r/etc/systemd/system/multi-user.target.wants/jupyterhub.service"
	ln -sf /dev/null "$r/etc/systemd/system/jupyterhub.service"
	# openssh-server's postinst generated host keys: shared by every node
	# they would make every node the same host.  Each node gets its own.
	rm -f "$r"/etc/ssh/ssh_host_*
	# An empty machine-id: testbed.sh writes a fresh one per node (cloned
	# machines with equal machine-ids are something preflight must catch,
	# so the testbed must not produce them by accident).
	: >"$r/etc/machine-id"
	rm -f "$r/var/lib/dbus/machine-id"
	# No apt timers: they would wake up in every nspawn node and fight the
	# tests for the dpkg lock.
	rm -f "$r"/etc/systemd/system/timers.target.wants/apt-daily.timer \
		"$r"/etc/systemd/system/timers.target.wants/apt-daily-upgrade.timer
	ln -sf /dev/null "$r/etc/systemd/system/apt-daily.timer"
	ln -sf /dev/null "$r/etc/systemd/system/apt-daily-upgrade.timer"
	# Downloaded packages and lists are only weight in the cache.
	rm -f "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/*.bin
	rm -rf "$r"/var/lib/apt/lists/*
	echo testbed-node >"$r/etc/hostname"
	# Where the per-kernel modprobe shim is mounted (see testbed.sh layer).
	mkdir -p "$r/lib/modules"
}
