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
# PROVISION_PORTS="PORT ..." -- TCP ports provision needs free (the API
# server's, the kubelet's); each one something listens on is reported.
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
# Every fork costs on a loaded node (facts run on every node at the start of
# every run): values come from /proc and /sys through the shell's own `read`
# where one file holds them, and the rest from a few awk and ip calls that
# each read several sources (tests/bench/idempotency.sh counts the cost).
# dash's read may report failure on a /proc or /sys file it did read, so the
# value decides, not the status.
if [ -r /etc/os-release ]; then
	# shellcheck disable=SC1091
	. /etc/os-release
	say os_id "${ID:-}"
	say os_version "${VERSION_ID:-}"
	say os_pretty "${PRETTY_NAME:-}"
fi
v=
{ read -r v </proc/sys/kernel/hostname || :; } 2>/dev/null
say hostname "${v:-$(hostname 2>/dev/null || cat /etc/hostname)}"
v=
{ read -r v </proc/sys/kernel/osrelease || :; } 2>/dev/null
say kernel "${v:-$(uname -r)}"
v= # kernel.arch (Linux 6.1+) is uname -m
{ read -r v </proc/sys/kernel/arch || :; } 2>/dev/null
say arch "${v:-$(uname -m)}"
[ -d /run/systemd/system ] && say init systemd

# One awk over the files it can read: CPUs online, memory, active swap
# (files, partitions, zram: TYPE SIZE_KIB PATH), fstab swap entries (found by
# their type field, not by the word), whether containerd's config sets
# SystemdCgroup = true, the nameservers of /etc/resolv.conf and of
# systemd-resolved's /run/systemd/resolve/resolv.conf (the upstream servers
# it found; /etc/resolv.conf is then usually its stub 127.0.0.53, which
# pods cannot reach), free disk (df on stdin) and which of
# the TCP ports in PROVISION_PORTS something listens on: from `ss -ltn` on
# stdin after df, or else from /proc/net/tcp and tcp6.  ss asks the kernel
# for listening sockets only; reading /proc/net/tcp walks every socket of
# the machine (all network namespaces' established hash: the dearest part
# of facts on a host with many nodes or connections).
set --
for f in /sys/devices/system/cpu/online /proc/meminfo /proc/swaps /etc/fstab /etc/containerd/config.toml \
	/etc/resolv.conf /run/systemd/resolve/resolv.conf; do
	[ -r "$f" ] && set -- "$@" "$f"
done
if ! have ss; then
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] && set -- "$@" "$f"
	done
fi
{
	df -Pk / 2>/dev/null
	if have ss; then
		echo '#ss'
		ss -Hltn 2>/dev/null
	fi
} | awk -v ports="${PROVISION_PORTS:-6443 10250}" '
	function hex(s,   i, n) {
		n = 0; s = toupper(s)
		for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789ABCDEF", substr(s, i, 1)) - 1
		return n }
	BEGIN { np = split(ports, p, " "); for (i = 1; i <= np; i++) want[p[i]] = 1 }
	FILENAME == "-" || FILENAME == "" {
		if ($0 == "#ss") { ss = 1; next }
		if (ss) { lp = $4; sub(/.*:/, "", lp); if (lp in want) busy[lp] = 1; next }
		if (FNR == 2) print "disk_free_kib=" $4
		next }
	FILENAME ~ /cpu\/online$/ {
		n = split($0, r, ",")
		for (i = 1; i <= n; i++) { m = split(r[i], b, "-"); cpus += (m == 2) ? b[2] - b[1] + 1 : 1 }
		next }
	FILENAME == "/proc/meminfo" {
		if ($1 == "MemTotal:") print "mem_kib=" $2
		if ($1 == "MemAvailable:") print "mem_available_kib=" $2
		next }
	FILENAME == "/proc/swaps" {
		if (FNR > 1) { t = ($1 ~ /^\/dev\/zram/) ? "zram" : $2; print "swap=" t " " $3 " " $1 }
		next }
	FILENAME == "/etc/fstab" { if ($0 !~ /^[ \t]*#/ && NF >= 3 && $3 == "swap") print "fstab_swap=" $0; next }
	FILENAME == "/etc/containerd/config.toml" {
		if ($0 ~ /^[ \t]*SystemdCgroup[ \t]*=[ \t]*true/ && !cg++) print "containerd_systemd_cgroup=true"
		next }
	FILENAME == "/etc/resolv.conf" { if ($1 == "nameserver" && NF >= 2) print "nameserver=" $2; next }
	FILENAME == "/run/systemd/resolve/resolv.conf" { if ($1 == "nameserver" && NF >= 2) print "resolved_nameserver=" $2; next }
	FNR > 1 && $4 == "0A" { split($2, a, ":"); if (hex(a[2]) in want) busy[hex(a[2])] = 1 }
	END {
		if (!cpus) { while ((getline l < "/proc/cpuinfo") > 0) if (l ~ /^processor/) cpus++ }
		print "cpus=" cpus
		for (i = 1; i <= np; i++) if (p[i] in busy) print "port_busy=" p[i]
	}' - "$@"
ctr_active=
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	systemctl list-units --type=swap --all --no-legend --plain 2>/dev/null |
		while read -r u l a _; do
			[ -z "$a" ] || say swap_unit "$u $l $a"
		done
	say swap_target "$(systemctl is-enabled swap.target 2>/dev/null || true)"
	# kubeadm's own test for a resolver stub (its kubelet defaulting):
	# systemd-resolved active.  One is-active for it and containerd (a line
	# per unit, "inactive" for one systemd does not know).
	v=$(systemctl is-active systemd-resolved containerd 2>/dev/null || true)
	say resolved "${v%%
*}"
	case $v in *?'
'?*) ctr_active=${v#*
} ;; esac
fi

for m in overlay br_netfilter nouveau nvidia; do
	[ -d "/sys/module/$m" ] && say module "$m"
done
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

# Packages provision cares about and every held package, from one
# dpkg-query (apt-mark showhold reads the whole apt cache: ~1 s).  A package
# counts as installed when the second letter of its status is "i" ("ii",
# and "hi" when held).  containerd's version comes from its package when the
# package's binary is the one on PATH (`containerd --version` starts a 50 MB
# Go binary: the dearest fork here): the upstream version without epoch and
# Debian revision, which is what the binary reports ("1.6.20~ds1-1+deb12u3"
# -> "1.6.20~ds1", containerd.io "1.7.22-1" -> "1.7.22").
ctr=$(command -v containerd 2>/dev/null) || ctr=
if command -v dpkg-query >/dev/null 2>&1; then
	dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n' 2>/dev/null | awk -F '|' -v ctr="$ctr" '
		$1 ~ /^.i/ && ($2 ~ /^(kubeadm|kubelet|kubectl|containerd|containerd\.io|runc|nfs-common|nfs-kernel-server)$/ ||
			$2 ~ /^(nvidia-driver-|libnvidia-compute-)/) { print "package=" $2 " " $3 }
		$1 ~ /^.i/ && ($2 == "containerd" || $2 == "containerd.io") && ctr == "/usr/bin/containerd" {
			v = $3; sub(/^[0-9]+:/, "", v); sub(/-[^-]*$/, "", v); print "containerd_version=" v; found = 1 }
		$1 ~ /^h/ { print "held=" $2 }
		END { exit !found }' && ctr=
fi
if [ -n "$ctr" ]; then
	say containerd_version "$(containerd --version 2>/dev/null | awk '{ print $3 }' | sed 's/^v//')"
fi
if command -v containerd >/dev/null 2>&1 && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	say containerd_active "$ctr_active"
fi
if [ -r /etc/containerd/config.toml ]; then
	# shellcheck disable=SC2046 # the hash is the first word
	set -- $(sha256sum </etc/containerd/config.toml)
	say containerd_config_sha256 "$1"
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
# From one `ip -d -o -batch` (-force: an unroutable peer does not end the
# batch) and one awk: MAC addresses, from netlink (sysfs may show another
# network namespace's devices; -d names a virtual device's kind (veth,
# bridge, vxlan...) after the link line, a physical device has none), the
# default route, the route to each peer (-d puts the route's type first:
# "unicast 198.18.0.11 dev eth0 src ...") and the IPv4 addresses.
if command -v ip >/dev/null 2>&1; then
	{
		echo "link show"
		echo "route show default"
		for peer in ${PROVISION_PEERS:-}; do
			echo "route get $peer"
		done
		echo "address show"
	} | ip -d -o -force -batch - 2>/dev/null | awk -v peers="${PROVISION_PEERS:-}" '
		BEGIN { n = split(peers, p, " "); for (i = 1; i <= n; i++) want[p[i]] = 1 }
		function field(name,   i) { for (i = 1; i < NF; i++) if ($i == name) return $(i + 1); return "" }
		$2 ~ /:$/ && $3 ~ /^</ {
			split($0, s, "\\\\"); split(s[1], h, ": "); name = h[2]; sub(/@.*/, "", name)
			split(s[2], l, " "); if (l[1] != "link/ether") next
			split(s[3], k, " "); kind = (k[1] == "addrgenmode" || k[1] == "") ? "phys" : "virt"
			if (l[2] != "00:00:00:00:00:00") print "mac=" name " " l[2] " " kind
			next }
		$3 == "inet" { split($4, a, "/"); print "address=" $2 " " a[1]; next }
		$1 == "default" || $2 == "default" { if (!def++ && field("dev") != "") print "default_iface=" field("dev"); next }
		{ dst = ($1 in want) ? $1 : (($2 in want) ? $2 : "")
		  if (dst != "" && !(dst in done)) { done[dst] = 1; print "route=" dst " " field("dev") " " field("src") } }'
fi
# The API's virtual IP (PROVISION_VIP, given to control planes when the
# inventory has cluster.api_endpoint.vip): vip_held=1 when this node holds
# it (provision's keepalived put it here); otherwise vip_route (link IFACE:
# on this node's subnet; gateway: not) and vip_answer, the MAC address that
# answered ARP for it, or none.  The neighbour entry is flushed first (an
# old one would speak for a machine that is gone); a TCP connection attempt
# (bash's /dev/tcp, 1 s at most) makes the kernel ask.
if [ -n "${PROVISION_VIP:-}" ] && command -v ip >/dev/null 2>&1; then
	if ip -o -4 addr show | awk -v v="$PROVISION_VIP" '{ split($4, a, "/"); if (a[1] == v) f = 1 } END { exit !f }'; then
		say vip_held 1
	else
		r=$(ip -o route get "$PROVISION_VIP" 2>/dev/null) || r=
		case $r in
		*" via "*) say vip_route gateway ;;
		*" dev "*) say vip_route "link $(printf '%s\n' "$r" | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')" ;;
		esac
		if command -v bash >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1; then
			ip neigh flush to "$PROVISION_VIP" 2>/dev/null || :
			timeout 1 bash -c 'exec 3<>"/dev/tcp/$1/9"' sh "$PROVISION_VIP" >/dev/null 2>&1 || :
			mac=$(ip neigh show to "$PROVISION_VIP" 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") { print $(i + 1); exit } }')
			say vip_answer "${mac:-none}"
		fi
	fi
fi
# PROVISION_CHECK_CP=1 (given to control planes by `check`, `status` and
# the validation at the end of `up` when the inventory has an
# api_endpoint): what this control plane's own etcd member and API server
# say.  etcd_members and etcd_status: the JSON of etcd's gateway
# (cluster/member/list, maintenance/status on 127.0.0.1:2379 with
# kubeadm's health-check client certificate), on one line, at most 8 KiB,
# or "none" (no answer); apiserver_readyz: "CODE BODY" of the local API
# server's /readyz (anonymous, as keepalived's check), CODE 000 when it
# did not answer.  provision parses them (validate.c), bounded.
if [ "${PROVISION_CHECK_CP:-}" = 1 ]; then
	if have curl; then
		e=/etc/kubernetes/pki/etcd
		for q in members:cluster/member/list status:maintenance/status; do
			o=$(curl --silent --max-time 5 --cacert "$e/ca.crt" --cert "$e/healthcheck-client.crt" \
				--key "$e/healthcheck-client.key" -X POST -d '{}' "https://127.0.0.1:2379/v3/${q#*:}" 2>/dev/null |
				head -c 8192 | tr -d '\n\r') || o=
			say "etcd_${q%%:*}" "${o:-none}"
		done
		o=$(curl --silent --insecure --max-time 5 -o - -w '\n%{http_code}' \
			"https://127.0.0.1:${PROVISION_PORTS%% *}/readyz" 2>/dev/null | head -c 4096) || :
		# the code, then its failed checks ([-] lines) or its first line
		say apiserver_readyz "$(printf '%s\n' "$o" | awk '{ l[NR] = $0 }
			END { for (i = 1; i < NR; i++) if (l[i] ~ /^\[-\]/) b = b (b == "" ? "" : " ") l[i]
			      if (b == "" && NR > 1) b = l[1]; print l[NR] " " substr(b, 1, 200) }')"
	else
		say etcd_members no-curl
		say etcd_status no-curl
		say apiserver_readyz "000 curl is not installed"
	fi
fi
# PROVISION_REACH="ADDR:PORT ..." (the other control planes' etcd and API
# ports, given to control planes when there are several): a TCP
# connection attempt to each, 2 s at most, all at once.  Before `up`
# nothing listens there: "refused" (the peer's kernel answered with a
# reset) proves the path as well as "open"; "timeout" is a firewall that
# drops, "unreachable" one that rejects or no route.
if [ -n "${PROVISION_REACH:-}" ] && command -v bash >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1; then
	for t in $PROVISION_REACH; do
		(
			if e=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' sh "${t%:*}" "${t##*:}" 2>&1); then
				s=open
			else
				case $?:$e in
				124:*) s=timeout ;;
				*refused*) s=refused ;;
				*) s=unreachable ;;
				esac
			fi
			say reach "$t $s"
		) &
	done
	wait
fi
exit 0
