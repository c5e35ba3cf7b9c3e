#!/bin/sh
# tests/bench/compare.sh: provision against the tools our users would
# otherwise pick, on the same testbed nodes (issue 10).  Prints tables of
# figures; it is a benchmark, not a test: nothing passes or fails on time.
# It fails only when a contender fails or when provision and Ansible leave
# the nodes in different states.
#
#   sh tests/bench/compare.sh [SECTION...]      (root; `make tests bench-deps` first)
#
# Sections (default: all, in this order):
#   prep   node preparation: `provision up --phases prep` vs tests/bench/prep.yml
#          (ansible-playbook, forks = N, pipelining, ControlPersist), first run
#          on fresh nodes and no-change second run, N in $PREP_SIZES (8 32);
#          the nodes are chroot nodes, or nspawn nodes (their own systemd as
#          PID 1, containerd running) with PREP_KIND=nspawn; PREP_KEEP=DIR
#          keeps each round's logs and provision's state folder (its record)
#   adhoc  `provision run -- true` vs `pdsh -R ssh -f N` vs `clush -f N`,
#          N in $ADHOC_SIZES (8 64 256)
#   step   a role of 100 no-op steps on one node: the time of each step
#          (check over the open session), median and p90
#   scale  a role of 10 no-op steps on N nodes, N in $SCALE_SIZES
#          (1 16 64 256): wall time, peak RSS, peak open file descriptors
#
# Contenders run in alternation (A B A B ...), $PAIRS rounds (default 3), so
# the machine's background load falls on all of them alike; tables show
# medians, and the ratio of each pair.  Each table starts with `uptime`.
# The nodes are chroot nodes (tests/testbed; prep: PREP_KIND=nspawn for nspawn
# nodes), one fresh testbed per first run.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
PROVISION=${PROVISION:-$top/build/provision}
TESTBED=$top/tests/testbed/testbed.sh
BENCH=$top/tests/bench
PAIRS=${PAIRS:-3}
PREP_SIZES=${PREP_SIZES:-8 32}
PREP_KIND=${PREP_KIND:-chroot}
PREP_KEEP=${PREP_KEEP:-}
ADHOC_SIZES=${ADHOC_SIZES:-8 64 256}
SCALE_SIZES=${SCALE_SIZES:-1 16 64 256}
sections=${*:-prep adhoc step scale}
work=$(mktemp -d /tmp/provision-compare.XXXXXX)
tb=$work/tb
tb_up=
cleanup() {
	[ -z "$tb_up" ] || "$TESTBED" down "$tb" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
trap 'exit 141' PIPE # output cut (| head): the testbeds still go

for s in $sections; do
	case $s in
	prep) need="ansible-playbook" ;;
	adhoc) need="pdsh clush" ;;
	step | scale) need= ;;
	*) echo "compare.sh: unknown section '$s' (prep, adhoc, step, scale)" >&2; exit 2 ;;
	esac
	for c in $need /usr/bin/time; do
		command -v "$c" >/dev/null 2>&1 || { echo "compare.sh: section $s needs $c (make bench-deps)" >&2; exit 2; }
	done
done
[ -x "$PROVISION" ] || { echo "compare.sh: no $PROVISION (make first)" >&2; exit 2; }

# shellcheck source=tests/bench/lib.sh
. "$top/tests/bench/lib.sh"
pct() { sort -n | awk -v p="$1" '{ a[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print a[i] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
load() { echo "load: $(uptime | sed 's/.*load average: //')"; }

testbed() { # testbed N [KIND]: a fresh testbed of N chroot (or nspawn) nodes in $tb
	testbed_down
	case ${2:-chroot} in
	nspawn) kind="--chroot 0 --nspawn $1 --timeout 120" ;; # systemd boots: slower under load
	*) kind="--chroot $1" ;;
	esac
	# shellcheck disable=SC2086 # $kind: two options and their values
	"$TESTBED" up "$tb" $kind >"$work/tb.log" 2>&1 || { cat "$work/tb.log" >&2; exit 1; }
	tb_up=1
	inv=$tb/inventory.yaml
}
testbed_down() {
	[ -z "$tb_up" ] || "$TESTBED" down "$tb" >/dev/null 2>&1 || true
	tb_up=
}

# run_timed NAME CMD...: run CMD once, append its wall ms to $work/NAME.ms and
# (for provision) its peak RSS in KiB to $work/NAME.rss; the command must succeed.
run_timed() {
	name=$1
	shift
	t0=$(ms)
	/usr/bin/time -f %M -o "$work/time.out" "$@" >"$work/$name.log" 2>&1 || {
		echo "compare.sh: failed: $*" >&2
		tail -n 20 "$work/$name.log" >&2
		exit 1
	}
	echo $(($(ms) - t0)) >>"$work/$name.ms"
	tail -n 1 "$work/time.out" >>"$work/$name.rss"
}

# fds_sample PID: the most file descriptors PID had open, polled until it exits.
fds_sample() {
	fd_max=0
	while [ -d "/proc/$1" ]; do
		fd_n=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
		[ "$fd_n" -le "$fd_max" ] || fd_max=$fd_n
		sleep 0.02
	done
	echo "$fd_max"
}

nodes() { seq 1 "$1" | sed 's/^/node-/' | paste -sd, -; }

# ---- 1. node preparation: provision vs Ansible ----

# The node state the prep phase is about, one line per node (read-only; runs
# on the nodes).  Bookkeeping of either tool (provision's backups and
# records, Ansible's backup files) is not part of it.
STATE='for f in /etc/modules-load.d/provision-k8s.conf /etc/sysctl.d/99-provision-k8s.conf /etc/containerd/config.toml; do
	if [ -f "$f" ]; then printf "%s %s %s; " "$f" "$(sha256sum <"$f" | cut -c1-16)" "$(stat -c "%a %U:%G" "$f")"
	else printf "%s missing; " "$f"; fi
done
for k in net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables net/ipv4/ip_forward; do
	printf "%s=%s; " "$k" "$(cat "/proc/sys/$k")"
done
printf "swap.target %s; active swap %s; fstab swap %s; " "$(systemctl is-enabled swap.target 2>&1)" \
	"$(tail -n +2 /proc/swaps | wc -l)" "$(awk "\$0 !~ /^[ \t]*#/ && \$3 == \"swap\"" /etc/fstab | wc -l)"
for m in overlay br_netfilter; do
	if [ -d "/sys/module/$m" ] || grep -q "/$m\.ko" "/lib/modules/$(uname -r)/modules.builtin" 2>/dev/null; then printf "module %s; " "$m"; fi
done
dpkg-query -W -f="\${Package} \${Version}\n" containerd'

node_state() { # node_state N: the distinct states of nodes 1..N
	for i in $(seq 1 "$1"); do
		ssh -F "$tb/ssh_config" "node-$i" "$STATE" || echo "node-$i: cannot read its state"
	done | sort | uniq -c
}

# The files provision rendered for these nodes, for the playbook's copy tasks.
fetch_files() {
	mkdir -p "$work/files"
	for f in modules-load.conf:/etc/modules-load.d/provision-k8s.conf sysctl.conf:/etc/sysctl.d/99-provision-k8s.conf \
		config.toml:/etc/containerd/config.toml; do
		ssh -F "$tb/ssh_config" node-1 cat "${f#*:}" >"$work/files/${f%%:*}"
	done
}

ansible_setup() { # ansible_setup N ROUND
	mkdir -p "$work/cp.$2"
	cat >"$work/ansible.cfg" <<CFG
[defaults]
forks = $1
gathering = explicit
host_key_checking = True
retry_files_enabled = False
interpreter_python = /usr/bin/python3
[ssh_connection]
pipelining = True
ssh_args = -o ControlMaster=auto -o ControlPersist=60s
control_path_dir = $work/cp.$2
CFG
	sh "$BENCH/ansible-inventory.sh" "$inv" >"$work/hosts.ini"
}

ansible_run() { # ansible_run NAME N
	ANSIBLE_CONFIG=$work/ansible.cfg run_timed "$1" ansible-playbook -i "$work/hosts.ini" -f "$2" \
		-e "files_dir=$work/files" "$BENCH/prep.yml"
}

section_prep() {
	echo
	echo "== node preparation: provision up --phases prep vs ansible-playbook tests/bench/prep.yml (forks=N, pipelining, ControlPersist) =="
	echo "   ($PREP_KIND nodes, a fresh testbed for each tool's first run)"
	load
	printf '%-6s %-10s %10s %10s %8s  %-22s %9s\n' nodes run provision ansible speedup "per pair (ansible/prov)" "RSS(prov)"
	for n in $PREP_SIZES; do
		rm -f "$work"/p1.* "$work"/p2.* "$work"/a1.* "$work"/a2.*
		r=0
		while [ $r -lt "$PAIRS" ]; do
			testbed "$n" "$PREP_KIND"
			run_timed p1 "$PROVISION" up -i "$inv" --phases prep --forks "$n" --no-tui
			run_timed p2 "$PROVISION" up -i "$inv" --phases prep --forks "$n" --no-tui
			grep -q "^up testbed: $n nodes, 0 changed, 0 failed" "$work/p2.log" ||
				{ echo "compare.sh: provision's second run changed something:" >&2; tail -n 5 "$work/p2.log" >&2; exit 1; }
			[ -d "$work/files" ] || fetch_files
			node_state "$n" >"$work/state.provision"
			if [ -n "$PREP_KEEP" ]; then
				mkdir -p "$PREP_KEEP/$n.$r"
				cp "$work/p1.log" "$work/p2.log" "$PREP_KEEP/$n.$r/"
				cp -r "$tb"/*.state "$PREP_KEEP/$n.$r/" 2>/dev/null || true
			fi
			testbed "$n" "$PREP_KIND"
			ansible_setup "$n" "$n.$r"
			ansible_run a1 "$n"
			ansible_run a2 "$n"
			grep -q 'changed=[1-9]\|failed=[1-9]\|unreachable=[1-9]' "$work/a2.log" &&
				{ echo "compare.sh: Ansible's second run changed something:" >&2; tail -n 8 "$work/a2.log" >&2; exit 1; }
			node_state "$n" >"$work/state.ansible"
			[ -z "$PREP_KEEP" ] || cp "$work/a1.log" "$work/a2.log" "$PREP_KEEP/$n.$r/"
			if [ "$(wc -l <"$work/state.provision")" != 1 ] || ! cmp -s "$work/state.provision" "$work/state.ansible"; then
				echo "compare.sh: provision and Ansible left the nodes in different states:" >&2
				diff "$work/state.provision" "$work/state.ansible" >&2 || true
				exit 1
			fi
			testbed_down
			r=$((r + 1))
		done
		for run in first no-change; do
			case $run in first) p=p1 a=a1 ;; *) p=p2 a=a2 ;; esac
			pairs=$(paste -d ' ' "$work/$a.ms" "$work/$p.ms" | awk '{ printf "%s%.1f", (NR > 1 ? " " : ""), $1 / $2 }')
			pm=$(median <"$work/$p.ms")
			am=$(median <"$work/$a.ms")
			printf '%-6s %-10s %8s ms %7s ms %7sx  %-22s %6s MB\n' "$n" "$run" "$pm" "$am" "$(ratio "$am" "$pm")" \
				"$pairs" "$(($(sort -n "$work/$p.rss" | tail -n 1) / 1024))"
		done
	done
	echo "state after both (every node alike, the same for both tools):"
	sed 's/^ */  /' "$work/state.ansible"
}

# ---- the shared testbed for sections 2-4 ----
big_testbed() {
	max=1
	for s in $sections; do
		case $s in
		adhoc) sizes=$ADHOC_SIZES ;;
		scale) sizes=$SCALE_SIZES ;;
		*) sizes=1 ;;
		esac
		for sz in $sizes; do [ "$sz" -le "$max" ] || max=$sz; done
	done
	if [ -z "$tb_up" ] || [ "$(grep -c '^node-' "$tb/nodes.txt")" -lt "$max" ]; then
		testbed "$max"
	fi
	settle
}

# ---- 2. ad-hoc: provision run vs pdsh vs clush ----
section_adhoc() {
	big_testbed
	export PDSH_RCMD_TYPE=ssh
	PDSH_SSH_ARGS="-F $tb/ssh_config -x -l%u %h"
	export PDSH_SSH_ARGS
	echo
	echo "== ad-hoc: provision run -- true vs pdsh -R ssh -f N vs clush -f N (same nodes, alternating) =="
	load
	printf '%-6s %10s %10s %10s %10s  %-20s %10s %9s\n' nodes provision pdsh clush prov/pdsh "per pair" prov/clush "RSS(prov)"
	for n in $ADHOC_SIZES; do
		list=$(nodes "$n")
		rm -f "$work"/rp.* "$work"/rd.* "$work"/rc.*
		r=0
		while [ $r -lt "$PAIRS" ]; do
			run_timed rp "$PROVISION" run -i "$inv" -l "$list" --forks "$n" -- true
			run_timed rd pdsh -R ssh -f "$n" -w "$list" true
			run_timed rc clush -f "$n" -w "$list" -o "-F $tb/ssh_config" true
			r=$((r + 1))
		done
		pm=$(median <"$work/rp.ms")
		dm=$(median <"$work/rd.ms")
		cm=$(median <"$work/rc.ms")
		pairs=$(paste -d ' ' "$work/rp.ms" "$work/rd.ms" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2 }')
		printf '%-6s %7s ms %7s ms %7s ms %10s  %-20s %10s %6s MB\n' "$n" "$pm" "$dm" "$cm" "$(ratio "$pm" "$dm")" \
			"$pairs" "$(ratio "$pm" "$cm")" "$(($(sort -n "$work/rp.rss" | tail -n 1) / 1024))"
	done
}

# ---- 3. and 4.: roles of no-op steps ----
noop_roles() { # noop_roles DIR STEPS
	mkdir -p "$1/noop/steps"
	cp "$top/roles/lib.sh" "$1/"
	printf '%s\n' "description: $2 steps that find everything as desired (per-step overhead)" \
		"phase: prep" "applies_to: [control-plane, worker]" >"$1/noop/role.yaml"
	i=1
	while [ $i -le "$2" ]; do
		printf '%s\n' '# a no-op step: check finds it done' 'case ${1:-} in check | apply) exit 0 ;; esac' 'exit 2' \
			>"$1/noop/steps/$(printf %03d $i)-noop.sh"
		i=$((i + 1))
	done
}

section_step() {
	big_testbed
	noop_roles "$work/roles100" 100
	echo
	echo "== per-step overhead: a role of 100 no-op steps on one node (each step: check over the open session) =="
	load
	rm -f "$work/steps"
	r=0
	while [ $r -lt "$PAIRS" ]; do
		run_timed s "$PROVISION" up -i "$inv" -l node-1 --phases prep --roles "$work/roles100" -o json
		grep '"step_end"' "$work/s.log" | grep '"role":"noop"' |
			sed -n 's/.*"duration_ms":\([0-9]*\).*/\1/p' >>"$work/steps"
		r=$((r + 1))
	done
	printf '%-8s %8s %10s %10s %10s %12s\n' steps runs "median" "p90" "max" "wall(run)"
	printf '%-8s %8s %7s ms %7s ms %7s ms %9s ms\n' "$(wc -l <"$work/steps")" "$PAIRS" "$(median <"$work/steps")" \
		"$(pct 90 <"$work/steps")" "$(sort -n "$work/steps" | tail -n 1)" "$(median <"$work/s.ms")"
}

section_scale() {
	big_testbed
	noop_roles "$work/roles10" 10
	rm -f "$work/room"
	echo
	echo "== scale: a role of 10 no-op steps on N nodes (forks = N), and run -- true for the handshakes =="
	echo "   (CPU: the whole machine's busy time during the run, provision's own, and the rest:"
	echo "   the nodes' sshd, agents, facts and steps, which share this machine's $(nproc) cores)"
	load
	printf '%-6s %9s %7s %9s %9s %5s %9s %10s %9s %9s\n' nodes wall "RSS" "fds(peak)" "CPU(all)" busy "CPU(prov)" \
		"run--true" "CPU(all)" "excess"
	for n in $SCALE_SIZES; do
		list=$(nodes "$n")
		rm -f "$work"/sc.* "$work"/st.* "$work/fds" "$work"/cpu.*
		r=0
		while [ $r -lt "$PAIRS" ]; do
			t0=$(ms)
			b0=$(busy_ms)
			/usr/bin/time -f '%M %U %S' -o "$work/time.out" "$PROVISION" up -i "$inv" -l "$list" --forks "$n" \
				--phases prep --roles "$work/roles10" --no-tui >"$work/sc.log" 2>&1 &
			tpid=$!
			sleep 0.05
			ppid=$(pgrep -P "$tpid" provision | head -n 1 || true)
			[ -z "$ppid" ] || fds_sample "$ppid" >>"$work/fds"
			wait "$tpid" || { echo "compare.sh: scale run failed:" >&2; tail -n 5 "$work/sc.log" >&2; exit 1; }
			echo $(($(ms) - t0)) >>"$work/sc.ms"
			echo $(($(busy_ms) - b0)) >>"$work/cpu.all"
			tail -n 1 "$work/time.out" | awk '{ print $1 >> "'"$work/sc.rss"'"; printf "%d\n", ($2 + $3) * 1000 }' \
				>>"$work/cpu.prov"
			b0=$(busy_ms)
			run_timed st "$PROVISION" run -i "$inv" -l "$list" --forks "$n" -- true
			echo $(($(busy_ms) - b0)) >>"$work/cpu.true"
			r=$((r + 1))
		done
		w=$(median <"$work/sc.ms")
		h=$(median <"$work/st.ms")
		c=$(median <"$work/cpu.all")
		prov=$(median <"$work/cpu.prov")
		hs=$(median <"$work/cpu.true")
		[ "$n" != 1 ] || one=$w
		# busy: how much of the machine's CPU the run used (100 %: the nodes'
		# and provision's work alone decide the wall time); excess: how far
		# the run is above the bound, 2 x the one-node time plus the handshakes.
		printf '%-6s %6s ms %4s MB %9s %6s ms %4s%% %6s ms %7s ms %6s ms %9s\n' "$n" "$w" \
			"$(($(sort -n "$work/sc.rss" | tail -n 1) / 1024))" "$(sort -n "$work/fds" 2>/dev/null | tail -n 1)" \
			"$c" $((c * 100 / ($(nproc) * w))) "$prov" "$h" "$hs" \
			"$(ratio "$w" $((2 * ${one:-$w} + h)))x"
		# The nodes' own work beyond the handshakes (facts, steps), per node:
		# the machine's CPU less provision's and less the run -- true's.
		# When the nodes share this machine's cores, the run takes at least
		# run--true + that work x N / cores, so the target leaves each node
		# at most 2 x wall(1 node) x cores / N ms of it.
		[ "$n" = 1 ] || echo "$n $(((c - prov - hs) / n)) $((2 * ${one:-$w} * $(nproc) / n))" >>"$work/room"
	done
	echo "busy: CPU(all) / ($(nproc) cores x wall); excess: wall / (2 x wall(1 node) + run--true(N)),"
	echo "the issue's target is <= 1.00x"
	[ ! -s "$work/room" ] || while read -r n used room; do
		echo "$n nodes: the nodes' own work beyond the handshakes took ~$used ms of CPU per node;" \
			"on $(nproc) cores the target leaves room for $room ms"
	done <"$work/room"
}

echo "provision $("$PROVISION" --version 2>/dev/null | head -n 1), $(nproc) cores, pairs: $PAIRS"
for s in $sections; do
	"section_$s"
done
