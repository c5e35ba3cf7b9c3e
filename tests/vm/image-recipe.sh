# shellcheck shell=bash disable=SC2034 # the IMAGE_* variables are read by vm.sh
# tests/vm/image-recipe.sh: what the cached VM node image is.
#
# Sourced by vm.sh.  Two cache keys come from here:
#   - the root tree (debootstrap, ~80 s): the SHA-256 of the IMAGE_SUITE,
#     IMAGE_VARIANT and IMAGE_PACKAGES values;
#   - the disk image (customize + mkfs + qcow2, ~15 s): the SHA-256 of this
#     whole file and of node-init.sh (installed into the image).
# So changing a package rebuilds everything, changing the customization or
# the disk layout only re-makes the disk from the cached tree.  Nothing that
# depends on one test run (keys, addresses, names) is in the image: each VM
# gets those at boot from its kernel command line and QEMU's fw_cfg (see
# node-init.sh), so the same image serves every run.

IMAGE_SUITE=bookworm
IMAGE_VARIANT=minbase
# A Debian 12 lab node before provision: systemd with udev and dbus, sshd
# and sudo (the transport), the tools the roles call (modprobe, ip, sysctl,
# swapon), a kernel with real modules (overlay, br_netfilter, nfsd, nfs,
# sch_netem), and everything the prep and nfs roles would install, so their
# install steps find it there (a VM has no internet).  busybox-static is the
# one binary of the test container's root filesystem (ctr run --rootfs).
IMAGE_PACKAGES=systemd-sysv,udev,dbus,openssh-server,sudo,kmod,iproute2,procps,netbase,ca-certificates,containerd,runc,nfs-kernel-server,nfs-common,linux-image-amd64,busybox-static,iputils-ping

# Disk layout (MBR): vda1 the root ext4, vda2 a swap partition.  A swap
# file /swapfile too.  Both are in /etc/fstab, so they are active at boot
# before provision runs (scenario 1 needs a real swap partition and a real
# swap file).  Fixed UUIDs: the image is the same on every machine.
IMAGE_ROOT_MB=2560
IMAGE_SWAP_MB=128
IMAGE_SWAPFILE_MB=64
IMAGE_ROOT_UUID=5b1f6a40-7d0e-4c1a-9f57-0d2b3c4e5f60
IMAGE_SWAP_UUID=7c2e8b51-1a3f-4d6b-8e90-1f2a3b4c5d6e

# image_customize DIR: turn a fresh debootstrap tree into the node image's
# root.  Runs on the host and only edits files under DIR (no chroot: no
# program of the image runs on this machine).
image_customize() {
	local r=$1 u
	# Host keys from openssh-server's postinst would be the same on every
	# VM; each VM gets its own from the host at boot (node-init.sh).
	rm -f "$r"/etc/ssh/ssh_host_*
	# Empty machine-id: systemd takes the one on the kernel command line
	# (systemd.machine_id=, unique per VM) at first boot and commits it.
	: >"$r/etc/machine-id"
	rm -f "$r/var/lib/dbus/machine-id"
	echo pvvm >"$r/etc/hostname"

	cat >"$r/etc/fstab" <<-EOF
		# /etc/fstab of provision's VM test image (tests/vm/image-recipe.sh)
		UUID=$IMAGE_ROOT_UUID / ext4 errors=remount-ro 0 1
		UUID=$IMAGE_SWAP_UUID none swap sw 0 0
		/swapfile none swap sw 0 0
	EOF

	install -d -m 0700 "$r/root/.ssh"
	cat >"$r/etc/ssh/sshd_config.d/pvvm.conf" <<-'EOF'
		# provision's VM test image: one ed25519 host key per VM (node-init.sh
		# installs it at boot), key-only logins.
		HostKey /etc/ssh/ssh_host_ed25519_key
		PermitRootLogin prohibit-password
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UseDNS no
		LogLevel VERBOSE
	EOF

	install -m 0755 "$VM_SRC/node-init.sh" "$r/usr/local/sbin/pvvm-init"
	cat >"$r/etc/systemd/system/pvvm-init.service" <<-'EOF'
		[Unit]
		Description=provision VM test node: name, address and keys from the host
		DefaultDependencies=no
		After=local-fs.target systemd-remount-fs.service
		Before=network-pre.target ssh.service sysinit.target
		Wants=network-pre.target

		[Service]
		Type=oneshot
		RemainAfterExit=yes
		ExecStart=/usr/local/sbin/pvvm-init
		StandardOutput=journal+console
		StandardError=journal+console

		[Install]
		WantedBy=sysinit.target
	EOF
	mkdir -p "$r/etc/systemd/system/sysinit.target.wants"
	ln -sf ../pvvm-init.service "$r/etc/systemd/system/sysinit.target.wants/pvvm-init.service"

	# Services a lab node may well have installed but not running: the NFS
	# server (the nfs-server role enables it) and rpcbind (NFSv4 needs
	# none).  Timers that would wake up during a test and take CPU or the
	# dpkg lock: apt, man-db, e2scrub, fstrim.
	for u in nfs-server.service rpcbind.service rpcbind.socket nfs-blkmap.service \
		apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer fstrim.timer \
		e2scrub_reap.service; do
		find "$r/etc/systemd/system" -name "$u" -type l -delete
	done
	for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service; do
		ln -sf /dev/null "$r/etc/systemd/system/$u"
	done
	# The journal in memory only: smaller overlays, faster boots.
	mkdir -p "$r/etc/systemd/journald.conf.d"
	printf '[Journal]\nStorage=volatile\n' >"$r/etc/systemd/journald.conf.d/pvvm.conf"
	# No getty waiting on the serial console: it only logs there.
	ln -sf /dev/null "$r/etc/systemd/system/serial-getty@ttyS0.service"

	# The swap file: mkswap on this machine only writes the header (it never
	# activates anything); filled with non-zero bytes first because
	# `mkfs.ext4 -d` stores all-zero blocks as holes, and the kernel refuses
	# a swap file with holes.
	head -c "$((IMAGE_SWAPFILE_MB << 20))" /dev/zero | tr '\0' '\125' >"$r/swapfile"
	chmod 0600 "$r/swapfile"
	mkswap -q -L pvswapfile "$r/swapfile" >/dev/null

	# Downloaded packages and lists are only weight.
	rm -f "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/*.bin
	rm -rf "$r"/var/lib/apt/lists/*
}
