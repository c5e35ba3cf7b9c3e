#!/bin/bash
# tests/testbed/testbed.sh: test nodes on this machine, for provision's tests.
#
#   testbed.sh rootfs                       build (once) the cached Debian 12 rootfs
#   testbed.sh up DIR [options]             start nodes, write DIR/inventory.yaml ...
#   testbed.sh down DIR                     stop everything `up` started
#   testbed.sh exec DIR NODE CMD [ARG...]   run CMD as root inside NODE (no SSH)
#   testbed.sh ssh DIR NODE [CMD...]        plain ssh to NODE as root
#   testbed.sh stop-sshd|start-sshd|rekey|hang|resume DIR NODE
#   testbed.sh kill-node DIR NODE [--silent]
#   testbed.sh start-node DIR NODE          a killed node powered on again
#
# Each node has its own network namespace with one address on a private
# bridge (198.18.0.0/15 only, never routed anywhere), its own OpenSSH sshd
# and host key, and its own filesystem: an overlayfs upper directory over a
# per-testbed layer over a Debian 12 rootfs that is built once and cached.
# Two kinds of node share that rootfs: `chroot` (a few namespaces around
# sshd, ~1-2 MB each, for the many-node tests) and `nspawn` (systemd-nspawn
# booting the node's own systemd, for tests that need systemctl).
#
# The host is protected from its nodes: nodes never hold CAP_SYS_ADMIN or
# the other capabilities that reach outside their namespaces (no swapon, no
# mount, no module or clock changes), see /proc/sys read-only except the
# per-namespace /proc/sys/net, and get no block devices.  nspawn nodes add
# systemd-nspawn's own seccomp filter, and keep CAP_NET_ADMIN, which acts on
# their own network namespace only (interfaces, iptables).
#
# Bash (arrays, associative arrays, wait -n); run as root.  README.md in
# this directory documents the options and every file `up` writes.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
umask 022

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
TESTBED_SRC=${SELF%/*}
CACHE_DIR=${PROVISION_TESTBED_CACHE:-/var/cache/provision-testbed}
MIRROR=${PROVISION_TESTBED_MIRROR:-http://deb.debian.org/debian}
# Serialises bridge and address changes between testbeds.
NET_LOCK=/run/provision-testbed.lock
BRIDGE_ALIAS=provision-testbed
# The only addresses a testbed may use: 198.18.0.0/15 (RFC 2544, reserved
# for benchmarking, never routed on the internet).
RANGE_LO=$(((198 << 24) + (18 << 16)))
RANGE_HI=$((RANGE_LO + (2 << 16) - 1))
# Capabilities no process of a node may hold: each of them reaches outside
# the node's namespaces (swapon and mount need sys_admin, mknod would give
# block devices, sys_time sets the host clock, syslog clears the host's
# kernel log, dac_read_search opens host files by handle, bpf/perfmon
# attach to the host kernel).
DROP_CAPS=-sys_admin,-sys_module,-sys_rawio,-sys_time,-sys_boot,-mknod,-syslog,-mac_admin,-mac_override,-wake_alarm,-block_suspend,-dac_read_search,-sys_pacct,-bpf,-perfmon,-checkpoint_restore
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SSH_READY_TIMEOUT=30

die() {
	echo "testbed: $*" >&2
	exit 1
}
say() { echo "testbed: $*" >&2; }
# PROVISION_TESTBED_VERBOSE=1: where the time goes.
PHASE_START=
phase() {
	[ "${PROVISION_TESTBED_VERBOSE:-0}" = 1 ] || return 0
	PHASE_START=${PHASE_START:-$(now_ms)}
	say "[+$(elapsed "$PHASE_START")] $*"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
elapsed() { # START_MS -> "1.23 s"
	local ms=$(($(now_ms) - $1))
	printf '%d.%02d s' $((ms / 1000)) $((ms % 1000 / 10))
}

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (namespaces, mounts, a bridge)"
}

need_cmds() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || die "$c is missing (make deps installs the testbed's packages)"
	done
}

# Paths end up inside overlayfs mount options, where ',' ':' and spaces
# would split them: accept only plain characters.
check_path() {
	[[ $1 =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "unsupported characters in path: $1"
}

# ---------------------------------------------------------------- rootfs

# The recipe's SHA-256; a suite other than bookworm (PROVISION_TESTBED_SUITE)
# is part of the key too, so each release has its own cached tree (and the
# bookworm key is the recipe's alone, as it always was).
rootfs_hash() {
	{
		cat "$TESTBED_SRC/rootfs-recipe.sh"
		[ "${PROVISION_TESTBED_SUITE:-bookworm}" = bookworm ] || echo "suite=$PROVISION_TESTBED_SUITE"
	} | sha256sum | cut -c1-16
}

rootfs_path() {
	echo "$CACHE_DIR/rootfs-$(rootfs_hash)"
}

# Build the rootfs for the current recipe unless it is cached; print its
# path.  Idempotent and safe to run from two testbeds at once (flock); a
# half-built tree never gets the final name.
cmd_rootfs() {
	need_root
	local dest tmp start
	dest=$(rootfs_path)
	if [ -f "$dest/.complete" ]; then
		echo "$dest"
		return 0
	fi
	need_cmds debootstrap
	mkdir -p "$CACHE_DIR"
	exec 8>"$CACHE_DIR/.lock"
	flock -w 900 8 || die "timed out (900 s) waiting for another rootfs build"
	if [ -f "$dest/.complete" ]; then
		exec 8>&-
		echo "$dest"
		return 0
	fi
	# shellcheck source=rootfs-recipe.sh
	. "$TESTBED_SRC/rootfs-recipe.sh"
	# PROVISION_TESTBED_SUITE=trixie: Debian 13 nodes, the same recipe
	# (trixie has every package: containerd 1.7, jupyterhub 5.2)
	ROOTFS_SUITE=${PROVISION_TESTBED_SUITE:-$ROOTFS_SUITE}
	tmp=$dest.tmp
	rm -rf "$tmp"
	say "building $dest (debootstrap $ROOTFS_SUITE from $MIRROR; log: $dest.log)"
	start=$(now_ms)
	if ! timeout 1800 debootstrap --variant="$ROOTFS_VARIANT" --include="$ROOTFS_PACKAGES" \
		"$ROOTFS_SUITE" "$tmp" "$MIRROR" >"$dest.log" 2>&1 8>&-; then
		tail -n 20 "$dest.log" >&2
		rm -rf "$tmp"
		die "debootstrap failed (see $dest.log)"
	fi
	if ! rootfs_customize "$tmp" >>"$dest.log" 2>&1 8>&-; then
		tail -n 20 "$dest.log" >&2
		rm -rf "$tmp"
		die "customizing the rootfs failed (see $dest.log)"
	fi
	cp "$TESTBED_SRC/rootfs-recipe.sh" "$tmp/.recipe"
	touch "$tmp/.complete"
	mv "$tmp" "$dest"
	exec 8>&-
	say "rootfs built in $(elapsed "$start"): $dest ($(du -sh "$dest" | cut -f1))"
	echo "$dest"
}

# ---------------------------------------------------------------- addresses

ip2int() {
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	echo $(((a << 24) + (b << 16) + (c << 8) + d))
}

int2ip() {
	echo "$(($1 >> 24 & 255)).$(($1 >> 16 & 255)).$(($1 >> 8 & 255)).$(($1 & 255))"
}

# parse_subnet CIDR: set NET (first address, as an integer) and PLEN, or die.
parse_subnet() {
	local cidr=$1 o
	[[ $cidr =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]{1,2})$ ]] ||
		die "--subnet: expected A.B.C.D/LEN, got '$cidr'"
	for o in 1 2 3 4; do
		((BASH_REMATCH[o] <= 255)) || die "--subnet: bad address in '$cidr'"
	done
	PLEN=$((10#${BASH_REMATCH[5]}))
	((PLEN >= 16 && PLEN <= 24)) || die "--subnet: prefix length must be 16..24, got /$PLEN"
	NET=$(ip2int "${cidr%/*}")
	((NET % (1 << (32 - PLEN)) == 0)) || die "--subnet: '$cidr' is not a network address"
	((NET >= RANGE_LO && NET + (1 << (32 - PLEN)) - 1 <= RANGE_HI)) ||
		die "--subnet: '$cidr' is outside 198.18.0.0/15, the only range a testbed may use"
}

# Every IPv4 prefix this host already has an address or route in, as
# "FIRST LAST" integer pairs.
host_prefixes() {
	local tok rest p
	{
		ip -4 -o addr show | awk '{ print $4 }'
		ip -4 route show table all | while read -r tok rest; do
			case $tok in
			local | broadcast | unicast | unreachable | blackhole | prohibit | throw | multicast | anycast | nat)
				tok=${rest%% *}
				;;
			esac
			echo "$tok"
		done
	} | while read -r p; do
		case $p in
		default | "") continue ;;
		*/*) ;;
		*) p=$p/32 ;;
		esac
		[[ $p =~ ^[0-9.]+/[0-9]+$ ]] || continue
		local first len
		first=$(ip2int "${p%/*}")
		len=${p#*/}
		first=$((first & ~((1 << (32 - len)) - 1) & 0xffffffff))
		echo "$first $((first + (1 << (32 - len)) - 1))"
	done
}

# subnet_free NET PLEN PREFIXES: true when no known prefix overlaps.
subnet_free() {
	local lo=$1 hi=$(($1 + (1 << (32 - $2)) - 1)) a b
	while read -r a b; do
		[ -n "$a" ] || continue
		((a > hi || b < lo)) || return 1
	done <<<"$3"
}

ensure_bridge() {
	# A fixed MAC address: left to itself a bridge takes the lowest MAC of
	# its ports and changes it when ports come and go, and nodes that
	# cached the old one stop hearing the host for a minute or more.
	local sum mac
	sum=$(printf '%s' "$BRIDGE" | cksum | cut -d' ' -f1)
	mac=$(printf '02:70:%02x:%02x:%02x:%02x' $((sum >> 24 & 255)) $((sum >> 16 & 255)) \
		$((sum >> 8 & 255)) $((sum & 255)))
	if ip link show "$BRIDGE" >/dev/null 2>&1; then
		[ "$(cat "/sys/class/net/$BRIDGE/ifalias" 2>/dev/null)" = "$BRIDGE_ALIAS" ] ||
			die "interface $BRIDGE exists and was not made by a testbed; pick another --bridge"
		# 3: NET_ADDR_SET, an address given by us (an older testbed.sh did not).
		[ "$(cat "/sys/class/net/$BRIDGE/addr_assign_type")" = 3 ] ||
			ip link set dev "$BRIDGE" address "$mac"
		return 0
	fi
	ip link add name "$BRIDGE" address "$mac" type bridge
	ip link set dev "$BRIDGE" alias "$BRIDGE_ALIAS"
	# This host never forwards what arrives on the bridge, whatever its
	# global ip_forward says (these are the bridge's own settings, gone with
	# it), and the bridge gets no IPv6: nothing leaves the test network.
	echo 0 >"/proc/sys/net/ipv4/conf/$BRIDGE/forwarding"
	echo 1 >"/proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6"
	ip link set dev "$BRIDGE" up
}

# claim_subnet SPEC NEEDED: create the bridge if needed and put this
# testbed's host address on it; sets NET and PLEN.  The host address is the
# claim: a subnet that overlaps any address or route of this host (another
# testbed's included) is refused.
claim_subnet() {
	local spec=$1 needed=$2 prefixes cand size
	if [ "$spec" != auto ]; then
		parse_subnet "$spec"
		(((1 << (32 - PLEN)) - 11 >= needed)) ||
			die "$needed nodes do not fit in $spec (addresses .10 up); use a shorter prefix, e.g. /23"
	fi
	exec 9>"$NET_LOCK"
	flock -w 30 9 || die "timed out waiting for $NET_LOCK"
	ensure_bridge
	prefixes=$(host_prefixes)
	if [ "$spec" = auto ]; then
		# The smallest subnet that holds the nodes, the first one free.
		PLEN=24
		while ((PLEN > 16 && (1 << (32 - PLEN)) - 11 < needed)); do
			PLEN=$((PLEN - 1))
		done
		size=$((1 << (32 - PLEN)))
		NET=
		for ((cand = RANGE_LO; cand + size - 1 <= RANGE_HI; cand += size)); do
			if subnet_free "$cand" "$PLEN" "$prefixes"; then
				NET=$cand
				break
			fi
		done
		[ -n "$NET" ] || die "no free /$PLEN left in 198.18.0.0/15"
		(((1 << (32 - PLEN)) - 11 >= needed)) || die "$needed nodes: more than a /16 holds"
	else
		subnet_free "$NET" "$PLEN" "$prefixes" ||
			die "subnet $spec overlaps an address or route of this host (another testbed?)"
	fi
	ip addr add "$(int2ip $((NET + 1)))/$PLEN" dev "$BRIDGE"
	# The host may still remember the MACs of an earlier testbed's nodes
	# at these addresses (the bridge outlives testbeds): forget them, or
	# the new nodes are unreachable until those entries time out.
	ip neigh flush to "$(int2ip "$NET")/$PLEN" dev "$BRIDGE" 2>/dev/null || true
	exec 9>&-
}

# release_subnet: remove this testbed's host address; remove the bridge
# when no testbed uses it any more.
release_subnet() {
	exec 9>"$NET_LOCK"
	flock -w 30 9 || die "timed out waiting for $NET_LOCK"
	if ip link show "$TESTBED_BRIDGE" >/dev/null 2>&1; then
		ip addr del "$TESTBED_HOST_ADDR/$TESTBED_PLEN" dev "$TESTBED_BRIDGE" 2>/dev/null || true
		ip neigh flush to "$TESTBED_SUBNET" dev "$TESTBED_BRIDGE" 2>/dev/null || true
	fi
	bridge_gc "$TESTBED_BRIDGE"
	exec 9>&-
}

# bridge_gc BRIDGE: delete a testbed bridge that no testbed uses (no
# address, no port).  Call with the lock held.
bridge_gc() {
	if ip link show "$1" >/dev/null 2>&1 &&
		[ "$(cat "/sys/class/net/$1/ifalias" 2>/dev/null)" = "$BRIDGE_ALIAS" ] &&
		[ -z "$(ip -4 -o addr show dev "$1")" ] &&
		[ -z "$(ip -o link show master "$1")" ]; then
		ip link del "$1"
	fi
}

# ---------------------------------------------------------------- state

# load_testbed DIR: absolute DIR, and DIR/testbed.env into TESTBED_*.
load_testbed() {
	[ -d "$1" ] || die "no testbed directory $1"
	DIR=$(cd "$1" && pwd)
	[ -f "$DIR/testbed.env" ] || die "$DIR holds no running testbed (no testbed.env)"
	# shellcheck source=/dev/null
	. "$DIR/testbed.env"
}

# load_node NAME: NODE_* from DIR/nodes/NAME/node.env; ND = its directory.
load_node() {
	[[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9-]*$ ]] || die "bad node name '$1'"
	ND=$DIR/nodes/$1
	[ -f "$ND/node.env" ] || die "no node '$1' in $DIR"
	# shellcheck source=/dev/null
	. "$ND/node.env"
}

# write_env FILE VAR...: the variables, shell-quoted, sourceable.
write_env() {
	local file=$1 v
	shift
	for v in "$@"; do
		printf '%s=%q\n' "$v" "${!v}"
	done >"$file.tmp"
	mv "$file.tmp" "$file"
}

# pid_alive PID: the pid exists and is not a zombie.
pid_alive() {
	local state
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
	[ "$state" != Z ] && [ "$state" != X ]
}

# The node's PID 1 (host pid), verified to still be in the node's netns.
node_init_pid() {
	local pid
	pid=$(cat "$ND/init.pid" 2>/dev/null) || return 0
	pid_alive "$pid" || return 0
	[ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = \
		"$(stat -L -c %i "/run/netns/$NODE_NETNS" 2>/dev/null)" ] || return 0
	echo "$pid"
}

# The node's systemd-nspawn process, verified by its command line.
node_nspawn_pid() {
	local pid
	pid=$(cat "$ND/nspawn.pid" 2>/dev/null) || return 0
	pid_alive "$pid" || return 0
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $ND/root " || return 0
	echo "$pid"
}

# ---------------------------------------------------------------- layer

# The per-testbed layer between the rootfs and each node's upper directory:
# the node-side helper, sshd settings, the admin user, the client key in
# authorized_keys, /etc/hosts for all nodes, and the modprobe shim for the
# running kernel.  Built as the upper directory of a throw-away overlay in a
# private mount namespace (so it exists only as files), then used read-only.
build_layer() {
	rm -rf "$DIR/layer" "$DIR/.layer-work" "$DIR/.layer-mnt"
	mkdir -p "$DIR/layer" "$DIR/.layer-work" "$DIR/.layer-mnt"
	unshare --mount --propagation private -- "$SELF" __layer "$DIR" </dev/null
	rm -rf "$DIR/.layer-work" "$DIR/.layer-mnt"
}

internal_layer() {
	DIR=$1
	# shellcheck source=/dev/null
	. "$DIR/testbed.env"
	local m=$DIR/.layer-mnt kver i
	mount -t overlay overlay \
		-o "lowerdir=$TESTBED_ROOTFS,upperdir=$DIR/layer,workdir=$DIR/.layer-work" "$m"

	install -m 0755 "$TESTBED_SRC/node.sh" "$m/usr/local/sbin/testbed-node"

	cat >"$m/etc/ssh/sshd_config.d/testbed.conf" <<-'EOF'
		# Written by provision's tests/testbed/testbed.sh.
		# One ed25519 host key per node, made when the node is created.
		HostKey /etc/ssh/ssh_host_ed25519_key
		# Logins visible in /var/log/sshd.log ("Accepted publickey for ...").
		LogLevel VERBOSE
		PermitRootLogin prohibit-password
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		# No PAM session stack: chroot nodes have no logind; sudo still
		# uses PAM for its password check.
		UsePAM no
		PidFile /run/sshd.pid
	EOF
	# Debian's ssh.service passes SSHD_OPTS: the same log on nspawn nodes.
	cat >"$m/etc/default/ssh" <<-'EOF'
		# Written by provision's tests/testbed/testbed.sh.
		SSHD_OPTS="-E /var/log/sshd.log"
	EOF

	{
		printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n'
		for i in $TESTBED_NODES; do
			# shellcheck source=/dev/null
			. "$DIR/nodes/$i/node.env"
			printf '%s\t%s\n' "$NODE_ADDR" "$NODE_NAME"
		done
	} >"$m/etc/hosts"

	# overlay and br_netfilter are built into this machine's kernel, so a
	# modules.builtin that says so tells modprobe the truth and
	# `modprobe overlay br_netfilter` succeeds as on a real node.  Per
	# running kernel, hence here and not in the cached rootfs.
	kver=$(uname -r)
	mkdir -p "$m/lib/modules/$kver"
	printf 'kernel/fs/overlayfs/overlay.ko\nkernel/net/bridge/br_netfilter.ko\n' \
		>"$m/lib/modules/$kver/modules.builtin"
	: >"$m/lib/modules/$kver/modules.order"
	: >"$m/lib/modules/$kver/modules.builtin.modinfo"
	chroot "$m" /sbin/depmod "$kver"

	# The admin user: sudo rights are per node (/etc/sudoers.d/testbed-admin
	# in each node's upper directory).  A password is set everywhere
	# (sshd refuses locked accounts without PAM); it matters only on the
	# nodes whose sudo asks for it.
	chroot "$m" useradd --create-home --shell /bin/bash --comment "testbed admin" admin
	printf 'admin:%s\n' "$TESTBED_ADMIN_PASSWORD" | chroot "$m" chpasswd
	for i in root admin; do
		local home=/root
		[ "$i" = root ] || home=/home/$i
		install -d -m 0700 "$m$home/.ssh"
		install -m 0600 "$DIR/id_ed25519.pub" "$m$home/.ssh/authorized_keys"
		chroot "$m" chown -R "$i:$i" "$home/.ssh"
	done
	umount "$m"
}

# ---------------------------------------------------------------- nodes

# DIR/dev: what a chroot node's /dev holds, copied into its tmpfs at boot
# (one `cp` instead of a dozen mknod and ln).  Character devices only.
build_dev_template() {
	local d=$DIR/dev
	rm -rf "$d"
	mkdir -m 0755 "$d"
	mknod -m 0666 "$d/null" c 1 3
	mknod -m 0666 "$d/zero" c 1 5
	mknod -m 0666 "$d/full" c 1 7
	mknod -m 0666 "$d/random" c 1 8
	mknod -m 0666 "$d/urandom" c 1 9
	mknod -m 0666 "$d/tty" c 5 0
	mkdir -m 0755 "$d/pts"
	mkdir -m 1777 "$d/shm"
	ln -s pts/ptmx "$d/ptmx"
	ln -s /proc/self/fd "$d/fd"
	ln -s /proc/self/fd/0 "$d/stdin"
	ln -s /proc/self/fd/1 "$d/stdout"
	ln -s /proc/self/fd/2 "$d/stderr"
}

# prepare_node NAME: the node's own files, written into its upper directory
# before anything is mounted over it.
prepare_node() {
	local nd=$DIR/nodes/$1 u
	u=$nd/upper
	install -d -m 0755 "$nd/work" "$nd/root" "$u/etc/ssh" "$u/var/log"
	install -d -m 0750 "$u/etc/sudoers.d"
	echo "$NODE_NAME" >"$u/etc/hostname"
	local uuid
	read -r uuid </proc/sys/kernel/random/uuid
	echo "${uuid//-/}" >"$u/etc/machine-id"
	chmod 0444 "$u/etc/machine-id"
	ssh-keygen -q -t ed25519 -N '' -C "root@$NODE_NAME" -f "$u/etc/ssh/ssh_host_ed25519_key" </dev/null
	cp "$u/etc/ssh/ssh_host_ed25519_key.pub" "$nd/hostkey.pub"
	if [ "$NODE_SUDO" = password ]; then
		echo 'admin ALL=(ALL:ALL) ALL' >"$u/etc/sudoers.d/testbed-admin"
	else
		echo 'admin ALL=(ALL:ALL) NOPASSWD: ALL' >"$u/etc/sudoers.d/testbed-admin"
	fi
	chmod 0440 "$u/etc/sudoers.d/testbed-admin"
	: >"$u/var/log/sshd.log"
	ln -sfn upper/var/log/sshd.log "$nd/sshd.log"
}

# The host-side network of a list of nodes, in one `ip -batch`: the
# namespace, a veth pair (eth0 inside, a bridge port outside).
# shellcheck disable=SC2153 # NODE_VETH comes from node.env
net_host_batch() { # NAME...
	local n
	for n in "$@"; do
		load_node "$n"
		echo "netns add $NODE_NETNS"
		echo "link add $NODE_VETH type veth peer name eth0 netns $NODE_NETNS"
		echo "link set dev $NODE_VETH master $TESTBED_BRIDGE up"
	done | ip -batch -
}

# Inside the namespace: the node's address and a default route to the host
# (which does not forward: see ensure_bridge).
net_node() { # NAME
	load_node "$1"
	ip -n "$NODE_NETNS" -batch - <<-EOF
		link set dev lo up
		addr add $NODE_ADDR/$TESTBED_PLEN dev eth0
		link set dev eth0 up
		route add default via $TESTBED_HOST_ADDR
	EOF
}

start_node() { # NAME
	load_node "$1"
	# The host's own namespaces (ours): the node's boot checks it left them.
	if [ -z "${TESTBED_HOST_NS:-}" ]; then
		TESTBED_HOST_NS=$(stat -L -c %i /proc/self/ns/mnt /proc/self/ns/uts \
			/proc/self/ns/pid /proc/self/ns/net | paste -sd ' ')
		export TESTBED_HOST_NS
	fi
	: >"$ND/console.log"
	rm -f "$ND/init.pid" "$ND/unshare.pid" "$ND/nspawn.pid"
	# Asynchronous commands of a script start with SIGINT and SIGQUIT
	# ignored; the node's processes must not inherit that.  Lock fds closed.
	# Started from a subshell that exits at once: the node is not one of
	# this script's jobs (throttle/drain must not wait for it).
	if [ "$NODE_KIND" = chroot ]; then
		(
			env --default-signal=INT,QUIT \
				nsenter --net="/run/netns/$NODE_NETNS" -- \
				unshare --mount --uts --ipc --pid --fork --kill-child --propagation private -- \
				"$SELF" __boot-chroot "$DIR" "$NODE_NAME" \
				</dev/null >>"$ND/console.log" 2>&1 8>&- 9>&- &
			echo $! >"$ND/unshare.pid"
		)
	else
		(
			env --default-signal=INT,QUIT \
				unshare --mount --propagation private -- \
				"$SELF" __boot-nspawn "$DIR" "$NODE_NAME" \
				</dev/null >>"$ND/console.log" 2>&1 8>&- 9>&- &
			echo $! >"$ND/nspawn.pid"
		)
	fi
}

# PID 1 of a chroot node: runs in the node's netns and its new mount, uts,
# ipc and pid namespaces; mounts the node's filesystem, makes it the root
# and becomes the node's init with the dangerous capabilities dropped.
internal_boot_chroot() {
	DIR=$1
	# shellcheck source=/dev/null
	. "$DIR/testbed.env"
	load_node "$2"
	local r=$ND/root hostpid c
	# /proc is still the host's here: /proc/self names our host pid.
	read -r hostpid _ </proc/self/stat
	# Refuse to go on unless the namespaces really are new: the hostname
	# and the mounts below must not land on the host.  start_node passed
	# the host's namespaces in TESTBED_HOST_NS.
	[ -n "${TESTBED_HOST_NS:-}" ] || die "TESTBED_HOST_NS not set"
	for c in $(stat -L -c %i /proc/self/ns/mnt /proc/self/ns/uts /proc/self/ns/pid /proc/self/ns/net); do
		case " $TESTBED_HOST_NS " in *" $c "*) die "$NODE_NAME: a namespace is the host's ($c)" ;; esac
	done
	echo "$hostpid" >"$ND/init.pid"

	mount -t overlay overlay \
		-o "lowerdir=$DIR/layer:$TESTBED_ROOTFS,upperdir=$ND/upper,workdir=$ND/work" "$r"
	mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
	# Non-net sysctls are host-global: read-only (as nspawn does it).
	# /proc/sys/net belongs to the node's netns and stays writable.
	mount --bind "$r/proc/sys" "$r/proc/sys"
	mount -o remount,bind,ro,nosuid,nodev,noexec "$r/proc/sys"
	mount --bind "$r/proc/sys/net" "$r/proc/sys/net"
	mount -o remount,bind,rw,nosuid,nodev,noexec "$r/proc/sys/net" # a bind copies ro
	[ ! -e "$r/proc/sysrq-trigger" ] || mount --bind -o ro "$r/proc/sysrq-trigger" "$r/proc/sysrq-trigger"
	mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$r/sys"
	# The host's cgroup tree, read-only: the node can see the cgroup
	# version and its controllers but cannot move or limit host processes.
	mount --rbind /sys/fs/cgroup "$r/sys/fs/cgroup"
	findmnt -R -n -r -o TARGET "$r/sys/fs/cgroup" | while read -r c; do
		mount -o remount,bind,ro,nosuid,nodev,noexec "$c"
	done
	# A /dev with the character devices a system needs and no block
	# device: a copy of the testbed's template (see build_dev_template).
	mount -t tmpfs -o mode=0755,nosuid,size=1m tmpfs "$r/dev"
	cp -a "$DIR/dev/." "$r/dev/"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5,nosuid,noexec devpts "$r/dev/pts"
	mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs "$r/dev/shm"
	mount -t tmpfs -o mode=0755,nosuid,nodev,size=64m tmpfs "$r/run"
	mkdir -m 1777 "$r/run/lock"
	hostname "$NODE_NAME"
	# pivot_root, not chroot: the host's tree is unmounted from this mount
	# namespace, so there is nothing left to escape to.
	cd "$r"
	pivot_root . .
	umount -l .
	cd /
	exec /usr/bin/env -i PATH="$NODE_PATH" HOME=/root LANG=C.UTF-8 \
		/usr/bin/setpriv --bounding-set "$DROP_CAPS" -- /usr/local/sbin/testbed-node init
}

# An nspawn node: systemd-nspawn boots the node's own systemd inside the
# node's netns.  This process is in a private mount namespace, so the
# overlay exists only for the node and vanishes with it.
internal_boot_nspawn() {
	DIR=$1
	# shellcheck source=/dev/null
	. "$DIR/testbed.env"
	load_node "$2"
	[ -n "${TESTBED_HOST_NS:-}" ] || die "TESTBED_HOST_NS not set"
	case " $TESTBED_HOST_NS " in
	*" $(stat -L -c %i /proc/self/ns/mnt) "*) die "$NODE_NAME: not in a private mount namespace" ;;
	esac
	mount -t overlay overlay \
		-o "lowerdir=$DIR/layer:$TESTBED_ROOTFS,upperdir=$ND/upper,workdir=$ND/work" "$ND/root"
	# --register=no --keep-unit: this machine's PID 1 is not systemd.
	# The unified cgroup hierarchy and @keyring let containerd/runc start
	# inside (see ../shared/testbed/NOTES.md).  CAP_NET_ADMIN acts on the
	# node's own network namespace only: interfaces and iptables rules as a
	# cluster leaves them (flannel.1, cni0, KUBE-* chains) are made and
	# removed inside the node, as on a real machine.  The machine name carries the
	# testbed id so that two testbeds' node-1 never meet in /run/systemd.
	exec env SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 \
		systemd-nspawn --quiet --boot --register=no --keep-unit \
		--link-journal=no --resolv-conf=off --timezone=off --console=read-only \
		--machine="pvtb$TESTBED_ID-$NODE_NAME" --hostname="$NODE_NAME" \
		-D "$ND/root" --network-namespace-path="/run/netns/$NODE_NETNS" \
		--capability=CAP_NET_ADMIN --system-call-filter=@keyring
}

# After start_node on an nspawn node: find the container's PID 1 (the
# child of systemd-nspawn that is PID 1 of its own pid namespace).
find_nspawn_init() { # NAME DEADLINE_MS
	load_node "$1"
	local np child ns
	np=$(cat "$ND/nspawn.pid")
	while (($(now_ms) < $2)); do
		pid_alive "$np" || return 1
		for child in $(pgrep -P "$np"); do
			ns=$(awk '/^NSpid:/ { print $NF }' "/proc/$child/status" 2>/dev/null) || continue
			if [ "$ns" = 1 ]; then
				echo "$child" >"$ND/init.pid"
				return 0
			fi
		done
		sleep 0.05
	done
	return 1
}

# wait_ssh TIMEOUT NAME...: until every node's sshd accepts a connection
# and sends its SSH banner.  Bounded; fails at once when a node's processes
# are gone.  (A banner, not ssh-keyscan: a key exchange per node would cost
# more CPU than booting the node.  The host key is proven by the login `up`
# makes on one node of each kind, and by every test's strict checking.)
wait_ssh() {
	local timeout=$1 deadline n a round=0
	shift
	deadline=$(($(now_ms) + timeout * 1000))
	local -A want=() name_of=()
	for n in "$@"; do
		load_node "$n"
		want[$NODE_ADDR]=1
		name_of[$NODE_ADDR]=$n
	done
	local -a order
	while ((${#want[@]})); do
		# One bounded probe of every node still waited for; the list is
		# rotated so that a node whose connect hangs cannot starve the rest.
		order=("${!want[@]}")
		order=("${order[@]:round%${#order[@]}}" "${order[@]:0:round%${#order[@]}}")
		round=$((round + 1))
		while read -r a; do
			[ -z "$a" ] || unset "want[$a]"
		done < <(timeout 3 "$SELF" __probe "${order[@]}" 2>/dev/null || true)
		((${#want[@]})) || break
		# Now and then: a node whose processes are gone will never answer.
		for a in "${!want[@]}"; do
			((round % 10 == 0)) || break
			load_node "${name_of[$a]}"
			if ! pid_alive "$(cat "$ND/unshare.pid" "$ND/nspawn.pid" 2>/dev/null | head -n1)" &&
				[ -z "$(node_init_pid)" ]; then
				say "$NODE_NAME ($a) is not running; last lines of its console:"
				tail -n 10 "$ND/console.log" >&2 || true
				return 1
			fi
		done
		if (($(now_ms) > deadline)); then
			for a in "${!want[@]}"; do
				say "${name_of[$a]} ($a): sshd not answering within ${timeout} s; last lines of its logs:"
				tail -n 5 "$DIR/nodes/${name_of[$a]}/console.log" "$DIR/nodes/${name_of[$a]}/sshd.log" >&2 2>/dev/null || true
			done
			return 1
		fi
		sleep 0.05
	done
}

# __probe ADDR...: print each address whose port 22 answers with an SSH
# banner.  Connects to all first (refused at once while sshd is not up),
# then reads the banners, so that the nodes answer in parallel.  The caller
# bounds it with `timeout`.
internal_probe() {
	local a fd line
	local -A conn=()
	for a in "$@"; do
		if exec {fd}<>"/dev/tcp/$a/22"; then conn[$a]=$fd; fi 2>/dev/null
	done
	for a in "$@"; do
		[ -n "${conn[$a]:-}" ] || continue
		fd=${conn[$a]}
		if read -r -t 2 line <&"$fd" && [[ $line == SSH-2.0-* ]]; then
			echo "$a"
		fi
		exec {fd}>&-
	done
}

# Run N jobs at most at once: `throttle N` before starting each background
# job; `drain` at the end.  Any failed job makes the caller fail.
throttle() {
	while (($(jobs -rp | wc -l) >= $1)); do
		wait -n || die "a background step failed"
	done
}
drain() {
	local pid
	for pid in $(jobs -p); do
		wait "$pid" || die "a background step failed"
	done
}

# ---------------------------------------------------------------- up

usage_up() {
	cat >&2 <<-'EOF'
		usage: testbed.sh up DIR [options]
		  --chroot N                 chroot nodes (default 3)
		  --nspawn N                 nspawn nodes, systemd as PID 1 (default 0);
		                             they come first: node-1 is the most capable
		  --sudo-password-nodes LIST nodes whose admin needs a password for sudo:
		                             comma-separated indexes or names, or none
		                             (default none: passwordless sudo everywhere)
		  --subnet CIDR|auto         inside 198.18.0.0/15, /16../24 (default auto:
		                             the first free /24, or larger for many nodes)
		  --bridge NAME              the host bridge (default pvtb0; shared)
		  --prefix NAME              node names are NAME1, NAME2... (default node-)
		  --control-plane NAME       the inventory's control plane (default node-1)
		  --cluster-name NAME        (default testbed)
		  --kubernetes-version X.Y.Z (default 1.30.4)
		  --batch N                  nodes started at once (default 32)
		  --timeout S                seconds for a batch to answer on ssh (default 30)
	EOF
	exit 2
}

cmd_up() {
	need_root
	[ $# -ge 1 ] || usage_up
	local dir=$1 nchroot=3 nnspawn=0 sudo_spec=none subnet=auto prefix=node-
	local control_plane="" cluster_name=testbed kube_version=1.30.4 batch=32
	local timeout=$SSH_READY_TIMEOUT
	BRIDGE=pvtb0
	shift
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || usage_up
		case $1 in
		--chroot) nchroot=$2 ;;
		--nspawn) nnspawn=$2 ;;
		--sudo-password-nodes) sudo_spec=$2 ;;
		--subnet) subnet=$2 ;;
		--bridge) BRIDGE=$2 ;;
		--prefix) prefix=$2 ;;
		--control-plane) control_plane=$2 ;;
		--cluster-name) cluster_name=$2 ;;
		--kubernetes-version) kube_version=$2 ;;
		--batch) batch=$2 ;;
		--timeout) timeout=$2 ;;
		*) usage_up ;;
		esac
		shift 2
	done
	local v
	for v in "$nchroot" "$nnspawn" "$batch" "$timeout"; do
		[[ $v =~ ^[0-9]+$ ]] || die "expected a number, got '$v'"
	done
	((nchroot + nnspawn >= 1)) || die "no nodes asked for"
	((batch >= 1)) || die "--batch must be at least 1"
	[[ $prefix =~ ^[a-z][a-z0-9-]*$ ]] || die "--prefix: lower-case letters, digits and '-' only"
	[[ $BRIDGE =~ ^[a-z][a-z0-9]{1,14}$ ]] || die "--bridge: a short lower-case name"
	[[ $cluster_name =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ ]] || die "--cluster-name: a DNS label"
	need_cmds ip ssh ssh-keygen ssh-keyscan nsenter unshare setpriv flock findmnt
	((nnspawn == 0)) || need_cmds systemd-nspawn

	mkdir -p "$dir"
	DIR=$(cd "$dir" && pwd)
	check_path "$DIR"
	[ ! -f "$DIR/testbed.env" ] ||
		die "$DIR already holds a testbed: run 'testbed.sh down $DIR' first"
	local total=$((nchroot + nnspawn)) start
	start=$(now_ms)

	phase "up: $total nodes"
	TESTBED_ROOTFS=$(cmd_rootfs)
	check_path "$TESTBED_ROOTFS"

	# Node table.  nspawn nodes first: node-1, the default control plane,
	# is then a node with systemd when there is one.
	local -a names=() kinds=() sudos=()
	local i
	for ((i = 1; i <= total; i++)); do
		names[i]=$prefix$i
		if ((i <= nnspawn)); then kinds[i]=nspawn; else kinds[i]=chroot; fi
		sudos[i]=nopasswd
	done
	if [ "$sudo_spec" != none ]; then
		local item found
		local -a items
		IFS=, read -r -a items <<<"$sudo_spec"
		for item in "${items[@]}"; do
			found=
			for ((i = 1; i <= total; i++)); do
				if [ "$item" = "$i" ] || [ "$item" = "${names[i]}" ] || [ "$item" = all ]; then
					sudos[i]=password
					found=1
				fi
			done
			[ -n "$found" ] || die "--sudo-password-nodes: no node '$item'"
		done
	fi
	control_plane=${control_plane:-${names[1]}}
	local cp_ok=
	for ((i = 1; i <= total; i++)); do [ "${names[i]}" = "$control_plane" ] && cp_ok=1; done
	[ -n "$cp_ok" ] || die "--control-plane: no node '$control_plane'"

	# From here on, anything that fails tears down what was made.
	rm -rf "$DIR/nodes" "$DIR/layer" "$DIR/.layer-work" "$DIR/.layer-mnt"
	rm -f "$DIR"/inventory*.yaml "$DIR/known_hosts" "$DIR/nodes.txt" "$DIR/ssh_config" \
		"$DIR/sudo.env" "$DIR"/id_ed25519*
	trap 'up_failed' EXIT
	trap 'exit 130' INT TERM

	claim_subnet "$subnet" "$total"
	# shellcheck disable=SC2034 # written by write_env through ${!v}
	TESTBED_DIR=$DIR
	TESTBED_BRIDGE=$BRIDGE
	TESTBED_PLEN=$PLEN
	TESTBED_SUBNET=$(int2ip "$NET")/$PLEN
	TESTBED_HOST_ADDR=$(int2ip $((NET + 1)))
	TESTBED_ID=$(((NET - RANGE_LO) >> 8))
	# shellcheck disable=SC2034
	TESTBED_KEY=$DIR/id_ed25519
	# shellcheck disable=SC2034
	TESTBED_KNOWN_HOSTS=$DIR/known_hosts
	TESTBED_NODES="${names[*]:1}"
	TESTBED_ADMIN_PASSWORD=
	local uuid
	read -r uuid </proc/sys/kernel/random/uuid
	TESTBED_ADMIN_PASSWORD=tb-${uuid//-/}
	local env_vars=(TESTBED_DIR TESTBED_BRIDGE TESTBED_SUBNET TESTBED_PLEN TESTBED_HOST_ADDR
		TESTBED_ID TESTBED_ROOTFS TESTBED_KEY TESTBED_KNOWN_HOSTS TESTBED_NODES
		TESTBED_ADMIN_PASSWORD)
	write_env "$DIR/testbed.env" "${env_vars[@]}"
	chmod 0600 "$DIR/testbed.env"

	# Per-node records first, so that `down` finds every node even if
	# `up` stops half-way.
	mkdir -p "$DIR/nodes"
	for ((i = 1; i <= total; i++)); do
		mkdir -p "$DIR/nodes/${names[i]}"
		NODE_NAME=${names[i]} NODE_INDEX=$i NODE_KIND=${kinds[i]} NODE_SUDO=${sudos[i]} \
			NODE_ADDR=$(int2ip $((NET + 9 + i))) NODE_NETNS=pvtb${TESTBED_ID}n$i \
			NODE_VETH=pv${TESTBED_ID}n$i \
			write_env "$DIR/nodes/${names[i]}/node.env" \
			NODE_NAME NODE_INDEX NODE_KIND NODE_SUDO NODE_ADDR NODE_NETNS NODE_VETH
	done

	ssh-keygen -q -t ed25519 -N '' -C "provision-testbed@$TESTBED_ID" -f "$DIR/id_ed25519" </dev/null
	printf 'PROVISION_SUDO_PASSWORD=%s\n' "$TESTBED_ADMIN_PASSWORD" >"$DIR/sudo.env"
	chmod 0600 "$DIR/sudo.env"
	phase "keys and records written"
	build_layer
	build_dev_template
	phase "layer built"

	local jobs_max
	jobs_max=$((2 * $(nproc)))
	for ((i = 1; i <= total; i++)); do
		throttle "$jobs_max"
		(
			load_node "${names[i]}"
			prepare_node "${names[i]}"
		) &
	done
	drain
	phase "node upper directories prepared"
	write_known_hosts
	write_inventories "$cluster_name" "$kube_version" "$control_plane"

	# Network and start, batch by batch; each batch must answer on ssh
	# before the next one starts.
	local first last n
	local -a batch_names
	for ((first = 1; first <= total; first += batch)); do
		last=$((first + batch - 1))
		((last <= total)) || last=$total
		batch_names=("${names[@]:first:last-first+1}")
		phase "batch $first..$last: network"
		net_host_batch "${batch_names[@]}"
		for n in "${batch_names[@]}"; do
			throttle "$jobs_max"
			net_node "$n" &
		done
		drain
		phase "batch $first..$last: starting"
		for n in "${batch_names[@]}"; do
			start_node "$n"
		done
		local deadline=$(($(now_ms) + timeout * 1000))
		for n in "${batch_names[@]}"; do
			load_node "$n"
			if [ "$NODE_KIND" = nspawn ]; then
				find_nspawn_init "$n" "$deadline" ||
					die "$n: systemd-nspawn did not start (see $ND/console.log)"
			fi
		done
		phase "batch $first..$last: waiting for sshd"
		wait_ssh "$timeout" "${batch_names[@]}" ||
			die "nodes $first..$last not ready within $timeout s"
	done

	phase "all listening"
	# One real login per kind of node: the key, the accounts and sshd's
	# settings work, not only the listener.
	local seen=""
	for ((i = 1; i <= total; i++)); do
		case " $seen " in *" ${kinds[i]} "*) continue ;; esac
		seen="$seen ${kinds[i]}"
		timeout 20 ssh -F "$DIR/ssh_config" "${names[i]}" true </dev/null ||
			die "${names[i]}: root login over ssh failed"
	done
	write_env "$DIR/testbed.env" "${env_vars[@]}"
	trap - EXIT INT TERM
	say "$total nodes up in $(elapsed "$start") on $TESTBED_BRIDGE ($TESTBED_SUBNET): $DIR/inventory.yaml"
}

up_failed() {
	local rc=$?
	trap - EXIT INT TERM
	exec 8>&- 9>&- # a lock held when `die` struck would block the teardown
	if [ "$rc" != 0 ]; then
		if [ -f "$DIR/testbed.env" ]; then
			say "up failed (status $rc): tearing down"
			(cmd_down "$DIR") || say "teardown after the failure failed too: run 'testbed.sh down $DIR'"
		else
			# Failed before claiming a subnet: at most a bridge to remove.
			(
				exec 9>"$NET_LOCK"
				flock -w 30 9 && bridge_gc "$BRIDGE"
			) || true
		fi
	fi
	exit "$rc"
}

write_known_hosts() {
	local n t k
	for n in $TESTBED_NODES; do
		load_node "$n"
		read -r t k _ <"$ND/hostkey.pub"
		echo "$NODE_ADDR,$NODE_NAME $t $k"
	done >"$DIR/known_hosts"
}

write_inventories() { # CLUSTER_NAME KUBE_VERSION CONTROL_PLANE
	local user n role
	for user in root admin; do
		local file=$DIR/inventory.yaml
		[ "$user" = root ] || file=$DIR/inventory-admin.yaml
		{
			echo "# Written by provision's tests/testbed/testbed.sh for the testbed in"
			echo "# $DIR (bridge $TESTBED_BRIDGE, $TESTBED_SUBNET)."
			[ "$user" = root ] || echo "# Nodes whose sudo needs a password: see nodes.txt; the password is in sudo.env."
			echo "cluster:"
			echo "  name: $1"
			echo "  kubernetes_version: \"$2\""
			echo "ssh:"
			echo "  user: $user"
			echo "  port: 22"
			echo "  identity: $DIR/id_ed25519"
			echo "  known_hosts: $DIR/known_hosts"
			echo "  host_keys: strict"
			echo "  sudo: auto"
			echo "jupyterhub:"
			echo "  enabled: false"
			echo "nodes:"
			for n in $TESTBED_NODES; do
				load_node "$n"
				role=worker
				[ "$n" != "$3" ] || role=control-plane
				echo "  - name: $n"
				echo "    address: $NODE_ADDR"
				echo "    roles: [$role]"
			done
		} >"$file"
	done
	{
		echo "# name address kind sudo(nopasswd|password) netns"
		for n in $TESTBED_NODES; do
			load_node "$n"
			echo "$n $NODE_ADDR $NODE_KIND $NODE_SUDO $NODE_NETNS"
		done
	} >"$DIR/nodes.txt"
	{
		echo "# ssh -F $DIR/ssh_config NODE: root on a testbed node, strict host keys."
		for n in $TESTBED_NODES; do
			load_node "$n"
			printf 'Host %s\n  HostName %s\n' "$n" "$NODE_ADDR"
		done
		cat <<-EOF
			Host *
			  User root
			  IdentityFile $DIR/id_ed25519
			  IdentitiesOnly yes
			  UserKnownHostsFile $DIR/known_hosts
			  GlobalKnownHostsFile /dev/null
			  StrictHostKeyChecking yes
			  BatchMode yes
			  ConnectTimeout 5
			  LogLevel ERROR
		EOF
	} >"$DIR/ssh_config"
}

# ---------------------------------------------------------------- down

cmd_down() {
	need_root
	[ $# -ge 1 ] || die "usage: testbed.sh down DIR"
	if [ ! -f "$1/testbed.env" ]; then
		say "nothing to tear down in $1"
		return 0
	fi
	load_testbed "$1"
	local start n pid deadline
	start=$(now_ms)
	local -a inits=() nspawns=() all=()

	# 1. Signal every node at once.  A chroot node dies with its PID 1
	# (the kernel kills the rest of its pid namespace); an nspawn node gets
	# SIGTERM, which systemd-nspawn turns into a clean poweroff.
	for n in "$DIR"/nodes/*/node.env; do
		[ -f "$n" ] || continue
		n=${n%/node.env}
		load_node "${n##*/}"
		pid=$(node_init_pid)
		if [ "$NODE_KIND" = nspawn ]; then
			local np
			np=$(node_nspawn_pid)
			if [ -n "$np" ]; then
				kill -TERM "$np" 2>/dev/null || true
				nspawns+=("$np")
			elif [ -n "$pid" ]; then
				kill -KILL "$pid" 2>/dev/null || true
			fi
			[ -z "$pid" ] || inits+=("$pid")
		elif [ -n "$pid" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			inits+=("$pid")
		fi
		pid=$(cat "$ND/unshare.pid" 2>/dev/null || true)
		[ -z "$pid" ] || all+=("$pid")
	done
	all+=("${inits[@]}" "${nspawns[@]}")

	phase "down: nodes signalled"
	# 2. Bounded wait; nspawn nodes that did not power off within 5 s are
	# killed (their PID 1 first, which ends the container).
	deadline=$(($(now_ms) + 5000))
	while :; do
		local alive=()
		for pid in "${all[@]}"; do pid_alive "$pid" && alive+=("$pid"); done
		((${#alive[@]})) || break
		if (($(now_ms) > deadline)); then
			for pid in "${inits[@]}" "${nspawns[@]}"; do
				kill -KILL "$pid" 2>/dev/null || true
			done
			if (($(now_ms) > deadline + 5000)); then
				say "processes still alive after 10 s: ${alive[*]}"
				break
			fi
		fi
		sleep 0.05
	done

	phase "down: node processes gone"
	# 3. Anything else still in a node's netns (a session started with
	# `exec`, a leftover) is killed: one pass over /proc for all nodes.
	local -A ours=()
	local ino path
	while read -r ino path; do
		ours[$ino]=1
	done < <(stat -L -c '%i %n' /run/netns/"pvtb${TESTBED_ID}n"* 2>/dev/null || true)
	if ((${#ours[@]})); then
		while read -r ino path; do
			[ -n "${ours[$ino]:-}" ] || continue
			pid=${path#/proc/}
			kill -KILL "${pid%%/*}" 2>/dev/null || true
		done < <(stat -L -c '%i %n' /proc/[0-9]*/ns/net 2>/dev/null || true)
	fi

	phase "down: leftovers killed"
	# 4. Namespaces, then veths.  Deleting the namespaces lets the kernel
	# destroy all their devices in one batch (deleting veths one by one
	# costs a network-stack grace period each); whatever is still there
	# after a bounded wait is deleted explicitly.
	local -a veths=() netnses=()
	for n in "$DIR"/nodes/*/node.env; do
		[ -f "$n" ] || continue
		n=${n%/node.env}
		load_node "${n##*/}"
		veths+=("$NODE_VETH")
		[ ! -e "/run/netns/$NODE_NETNS" ] || netnses+=("$NODE_NETNS")
	done
	if ((${#netnses[@]})); then
		printf 'netns del %s\n' "${netnses[@]}" | ip -force -batch - 2>/dev/null || true
	fi
	deadline=$(($(now_ms) + 5000))
	while (($(now_ms) < deadline)); do
		local left=()
		for n in "${veths[@]}"; do [ ! -e "/sys/class/net/$n" ] || left+=("$n"); done
		((${#left[@]})) || break
		sleep 0.05
	done
	for n in "${veths[@]}"; do
		[ ! -e "/sys/class/net/$n" ] || echo "link del dev $n"
	done | ip -force -batch - 2>/dev/null || true
	phase "down: netns and veths deleted"
	# 5. Mounts: nodes mount only inside their own namespaces, so this
	# finds something only after a crash half-way through a boot.
	awk -v d="$DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r path; do umount -l "$path" || true; done

	# 6. The host address; the bridge if this was the last testbed on it.
	release_subnet
	rm -f "$DIR/testbed.env"
	say "down in $(elapsed "$start")"
}

# ---------------------------------------------------------------- knobs

# node_exec NAME CMD...: CMD as root inside the node, entering the
# namespaces of its PID 1 (no SSH involved) with the same capability limits
# as the node's own processes; a clean environment.
node_exec() {
	local name=$1 pid
	shift
	load_node "$name"
	pid=$(node_init_pid)
	[ -n "$pid" ] || die "$name is not running"
	nsenter --target "$pid" --all --root --wd -- \
		/usr/bin/env -i PATH="$NODE_PATH" HOME=/root LANG=C.UTF-8 \
		/usr/bin/setpriv --bounding-set "$DROP_CAPS" -- "$@"
}

cmd_exec() {
	need_root
	[ $# -ge 3 ] || die "usage: testbed.sh exec DIR NODE CMD [ARG...]"
	load_testbed "$1"
	shift
	node_exec "$@"
}

cmd_ssh() {
	[ $# -ge 2 ] || die "usage: testbed.sh ssh DIR NODE [CMD...]"
	load_testbed "$1"
	load_node "$2"
	shift 2
	exec ssh -F "$DIR/ssh_config" "$NODE_NAME" "$@"
}

cmd_knob() { # KNOB DIR NODE [ARGS]
	need_root
	local knob=$1
	[ $# -ge 3 ] || die "usage: testbed.sh $knob DIR NODE"
	load_testbed "$2"
	load_node "$3"
	local name=$NODE_NAME
	case $knob in
	stop-sshd)
		node_exec "$name" testbed-node sshd-stop
		;;
	start-sshd)
		node_exec "$name" testbed-node sshd-start
		wait_ssh 10 "$name"
		;;
	rekey)
		# The node's new key goes to hostkey.pub; known_hosts keeps the old
		# one, so strict host key checking now refuses the node.
		node_exec "$name" testbed-node rekey >"$ND/hostkey.pub.new"
		mv "$ND/hostkey.pub.new" "$ND/hostkey.pub"
		wait_ssh 10 "$name"
		;;
	hang)
		node_exec "$name" testbed-node hang
		;;
	resume)
		node_exec "$name" testbed-node resume
		;;
	kill-node)
		# The node dies: every process at once, open sessions drop.
		# --silent unplugs it first, so that peers see silence (timeouts)
		# rather than connection resets, as with a machine that lost power.
		local pid np deadline
		if [ "${4:-}" = --silent ]; then
			ip -n "$NODE_NETNS" link set dev eth0 down
		fi
		pid=$(node_init_pid)
		[ -n "$pid" ] || die "$name is not running"
		np=
		[ "$NODE_KIND" != nspawn ] || np=$(node_nspawn_pid)
		kill -KILL "$pid"
		deadline=$(($(now_ms) + 10000))
		while pid_alive "$pid" || { [ -n "$np" ] && pid_alive "$np"; }; do
			(($(now_ms) < deadline)) || die "$name: still alive 10 s after SIGKILL"
			sleep 0.05
		done
		;;
	start-node)
		# A killed node powered on again: the same machine (its overlay's
		# upper directory, so every file it wrote; its address, hostname,
		# machine-id and host key), booted afresh.  On an nspawn node
		# systemd starts what is enabled (containerd, kubelet, ...); /run
		# is new, as after a power cut.  Plugged in again first: the link
		# up and the default route back (a link going down drops its
		# routes).
		[ -z "$(node_init_pid)" ] || die "$name is running"
		[ "$NODE_KIND" != nspawn ] || [ -z "$(node_nspawn_pid)" ] || die "$name is running"
		[ -e "/run/netns/$NODE_NETNS" ] || die "$name: no network namespace $NODE_NETNS"
		ip -n "$NODE_NETNS" link set dev eth0 up
		ip -n "$NODE_NETNS" route replace default via "$TESTBED_HOST_ADDR"
		mv -f "$ND/console.log" "$ND/console.log.1" 2>/dev/null || true
		start_node "$name"
		if [ "$NODE_KIND" = nspawn ]; then
			find_nspawn_init "$name" $(($(now_ms) + SSH_READY_TIMEOUT * 1000)) ||
				die "$name: systemd-nspawn did not start (see $ND/console.log)"
		fi
		wait_ssh "$SSH_READY_TIMEOUT" "$name"
		;;
	esac
}

# ---------------------------------------------------------------- main

case ${1:-} in
rootfs) shift; cmd_rootfs "$@" ;;
up) shift; cmd_up "$@" ;;
down) shift; cmd_down "$@" ;;
exec) shift; cmd_exec "$@" ;;
ssh) shift; cmd_ssh "$@" ;;
stop-sshd | start-sshd | rekey | hang | resume | kill-node | start-node) cmd_knob "$@" ;;
__layer) shift; internal_layer "$@" ;;
__probe) shift; internal_probe "$@" ;;
__boot-chroot) shift; internal_boot_chroot "$@" ;;
__boot-nspawn) shift; internal_boot_nspawn "$@" ;;
*)
	sed -n '2,/^set -euo/p' "$SELF" | sed -n 's/^# \{0,1\}//p' | sed -n '1,10p' >&2
	exit 2
	;;
esac
