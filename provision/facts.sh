#!/bin/sh
# facts.sh: what provision needs to know about a node, as key=value lines.
#
# Run by provision as root on every node at the start of every run (the
# "facts" phase) and parsed by provision/facts.c.  Read-only: it changes
# nothing on the node.  A key may repeat (one line per swap device, GPU,
# MAC address...).  Values never contain a newline.
#
# Environment: PROVISION_PEERS="ADDR ..." -- addresses of the other nodes;
# for each, the route this node would use to reach it is reported.
LC_ALL=C
export LC_ALL
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

say() {
	printf '%s=%s\n' "$1" "$2"
}

have() {
	command -v "$1" >/dev/null 2>&1
}

say facts_version 1
if [ -r /etc/os-release ]; then
	# shellcheck disable=SC1091
	. /etc/os-release
	say os_id "${ID:-}"
	say os_version "${VERSION_ID:-}"
	say os_pretty "${PRETTY_NAME:-}"
fi
say hostname "$(hostname 2>/dev/null || cat /etc/hostname)"
say kernel "$(uname -r)"
say arch "$(uname -m)"
say cpus "$(getconf _NPROCESSORS_ONLN 2>/dev/null || grep -c '^processor' /proc/cpuinfo)"
awk '/^MemTotal:/ { print "mem_kib=" $2 } /^MemAvailable:/ { print "mem_available_kib=" $2 }' /proc/meminfo
[ -d /run/systemd/system ] && say init systemd

# Active swap (files, partitions, zram): TYPE SIZE_KIB PATH.
if [ -r /proc/swaps ]; then
	tail -n +2 /proc/swaps | while read -r file type size _used _prio; do
		case $file in /dev/zram*) type=zram ;; esac
		say swap "$type $size $file"
	done
fi
# Swap entries in fstab, found by their type field, not by the word.
if [ -r /etc/fstab ]; then
	awk '$0 !~ /^[ \t]*#/ && NF >= 3 && $3 == "swap" { print "fstab_swap=" $0 }' /etc/fstab
fi
if have systemctl && [ -d /run/systemd/system ]; then
	systemctl list-units --type=swap --all --no-legend --plain 2>/dev/null |
		awk 'NF >= 3 { print "swap_unit=" $1 " " $2 " " $3 }'
	say swap_target "$(systemctl is-enabled swap.target 2>/dev/null || true)"
fi

for m in overlay br_netfilter nouveau nvidia; do
	[ -d "/sys/module/$m" ] && say module "$m"
done
# (read, not $(cat ...): every fork costs on a loaded node; dash's read may
# report failure on a /proc or /sys file it did read, so the value decides)
for k in net.bridge.bridge-nf-call-iptables:net/bridge/bridge-nf-call-iptables \
	net.bridge.bridge-nf-call-ip6tables:net/bridge/bridge-nf-call-ip6tables \
	net.ipv4.ip_forward:net/ipv4/ip_forward; do
	v=
	[ -r "/proc/sys/${k#*:}" ] && { read -r v <"/proc/sys/${k#*:}" || :; }
	[ -n "$v" ] && say sysctl "${k%%:*} $v"
done
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	say cgroup 2
else
	say cgroup 1
fi

if have containerd; then
	say containerd_version "$(containerd --version 2>/dev/null | awk '{ print $3 }' | sed 's/^v//')"
	if have systemctl && [ -d /run/systemd/system ]; then
		say containerd_active "$(systemctl is-active containerd 2>/dev/null || true)"
	fi
fi
if [ -r /etc/containerd/config.toml ]; then
	say containerd_config_sha256 "$(sha256sum /etc/containerd/config.toml | awk '{ print $1 }')"
	grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true' /etc/containerd/config.toml &&
		say containerd_systemd_cgroup true
fi
# Packages provision cares about and every held package, from one
# dpkg-query (apt-mark showhold reads the whole apt cache: ~1 s).  A package
# counts as installed when the second letter of its status is "i" ("ii",
# and "hi" when held).
if have dpkg-query; then
	dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n' 2>/dev/null | awk -F '|' '
		$1 ~ /^.i/ && ($2 ~ /^(kubeadm|kubelet|kubectl|containerd|containerd\.io|runc|nfs-common|nfs-kernel-server)$/ ||
			$2 ~ /^(nvidia-driver-|libnvidia-compute-)/) { print "package=" $2 " " $3 }
		$1 ~ /^h/ { print "held=" $2 }'
fi

# NVIDIA GPUs on the PCI bus (vendor 0x10de, display class 0x03xxxx), from sysfs.
for d in /sys/bus/pci/devices/*; do
	vendor='' class='' device=''
	[ -r "$d/vendor" ] && { read -r vendor <"$d/vendor" || :; }
	[ "$vendor" = 0x10de ] || continue
	read -r class <"$d/class" || :
	read -r device <"$d/device" || :
	case $class in
	0x03*) say nvidia_pci "${d##*/} $device" ;;
	esac
done
if have nvidia-smi; then
	out=$(nvidia-smi --query-gpu=name,memory.total,driver_version,uuid --format=csv,noheader 2>&1)
	say nvidia_smi_rc $?
	printf '%s\n' "$out" | while IFS= read -r line; do
		[ -n "$line" ] && say gpu "$line"
	done
	cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1)
	[ -n "$cuda" ] && say cuda_version "$cuda"
fi

# Secure Boot: the last byte of the SecureBoot EFI variable; no EFI: legacy boot.
sb=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
if [ -r "$sb" ]; then
	say secure_boot "$(od -An -t u1 "$sb" | awk '{ print ($NF == 1) ? "on" : "off" }')"
elif [ -d /sys/firmware/efi ]; then
	say secure_boot unknown
else
	say secure_boot legacy
fi

[ -e /etc/kubernetes/kubelet.conf ] && say kubelet_conf present
id=
[ -r /etc/machine-id ] && { read -r id </etc/machine-id || :; }
[ -n "$id" ] && say machine_id "$id"
id=
[ -r /sys/class/dmi/id/product_uuid ] && { read -r id </sys/class/dmi/id/product_uuid || :; }
[ -n "$id" ] && say product_uuid "$id"
# SSH host keys (TYPE BASE64): the same key on two nodes means a cloned image.
for k in /etc/ssh/ssh_host_*_key.pub; do
	[ -r "$k" ] || continue
	read -r ktype kblob _ <"$k" || :
	[ -n "${kblob:-}" ] && say host_key "$ktype $kblob"
done
# MAC addresses, from netlink (sysfs may show another network namespace's
# devices).  `ip -d -o link` names a virtual device's kind (veth, bridge,
# vxlan...) after the link line; a physical device has none.
if have ip; then
	# shellcheck disable=SC1003 # the field separator is one backslash
	ip -d -o link show 2>/dev/null | awk -F '\\\\' '
		{ split($1, h, ": "); name = h[2]; sub(/@.*/, "", name)
		  split($2, l, " "); if (l[1] != "link/ether") next
		  split($3, k, " "); kind = (k[1] == "addrgenmode" || k[1] == "") ? "phys" : "virt"
		  if (l[2] != "00:00:00:00:00:00") print "mac=" name " " l[2] " " kind }'
fi
if have ip; then
	ip -4 route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print "default_iface=" $(i + 1); exit } }'
	for peer in ${PROVISION_PEERS:-}; do
		ip -4 route get "$peer" 2>/dev/null | awk -v p="$peer" '{
			dev = ""; src = "";
			for (i = 1; i < NF; i++) { if ($i == "dev") dev = $(i + 1); if ($i == "src") src = $(i + 1) }
			print "route=" p " " dev " " src; exit }'
	done
	ip -4 -o addr show 2>/dev/null | awk '{ split($4, a, "/"); print "address=" $2 " " a[1] }'
fi
df -Pk / 2>/dev/null | awk 'NR == 2 { print "disk_free_kib=" $4 }'

# Listening TCP ports provision needs free (6443 API server, 10250 kubelet).
for port in 6443 10250; do
	hex=$(printf '%04X' "$port")
	if awk -v h="$hex" 'NR > 1 { split($2, a, ":"); if (a[2] == h && $4 == "0A") found = 1 } END { exit !found }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null; then
		say port_busy "$port"
	fi
done
exit 0
