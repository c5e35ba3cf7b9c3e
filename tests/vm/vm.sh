#!/bin/bash
# tests/vm/vm.sh: QEMU virtual machines as provision's test nodes.
#
#   vm.sh image                       build (once) the cached Debian 12 node image
#   vm.sh up DIR [options]            boot VMs, write DIR/inventory.yaml ...
#   vm.sh down DIR                    stop the VMs; remove taps, bridge, overlays
#   vm.sh ssh DIR NODE [CMD...]       ssh to NODE as root (strict host keys)
#   vm.sh reboot DIR NODE...          clean reboot; the same overlay; waits for ssh
#   vm.sh reset DIR NODE...           hard reset (no sync, no shutdown); same overlay
#   vm.sh stop DIR NODE / start DIR NODE
#   vm.sh netem DIR NODE DELAY_MS|off added latency on the node's link
#   vm.sh wait DIR NODE...            until the nodes' sshd answers (bounded)
#   vm.sh status DIR
#
# Each VM has its own copy-on-write overlay over the cached image, its own
# machine-id, SMBIOS UUID, ed25519 host key and MAC, and one address on a
# private bridge this script creates in 198.18.0.0/15 (a /24 no address or
# route of this machine overlaps; the bridge forwards nothing beyond itself).
# This machine reaches the VMs at those addresses, as provision reaches real
# nodes, and the VMs reach each other (NFS).  QEMU uses KVM only where a probe
# boot proves that it works, TCG otherwise.
#
# Bash; run as root.  README.md in this directory documents the options and
# every file `up` writes.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
umask 022
# A test script's TAP stream (3) and VM tier lock (7): nothing started here
# (QEMU, shared ssh connections) may keep them open.
exec 3>&- 7>&-

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
VM_SRC=${SELF%/*}
CACHE_DIR=${PROVISION_VM_CACHE:-/var/cache/provision-vm}
MIRROR=${PROVISION_VM_MIRROR:-${PROVISION_TESTBED_MIRROR:-http://deb.debian.org/debian}}
# The lock the fast testbed (tests/testbed) takes around its address
# claims: holding the same one, the two never pick the same /24 at once.
NET_LOCK=/run/provision-testbed.lock
BRIDGE_ALIAS=provision-vm
RANGE_LO=$(((198 << 24) + (18 << 16)))
RANGE_HI=$((RANGE_LO + (2 << 16) - 1))
# The control plane: provision's preflight wants 2 CPUs and 1.7 GiB there
# (kubeadm's minimum).  Other nodes: the smallest VM that runs the roles.
CP_SMP=${PROVISION_VM_CP_SMP:-2}
CP_MEM=${PROVISION_VM_CP_MEM:-2048}
DEF_SMP=${PROVISION_VM_SMP:-1}
DEF_MEM=${PROVISION_VM_MEM:-512}
FW=opt/org.provision

die() {
	echo "vm: $*" >&2
	exit 1
}
say() { echo "vm: $*" >&2; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
elapsed() { # START_MS -> "1.2 s"
	local ms=$(($(now_ms) - $1))
	printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100))
}

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (a bridge, taps, debootstrap)"
}

need_cmds() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || die "$c is missing (make deps installs the VM tier's packages)"
	done
}

# ---------------------------------------------------------------- image

# shellcheck source=image-recipe.sh
. "$VM_SRC/image-recipe.sh"

tree_key() {
	printf '%s\n' "$IMAGE_SUITE" "$IMAGE_VARIANT" "$IMAGE_PACKAGES" | sha256sum | cut -c1-16
}

image_key() {
	cat "$VM_SRC/image-recipe.sh" "$VM_SRC/node-init.sh" | sha256sum | cut -c1-16
}

image_path() {
	echo "$CACHE_DIR/image-$(image_key)"
}

# The root tree: debootstrap, cached by tree_key.  Called with the lock held.
build_tree() {
	local dest start
	dest=$CACHE_DIR/tree-$(tree_key)
	if [ -f "$dest/.complete" ]; then
		echo "$dest"
		return 0
	fi
	need_cmds debootstrap
	rm -rf "$dest.tmp"
	say "debootstrap $IMAGE_SUITE into $dest (from $MIRROR; log: $dest.log)"
	start=$(now_ms)
	if ! timeout 1800 debootstrap --variant="$IMAGE_VARIANT" --include="$IMAGE_PACKAGES" \
		"$IMAGE_SUITE" "$dest.tmp" "$MIRROR" >"$dest.log" 2>&1 8>&-; then
		tail -n 20 "$dest.log" >&2
		rm -rf "$dest.tmp"
		die "debootstrap failed (see $dest.log)"
	fi
	touch "$dest.tmp/.complete"
	mv "$dest.tmp" "$dest"
	say "debootstrap: $(elapsed "$start") ($(du -sh "$dest" | cut -f1))"
	echo "$dest"
}

# The disk image from the tree: a copy customized by image_customize, an
# ext4 filesystem made from it with `mkfs.ext4 -d` and a swap area, both
# written straight into their partitions of a raw disk (no loop device, no
# mount), converted to qcow2.  Cached by image_key; the kernel and initrd
# beside it (QEMU boots them directly).
cmd_image() {
	need_root
	local dest tree tmp start root_off swap_off disk_mb
	dest=$(image_path)
	if [ -f "$dest/.complete" ]; then
		echo "$dest"
		return 0
	fi
	need_cmds mkfs.ext4 mkswap sfdisk qemu-img
	mkdir -p "$CACHE_DIR"
	exec 8>"$CACHE_DIR/.lock"
	flock -w 1800 8 || die "timed out (1800 s) waiting for another image build"
	if [ -f "$dest/.complete" ]; then
		exec 8>&-
		echo "$dest"
		return 0
	fi
	start=$(now_ms)
	tree=$(build_tree)
	tmp=$dest.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	say "making $dest"
	cp -a "$tree" "$tmp/root"
	rm -f "$tmp/root/.complete"
	image_customize "$tmp/root"
	cp "$tmp/root/boot/vmlinuz-"* "$tmp/vmlinuz"
	cp "$tmp/root/boot/initrd.img-"* "$tmp/initrd.img"

	root_off=1
	swap_off=$((root_off + IMAGE_ROOT_MB))
	disk_mb=$((swap_off + IMAGE_SWAP_MB + 1))
	truncate -s "${disk_mb}M" "$tmp/disk.raw"
	mkfs.ext4 -q -F -L pvroot -U "$IMAGE_ROOT_UUID" -E "offset=$((root_off << 20))" \
		-d "$tmp/root" "$tmp/disk.raw" "${IMAGE_ROOT_MB}M"
	truncate -s "${IMAGE_SWAP_MB}M" "$tmp/swap.raw"
	mkswap -q -L pvswap -U "$IMAGE_SWAP_UUID" "$tmp/swap.raw" >/dev/null
	dd if="$tmp/swap.raw" of="$tmp/disk.raw" bs=1M seek="$swap_off" conv=notrunc,sparse status=none
	sfdisk -q --wipe never --wipe-partitions never "$tmp/disk.raw" >/dev/null <<-EOF
		label: dos
		unit: sectors
		start=$((root_off << 11)), size=$((IMAGE_ROOT_MB << 11)), type=83
		start=$((swap_off << 11)), size=$((IMAGE_SWAP_MB << 11)), type=82
	EOF
	qemu-img convert -O qcow2 "$tmp/disk.raw" "$tmp/base.qcow2"
	rm -rf "$tmp/disk.raw" "$tmp/swap.raw" "$tmp/root"
	cp "$VM_SRC/image-recipe.sh" "$tmp/recipe"
	touch "$tmp/.complete"
	mv "$tmp" "$dest"
	exec 8>&-
	say "image ready in $(elapsed "$start"): $dest ($(du -sh "$dest/base.qcow2" | cut -f1))"
	echo "$dest"
}

# ---------------------------------------------------------------- accel

# kvm when /dev/kvm is usable, the CPU says it has hardware virtualisation
# and a probe boot of the image's kernel under KVM reaches its first
# userspace step within 30 s; tcg otherwise.  (A nested "KVM" that cannot
# run this kernel -- kvm_pvm, for one -- fails the probe or the flag test.)
choose_accel() { # IMAGE_DIR LOG -> kvm|tcg
	local want=${PROVISION_VM_ACCEL:-auto}
	case $want in
	tcg | kvm)
		echo "$want"
		return 0
		;;
	auto) ;;
	*) die "PROVISION_VM_ACCEL: auto, tcg or kvm, not '$want'" ;;
	esac
	if [ ! -w /dev/kvm ] || ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo tcg
		return 0
	fi
	# No root device: the kernel runs the initramfs, which panics for want
	# of one; panic=-1 reboots at once and -no-reboot ends QEMU.
	: >"$2"
	if timeout 30 qemu-system-x86_64 -accel kvm -cpu host -m 256 -nodefaults -display none \
		-no-reboot -serial "file:$2" -kernel "$1/vmlinuz" -initrd "$1/initrd.img" \
		-append "console=ttyS0 panic=-1 root=/dev/pvvm-none rootdelay=1" </dev/null >/dev/null 2>&1 &&
		grep -q 'Run /init as init process' "$2"; then
		echo kvm
	else
		echo tcg
	fi
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

# Every IPv4 prefix this machine has an address or a route in, as
# "FIRST LAST" integer pairs.
host_prefixes() {
	local tok rest p first len
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
		first=$(ip2int "${p%/*}")
		len=${p#*/}
		first=$((first & ~((1 << (32 - len)) - 1) & 0xffffffff))
		echo "$first $((first + (1 << (32 - len)) - 1))"
	done
}

subnet_free() { # NET PREFIXES: the /24 at NET overlaps none of them
	local lo=$1 hi=$(($1 + 255)) a b
	while read -r a b; do
		[ -n "$a" ] || continue
		((a > hi || b < lo)) || return 1
	done <<<"$2"
}

# claim_subnet SPEC: pick a /24 in 198.18.0.0/15 (SPEC: auto or A.B.C.0/24),
# create this VM set's bridge and put the host's address on it.  Auto takes
# the highest free /24, the fast testbed the lowest, so they rarely meet;
# the shared lock makes sure they never take the same one.  Sets NET, ID,
# BRIDGE.
claim_subnet() {
	local spec=$1 prefixes cand
	exec 9>"$NET_LOCK"
	flock -w 30 9 || die "timed out waiting for $NET_LOCK"
	prefixes=$(host_prefixes)
	NET=
	if [ "$spec" = auto ]; then
		for ((cand = RANGE_HI - 255; cand >= RANGE_LO; cand -= 256)); do
			if subnet_free "$cand" "$prefixes"; then
				NET=$cand
				break
			fi
		done
		[ -n "$NET" ] || die "no free /24 left in 198.18.0.0/15"
	else
		[[ $spec =~ ^([0-9]{1,3}\.){3}0/24$ ]] || die "--subnet: expected A.B.C.0/24, got '$spec'"
		cand=$(ip2int "${spec%/*}")
		((cand >= RANGE_LO && cand + 255 <= RANGE_HI)) ||
			die "--subnet: '$spec' is outside 198.18.0.0/15, the only range the VM tier may use"
		subnet_free "$cand" "$prefixes" ||
			die "--subnet: $spec overlaps an address or route of this machine (the fast testbed's?)"
		NET=$cand
	fi
	ID=$(((NET - RANGE_LO) >> 8))
	BRIDGE=pvvm$ID
	! ip link show "$BRIDGE" >/dev/null 2>&1 || die "interface $BRIDGE exists already"
	ip link add name "$BRIDGE" type bridge
	ip link set dev "$BRIDGE" alias "$BRIDGE_ALIAS"
	# Nothing arriving on the bridge is forwarded anywhere, whatever this
	# machine's ip_forward says, and the bridge has no IPv6 (these settings
	# belong to the bridge and go with it).
	echo 0 >"/proc/sys/net/ipv4/conf/$BRIDGE/forwarding"
	echo 1 >"/proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6"
	ip addr add "$(int2ip $((NET + 1)))/24" dev "$BRIDGE"
	ip link set dev "$BRIDGE" up
	exec 9>&-
}

# ---------------------------------------------------------------- state

load_set() { # DIR
	[ -d "$1" ] || die "no VM directory $1"
	DIR=$(cd "$1" && pwd)
	[ -f "$DIR/vm.env" ] || die "$DIR holds no VMs (no vm.env)"
	# shellcheck source=/dev/null
	. "$DIR/vm.env"
}

load_node() { # NAME
	[[ $1 =~ ^[a-z][a-z0-9-]*$ ]] || die "bad node name '$1'"
	ND=$DIR/nodes/$1
	[ -f "$ND/node.env" ] || die "no node '$1' in $DIR"
	# shellcheck source=/dev/null
	. "$ND/node.env"
}

write_env() { # FILE VAR...
	local file=$1 v
	shift
	for v in "$@"; do
		printf '%s=%q\n' "$v" "${!v}"
	done >"$file.tmp"
	mv "$file.tmp" "$file"
}

# The node's QEMU process, verified by its command line (a recycled pid
# is not ours).
qemu_pid() {
	local pid
	pid=$(cat "$ND/qemu.pid" 2>/dev/null) || return 0
	[ -r "/proc/$pid/cmdline" ] || return 0
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-name pvvm$VM_ID-$NODE_NAME " || return 0
	echo "$pid"
}

# ---------------------------------------------------------------- VMs

# start_vm NAME: boot the node's QEMU on its overlay (made if missing),
# detached.  The console of earlier boots is kept as console.N.log (and
# QEMU's log of CPU resets and guest errors as qemu-debug.N.log).
start_vm() {
	load_node "$1"
	[ -z "$(qemu_pid)" ] || die "$NODE_NAME is running already"
	local n accel_opts hosts h
	if [ ! -f "$ND/disk.qcow2" ]; then
		qemu-img create -q -f qcow2 -F qcow2 -b "$VM_IMAGE/base.qcow2" "$ND/disk.qcow2"
	fi
	if [ -s "$ND/console.log" ]; then
		n=1
		while [ -e "$ND/console.$n.log" ]; do n=$((n + 1)); done
		mv "$ND/console.log" "$ND/console.$n.log"
		[ ! -f "$ND/qemu-debug.log" ] || mv "$ND/qemu-debug.log" "$ND/qemu-debug.$n.log"
	fi
	if [ "$VM_ACCEL" = kvm ]; then
		accel_opts=(-accel kvm -cpu host)
	else
		accel_opts=(-accel 'tcg,thread=multi,tb-size=256' -cpu max)
	fi
	hosts=
	for h in $VM_NODES; do
		hosts="$hosts${hosts:+,}$h@$(awk -v n="$h" '$1 == n { print $2 }' "$DIR/nodes.txt")"
	done
	now_ms >"$ND/started"
	rm -f "$ND/qemu.pid"
	qemu-system-x86_64 -name "pvvm$VM_ID-$NODE_NAME" "${accel_opts[@]}" \
		-m "$NODE_MEM_MB" -smp "$NODE_SMP" -uuid "$NODE_UUID" \
		-nodefaults -display none -vga none -no-reboot \
		-monitor "unix:$VM_RUN/$NODE_NAME.mon,server,nowait" \
		-kernel "$VM_IMAGE/vmlinuz" -initrd "$VM_IMAGE/initrd.img" \
		-append "root=UUID=$IMAGE_ROOT_UUID ro console=ttyS0 net.ifnames=0 panic=-1 no_timer_check systemd.machine_id=$NODE_MACHINE_ID pvvm.name=$NODE_NAME pvvm.addr=$NODE_ADDR/24 pvvm.hosts=$hosts" \
		-drive "file=$ND/disk.qcow2,if=virtio,format=qcow2,cache=unsafe,discard=unmap" \
		-netdev "tap,id=n0,ifname=$NODE_TAP,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=$NODE_MAC" \
		-device virtio-rng-pci \
		-fw_cfg "name=$FW/hostkey,file=$ND/hostkey" \
		-fw_cfg "name=$FW/hostkey.pub,file=$ND/hostkey.pub" \
		-fw_cfg "name=$FW/authorized_keys,file=$DIR/id_ed25519.pub" \
		-serial "file:$ND/console.log" -pidfile "$ND/qemu.pid" -daemonize \
		-d cpu_reset,guest_errors -D "$ND/qemu-debug.log" \
		</dev/null >"$ND/qemu.log" 2>&1 8>&- 9>&- ||
		{
			cat "$ND/qemu.log" >&2
			die "$NODE_NAME: qemu did not start"
		}
}

# wait_ssh TIMEOUT NAME...: until each node's sshd sends its banner.
# Bounded; fails at once when a node's QEMU is gone.  Prints the boot time
# of each node.
wait_ssh() {
	local timeout=$1 deadline n line
	shift
	deadline=$(($(now_ms) + timeout * 1000))
	local -A want=() retried=()
	for n in "$@"; do want[$n]=1; done
	while ((${#want[@]})); do
		for n in "${!want[@]}"; do
			load_node "$n"
			if line=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/22" && head -c 4 <&3' _ "$NODE_ADDR" 2>/dev/null) &&
				[ "$line" = SSH- ]; then
				unset "want[$n]"
				say "$n: ssh answers $(elapsed "$(cat "$ND/started")") after QEMU started"
				continue
			fi
			if [ -z "$(qemu_pid)" ]; then
				say "$n: QEMU is gone; the end of its console:"
				tail -n 15 "$ND/console.log" >&2 || true
				# Once per node and call: on a starved machine an emulated
				# kernel can panic early (a timer check that timed out).
				[ -z "${retried[$n]:-}" ] || return 1
				retried[$n]=1
				say "$n: starting it once more"
				[ "${BOOT_FRESH_OVERLAY:-0}" = 0 ] || rm -f "$ND/disk.qcow2"
				start_vm "$n"
				continue
			fi
		done
		((${#want[@]})) || break
		if (($(now_ms) > deadline)); then
			for n in "${!want[@]}"; do
				say "$n: no ssh within $timeout s; the end of its console:"
				tail -n 15 "$DIR/nodes/$n/console.log" >&2 || true
			done
			return 1
		fi
		sleep 0.5
	done
}

# stop_vm NAME [TIMEOUT]: end the node's QEMU (SIGTERM: QEMU closes its
# disk cleanly; SIGKILL after TIMEOUT seconds).
stop_vm() {
	load_node "$1"
	local pid deadline
	pid=$(qemu_pid)
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$(($(now_ms) + ${2:-10} * 1000))
	while [ -e "/proc/$pid" ]; do
		if (($(now_ms) > deadline)); then
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.2
			break
		fi
		sleep 0.1
	done
}

# wait_exit NAME TIMEOUT: until the node's QEMU has ended by itself (a VM
# that rebooted: -no-reboot makes QEMU exit).  Fails after the timeout.
wait_exit() {
	load_node "$1"
	local pid deadline
	pid=$(qemu_pid)
	[ -n "$pid" ] || return 0
	deadline=$(($(now_ms) + $2 * 1000))
	while [ -e "/proc/$pid" ]; do
		if (($(now_ms) > deadline)); then
			say "$1: still running $2 s after the reboot was asked for; the end of its console:"
			tail -n 5 "$ND/console.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
}

# monitor NAME COMMAND: one command to the node's QEMU monitor (HMP);
# prints its answer.
monitor() {
	load_node "$1"
	timeout 20 python3 - "$VM_RUN/$NODE_NAME.mon" "$2" <<-'EOF'
		import socket, sys
		s = socket.socket(socket.AF_UNIX)
		s.connect(sys.argv[1])
		def until_prompt():
		    buf = b""
		    while not buf.endswith(b"(qemu) "):
		        chunk = s.recv(4096)
		        if not chunk:
		            break
		        buf += chunk
		    return buf
		until_prompt()
		s.sendall(sys.argv[2].encode() + b"\n")
		out = until_prompt().decode(errors="replace").replace("\r", "")
		lines = [l for l in out.split("\n")[1:] if not l.startswith("(qemu)")]
		sys.stdout.write("\n".join(lines).strip() + "\n" if "".join(lines).strip() else "")
	EOF
}

vssh() { # NAME ARGS...: ssh to a node with the set's ssh_config
	local n=$1
	shift
	ssh -F "$DIR/ssh_config" "$n" "$@"
}

# ---------------------------------------------------------------- up

usage_up() {
	cat >&2 <<-'EOF'
		usage: vm.sh up DIR [--nodes N] [--nfs-server NAME] [--subnet auto|A.B.C.0/24]
		                    [--timeout S] [--cluster-name NAME]
	EOF
	exit 2
}

cmd_up() {
	need_root
	[ $# -ge 1 ] || usage_up
	local dir=$1 nodes=2 nfs_server='' subnet=auto timeout=${PROVISION_VM_BOOT_TIMEOUT:-420} cluster=vmtest
	shift
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || usage_up
		case $1 in
		--nodes) nodes=$2 ;;
		--nfs-server) nfs_server=$2 ;;
		--subnet) subnet=$2 ;;
		--timeout) timeout=$2 ;;
		--cluster-name) cluster=$2 ;;
		*) usage_up ;;
		esac
		shift 2
	done
	[[ $nodes =~ ^[1-4]$ ]] || die "--nodes: 1 to 4 (TCG needs about a core per booting VM)"
	[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout: seconds"
	need_cmds qemu-system-x86_64 qemu-img ip ssh ssh-keygen flock
	[ -c /dev/net/tun ] || die "no /dev/net/tun: cannot make tap devices"

	mkdir -p "$dir"
	DIR=$(cd "$dir" && pwd)
	[ ! -f "$DIR/vm.env" ] || die "$DIR holds VMs already: run 'vm.sh down $DIR' first"
	local start i name
	start=$(now_ms)
	VM_IMAGE=$(cmd_image)
	rm -rf "$DIR/nodes"
	rm -f "$DIR"/inventory.yaml "$DIR/known_hosts" "$DIR/nodes.txt" "$DIR/ssh_config" "$DIR"/id_ed25519*
	mkdir -p "$DIR/nodes"
	VM_ACCEL=$(choose_accel "$VM_IMAGE" "$DIR/accel-probe.log")

	trap 'up_failed' EXIT
	trap 'exit 130' INT TERM
	claim_subnet "$subnet"
	# shellcheck disable=SC2034 # written by write_env
	VM_DIR=$DIR
	VM_ID=$ID
	VM_BRIDGE=$BRIDGE
	VM_SUBNET=$(int2ip "$NET")/24
	# shellcheck disable=SC2034 # written by write_env
	VM_HOST_ADDR=$(int2ip $((NET + 1)))
	VM_NODES=
	for ((i = 1; i <= nodes; i++)); do VM_NODES="$VM_NODES${VM_NODES:+ }vm-$i"; done
	# Sockets (QEMU monitors, ssh connection sharing) where their paths
	# stay short whatever DIR is.
	VM_RUN=/run/provision-vm/$VM_ID
	rm -rf "$VM_RUN"
	mkdir -p /run/provision-vm
	mkdir -m 0700 "$VM_RUN"
	local vars=(VM_DIR VM_ID VM_BRIDGE VM_SUBNET VM_HOST_ADDR VM_NODES VM_IMAGE VM_ACCEL VM_RUN)
	write_env "$DIR/vm.env" "${vars[@]}"

	ssh-keygen -q -t ed25519 -N '' -C "provision-vm@$VM_ID" -f "$DIR/id_ed25519" </dev/null
	: >"$DIR/known_hosts"
	echo "# name address tap mac cpus mem_mb" >"$DIR/nodes.txt"
	local uuid
	for ((i = 1; i <= nodes; i++)); do
		name=vm-$i
		ND=$DIR/nodes/$name
		mkdir -p "$ND"
		NODE_NAME=$name
		NODE_ADDR=$(int2ip $((NET + 9 + i)))
		NODE_TAP=pvvm${VM_ID}t$i
		NODE_MAC=$(printf '52:54:%02x:%02x:%02x:%02x' $((VM_ID >> 8)) $((VM_ID & 255)) 0 "$i")
		read -r uuid </proc/sys/kernel/random/uuid
		NODE_UUID=$uuid
		read -r uuid </proc/sys/kernel/random/uuid
		NODE_MACHINE_ID=${uuid//-/}
		if ((i == 1)); then
			NODE_SMP=$CP_SMP NODE_MEM_MB=$CP_MEM NODE_ROLE=control-plane
		else
			NODE_SMP=$DEF_SMP NODE_MEM_MB=$DEF_MEM NODE_ROLE=worker
		fi
		write_env "$ND/node.env" NODE_NAME NODE_ADDR NODE_TAP NODE_MAC NODE_UUID \
			NODE_MACHINE_ID NODE_SMP NODE_MEM_MB NODE_ROLE
		ssh-keygen -q -t ed25519 -N '' -C "root@$name" -f "$ND/hostkey" </dev/null
		read -r t k _ <"$ND/hostkey.pub"
		echo "$NODE_ADDR,$name $t $k" >>"$DIR/known_hosts"
		echo "$name $NODE_ADDR $NODE_TAP $NODE_MAC $NODE_SMP $NODE_MEM_MB" >>"$DIR/nodes.txt"
	done
	if [ -n "$nfs_server" ]; then
		[ -f "$DIR/nodes/$nfs_server/node.env" ] || die "--nfs-server: no node '$nfs_server'"
	fi
	write_files "$cluster" "$nfs_server"

	for name in $VM_NODES; do
		load_node "$name"
		ip tuntap add dev "$NODE_TAP" mode tap
		ip link set dev "$NODE_TAP" master "$VM_BRIDGE" up
	done
	for name in $VM_NODES; do start_vm "$name"; done
	say "$nodes VMs started ($VM_ACCEL) on $VM_BRIDGE ($VM_SUBNET); waiting up to $timeout s for ssh"
	# shellcheck disable=SC2086
	BOOT_FRESH_OVERLAY=1 wait_ssh "$timeout" $VM_NODES || die "VMs not ready within $timeout s"
	# A real login on every VM: its host key (strict), the client key, root.
	for name in $VM_NODES; do
		timeout 60 ssh -F "$DIR/ssh_config" "$name" true </dev/null || die "$name: root login over ssh failed"
	done
	trap - EXIT INT TERM
	say "$nodes VMs up in $(elapsed "$start"): $DIR/inventory.yaml"
}

up_failed() {
	local rc=$?
	trap - EXIT INT TERM
	exec 8>&- 9>&-
	if [ "$rc" != 0 ]; then
		say "up failed (status $rc): tearing down"
		(cmd_down "$DIR") || say "teardown failed too: run 'vm.sh down $DIR'"
	fi
	exit "$rc"
}

write_files() { # CLUSTER NFS_SERVER
	local n r
	{
		echo "# ssh -F $DIR/ssh_config NODE: root on a VM, strict host keys."
		for n in $VM_NODES; do
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
			  ConnectTimeout 60
			  ServerAliveInterval 5
			  ServerAliveCountMax 12
			  ControlMaster auto
			  ControlPath $VM_RUN/ssh-%n
			  ControlPersist 600
			  LogLevel ERROR
		EOF
	} >"$DIR/ssh_config"
	{
		echo "# Written by provision's tests/vm/vm.sh for the VMs in $DIR"
		echo "# (bridge $VM_BRIDGE, $VM_SUBNET)."
		echo "cluster:"
		echo "  name: $1"
		echo "  kubernetes_version: \"1.30.4\""
		echo "ssh:"
		echo "  user: root"
		echo "  port: 22"
		echo "  identity: $DIR/id_ed25519"
		echo "  known_hosts: $DIR/known_hosts"
		echo "  host_keys: strict"
		echo "  sudo: auto"
		echo "  connect_timeout: 30"
		echo "jupyterhub:"
		echo "  enabled: false"
		if [ -n "$2" ]; then
			echo "storage:"
			echo "  nfs:"
			echo "    server: $2"
			echo "    path: /srv/nfs"
		fi
		echo "nodes:"
		for n in $VM_NODES; do
			load_node "$n"
			r=$NODE_ROLE
			[ "$n" != "$2" ] || r="$r, nfs-server"
			echo "  - name: $n"
			echo "    address: $NODE_ADDR"
			echo "    roles: [$r]"
		done
	} >"$DIR/inventory.yaml"
}

# ---------------------------------------------------------------- down

cmd_down() {
	need_root
	[ $# -ge 1 ] || die "usage: vm.sh down DIR"
	if [ ! -f "$1/vm.env" ]; then
		say "nothing to tear down in $1"
		return 0
	fi
	load_set "$1"
	local n pid
	local -a pids=()
	# Every QEMU at once: SIGTERM (QEMU closes its disks), SIGKILL after 10 s.
	for n in "$DIR"/nodes/*/node.env; do
		[ -f "$n" ] || continue
		n=${n%/node.env}
		load_node "${n##*/}"
		pid=$(qemu_pid)
		[ -z "$pid" ] || {
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		}
	done
	local deadline=$(($(now_ms) + 10000))
	for pid in "${pids[@]}"; do
		while [ -e "/proc/$pid" ] && (($(now_ms) < deadline)); do sleep 0.1; done
		[ ! -e "/proc/$pid" ] || kill -KILL "$pid" 2>/dev/null || true
	done
	for n in "$DIR"/nodes/*/node.env; do
		[ -f "$n" ] || continue
		n=${n%/node.env}
		load_node "${n##*/}"
		[ ! -e "/sys/class/net/$NODE_TAP" ] || ip link del dev "$NODE_TAP" 2>/dev/null || true
		rm -f "$ND/disk.qcow2"
		# The ssh connection this node's commands shared (ControlPersist).
		[ ! -S "${VM_RUN:-/nonexistent}/ssh-$NODE_NAME" ] ||
			timeout 10 ssh -F "$DIR/ssh_config" -O exit "$NODE_NAME" >/dev/null 2>&1 || true
	done
	[ -z "${VM_RUN:-}" ] || rm -rf "$VM_RUN"
	(
		exec 9>"$NET_LOCK"
		flock -w 30 9 || die "timed out waiting for $NET_LOCK"
		if ip link show "$VM_BRIDGE" >/dev/null 2>&1 &&
			[ "$(cat "/sys/class/net/$VM_BRIDGE/ifalias" 2>/dev/null)" = "$BRIDGE_ALIAS" ]; then
			ip link del dev "$VM_BRIDGE"
		fi
	)
	rm -f "$DIR/vm.env"
	say "down: $DIR"
}

# ---------------------------------------------------------------- helpers

cmd_ssh() {
	[ $# -ge 2 ] || die "usage: vm.sh ssh DIR NODE [CMD...]"
	load_set "$1"
	load_node "$2"
	shift 2
	exec ssh -F "$DIR/ssh_config" "$NODE_NAME" "$@"
}

# reboot / reset DIR NODE...: the VMs go down and QEMU exits (-no-reboot);
# each is started again on the SAME overlay, then ssh is waited for.
# reboot: a clean `systemctl reboot` inside the VM.  reset: QEMU's
# system_reset, the reset button (no shutdown, no sync: what the guest had
# only in memory is lost).  Either fails when the VM does not go down.
cmd_restart() { # reboot|reset DIR NODE...
	need_root
	local how=$1
	[ $# -ge 3 ] || die "usage: vm.sh $how DIR NODE..."
	load_set "$2"
	shift 2
	local n
	for n in "$@"; do
		load_node "$n"
		[ -n "$(qemu_pid)" ] || die "$n is not running"
		if [ "$how" = reboot ]; then
			# 255: the connection went with the shutdown (or never came).
			timeout 120 ssh -F "$DIR/ssh_config" -o ControlPath=none "$n" 'systemctl reboot' \
				</dev/null >/dev/null 2>&1 || true
		else
			monitor "$n" system_reset >/dev/null || die "$n: QEMU's monitor did not answer"
		fi
	done
	for n in "$@"; do
		wait_exit "$n" "${PROVISION_VM_SHUTDOWN_TIMEOUT:-180}" || die "$n did not go down ($how)"
		ssh -F "$DIR/ssh_config" -O exit "$n" >/dev/null 2>&1 || true
	done
	for n in "$@"; do start_vm "$n"; done
	wait_ssh "${PROVISION_VM_BOOT_TIMEOUT:-420}" "$@" || die "no ssh after the $how"
}

cmd_stop() {
	need_root
	[ $# -ge 2 ] || die "usage: vm.sh stop DIR NODE"
	load_set "$1"
	stop_vm "$2"
}

cmd_start() {
	need_root
	[ $# -ge 2 ] || die "usage: vm.sh start DIR NODE"
	load_set "$1"
	start_vm "$2"
	wait_ssh "${PROVISION_VM_BOOT_TIMEOUT:-420}" "$2"
}

# netem DIR NODE DELAY_MS|off: added latency on the node's link.  On the
# host side of the link (the tap's egress: packets to the VM) when this
# machine's kernel has the netem qdisc; otherwise on the VM's side of the
# same link (eth0's egress: packets from the VM).  Prints which.
cmd_netem() {
	need_root
	[ $# -ge 3 ] || die "usage: vm.sh netem DIR NODE DELAY_MS|off"
	load_set "$1"
	load_node "$2"
	local d=$3
	if [ "$d" = off ]; then
		tc qdisc del dev "$NODE_TAP" root 2>/dev/null || true
		vssh "$NODE_NAME" 'tc qdisc del dev eth0 root 2>/dev/null || true' </dev/null
		return 0
	fi
	[[ $d =~ ^[0-9]+$ ]] || die "netem: DELAY_MS or off"
	if tc qdisc replace dev "$NODE_TAP" root netem delay "${d}ms" 2>/dev/null; then
		echo "host:$NODE_TAP"
	else
		vssh "$NODE_NAME" "modprobe sch_netem && tc qdisc replace dev eth0 root netem delay ${d}ms" </dev/null ||
			die "$NODE_NAME: netem failed on both sides of the link"
		echo "guest:eth0"
	fi
}

cmd_wait() {
	[ $# -ge 2 ] || die "usage: vm.sh wait DIR NODE..."
	load_set "$1"
	shift
	wait_ssh "${PROVISION_VM_BOOT_TIMEOUT:-420}" "$@" || die "no ssh from $*"
}

cmd_status() {
	load_set "$1"
	local n
	for n in $VM_NODES; do
		load_node "$n"
		printf '%s %s %s\n' "$n" "$NODE_ADDR" "$([ -n "$(qemu_pid)" ] && echo running || echo stopped)"
	done
}

# ---------------------------------------------------------------- main

case ${1:-} in
image) shift; cmd_image "$@" ;;
up) shift; cmd_up "$@" ;;
down) shift; cmd_down "$@" ;;
ssh) shift; cmd_ssh "$@" ;;
reboot | reset) cmd_restart "$@" ;;
stop) shift; cmd_stop "$@" ;;
start) shift; cmd_start "$@" ;;
netem) shift; cmd_netem "$@" ;;
status) shift; cmd_status "$@" ;;
wait) shift; cmd_wait "$@" ;;
*)
	sed -n '2,/^set -euo/p' "$SELF" | sed -n 's/^# \{0,1\}//p' | sed -n '1,12p' >&2
	exit 2
	;;
esac
