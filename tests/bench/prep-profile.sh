#!/bin/sh
# tests/bench/prep-profile.sh [ROUNDS]: where the time of a no-change
# `provision up --phases prep` goes, on NODES fresh nspawn nodes (default 16:
# their own systemd as PID 1, containerd running, as compare.sh's
# PREP_KIND=nspawn).  A benchmark: it prints figures and never fails on time.
#
#   sh tests/bench/prep-profile.sh [ROUNDS]     (root; `make` first)
#
# The nodes' boots are waited for (systemd done starting, the machine
# quiet) so that no run pays for them.  One first run prepares the nodes,
# then ROUNDS (default 5) no-change runs, each with -o json.
# PROVISION_B=PATH (another build, e.g. of an older commit in a worktree:
# it brings its own roles, which may render other files) gets a testbed of
# its own and alternates with PROVISION, A B A B.
#
# Per build: the wall time; the CPU of provision (user + sys), of the nodes'
# sessions (what their sshd listeners reaped: agents, steps, the programs
# they ran) and of the nodes' systemd (PID 1: every systemctl asks it);
# requests per node (facts + one per step or file, from the events);
# each node's time before its first step (connect, agent, facts,
# preflight); and the steps, slowest first (median over nodes and rounds of
# the step's duration, check and its answer over the open session).
# STRACE=1 adds one run of A (not timed) under `strace -f` on the first
# node's listener: the programs its sessions executed, by count.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
PROVISION=${PROVISION:-$top/build/provision}
PROVISION_B=${PROVISION_B:-}
NODES=${NODES:-16}
TESTBED=$top/tests/testbed/testbed.sh
rounds=${1:-5}
work=$(mktemp -d /tmp/provision-prof.XXXXXX)
cleanup() {
	for t in "$work"/tb.*; do
		[ ! -d "$t" ] || "$TESTBED" down "$t" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
trap 'exit 141' PIPE # output cut (| head): the testbeds still go
for c in /usr/bin/time perl; do
	command -v "$c" >/dev/null 2>&1 || { echo "prep-profile.sh: needs $c" >&2; exit 2; }
done
[ -z "${STRACE:-}" ] || command -v strace >/dev/null || { echo "prep-profile.sh: STRACE=1 needs strace" >&2; exit 2; }

# shellcheck source=tests/bench/lib.sh
. "$top/tests/bench/lib.sh"

builds=A
[ -z "$PROVISION_B" ] || builds="A B"
bin() { if [ "$1" = A ]; then echo "$PROVISION"; else echo "$PROVISION_B"; fi; }
nodenames() { awk '$1 !~ /^#/ { print $1 }' "$1/nodes.txt"; }
for b in $builds; do
	"$TESTBED" up "$work/tb.$b" --chroot 0 --nspawn "$NODES" --timeout 120 >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
done
for b in $builds; do
	for n in $(nodenames "$work/tb.$b"); do
		timeout 120 "$TESTBED" exec "$work/tb.$b" "$n" systemctl is-system-running --wait >/dev/null 2>&1 || :
	done
done

# The nodes' sshd listeners and PID 1s (host pids), from each node's init.pid.
nodepids() { # nodepids TESTBED listener|init
	for n in $(nodenames "$1"); do
		i=$(cat "$1/nodes/$n/init.pid")
		if [ "$2" = init ]; then
			echo "$i"
		else
			pgrep -P "$i" sshd || :
		fi
	done
}
# CPU ms: the listeners' reaped children (cutime + cstime) or the PID 1s' own (utime + stime).
cpu_of() { # cpu_of children|self PID...
	f=$1
	shift
	for p in "$@"; do sed 's/^.*) //' "/proc/$p/stat"; done |
		awk -v hz="$(getconf CLK_TCK)" -v f="$f" '{ t += (f == "self" ? $12 + $13 : $14 + $15) } END { print int(t * 1000 / hz) }'
}

# run NAME BUILD: one timed run on BUILD's testbed; appends "wall prov
# sessions systemd" to $work/NAME.cpu, the events (each line after the ms
# it came) to NAME.N.json and the run's start to NAME.N.t0.
nr=0
run() {
	nr=$((nr + 1))
	t=$work/tb.$2
	listeners=$(nodepids "$t" listener)
	inits=$(nodepids "$t" init)
	# shellcheck disable=SC2086 # pid lists
	s0=$(cpu_of children $listeners) i0=$(cpu_of self $inits)
	t0=$(ms)
	echo "$t0" >"$work/$1.$nr.t0"
	/usr/bin/time -f '%U %S' -o "$work/time" "$(bin "$2")" up -i "$t/inventory.yaml" --phases prep \
		--forks "$NODES" -o json 2>"$work/err" | perl -MTime::HiRes=time -ne 'printf "%d %s", time * 1000, $_' \
		>"$work/$1.$nr.json" || :
	t1=$(ms)
	sleep 0.3 # the sessions' processes are reaped
	# shellcheck disable=SC2086
	echo "$((t1 - t0)) $(awk '{ print int(($1 + $2) * 1000) }' "$work/time") $(($(cpu_of children $listeners) - s0)) $(($(cpu_of self $inits) - i0))" >>"$work/$1.cpu"
	case $1 in first*) return 0 ;; esac
	if grep -q '"result":"changed"\|"result":"failed"' "$work/$1.$nr.json"; then
		echo "prep-profile.sh: run $nr of $1 ($(bin "$2")) changed or failed something:" >&2
		grep '"result":"changed"\|"result":"failed"' "$work/$1.$nr.json" | head -n 5 >&2
		exit 1
	fi
}

for b in $builds; do run "first$b" "$b"; done # prepares the nodes
settle
r=0
while [ $r -lt "$rounds" ]; do
	for b in $builds; do run "$b" "$b"; done
	r=$((r + 1))
done

echo "== no-change up --phases prep on $NODES nspawn nodes, $rounds rounds, $(nproc) cores =="
echo "load: $(uptime | sed 's/.*load average: //')"
for b in $builds; do echo "$b: $(bin "$b") ($(git -C "$(dirname "$(bin "$b")")/.." log -1 --format=%h 2>/dev/null || echo '?'))"; done
printf '%-6s %9s %10s %13s %12s %9s %12s\n' build wall "CPU(prov)" "CPU(sessions)" "CPU(systemd)" requests "to 1st step"
for b in $builds; do
	n=$(awk 'END { print NR }' "$work/$b.cpu")
	# requests per node: one per step_end event (the facts, each step, each file)
	req=$(cat "$work/$b".*.json | grep -c '"event":"step_end"' || :)
	req=$((req / n / NODES))
	# each node's time from the run's start to its first step_start
	pre=$(for f in "$work/$b".*.json; do
		grep '"event":"step_start"' "$f" | awk -v s="$(cat "${f%.json}.t0")" '{ match($0, /"node":"[^"]*"/); n = substr($0, RSTART, RLENGTH); if (!(n in seen)) { seen[n] = 1; print $1 - s } }'
	done | median)
	printf '%-6s %6s ms %7s ms %10s ms %9s ms %9s %9s ms\n' "$b" "$(awk '{ print $1 }' "$work/$b.cpu" | median)" \
		"$(awk '{ print $2 }' "$work/$b.cpu" | median)" "$(awk '{ print $3 }' "$work/$b.cpu" | median)" \
		"$(awk '{ print $4 }' "$work/$b.cpu" | median)" "$req" "$pre"
done
echo "(medians over the rounds; 'to 1st step': from the run's start to a node's first step, median over nodes and rounds)"
for b in $builds; do
	echo
	echo "-- $b: steps, slowest first (median / max over nodes and rounds, ms) --"
	cat "$work/$b".*.json | grep '"event":"step_end"' | sed -n \
		's/.*"role":"\([^"]*\)","step":"\([^"]*\)","result":"\([^"]*\)","duration_ms":\([0-9]*\).*/\1 › \2 \3 \4/p' |
		awk '{ k = $1 " " $2 " " $3 " (" $4 ")"; v[k] = v[k] " " $5 } END { for (k in v) print k "\t" v[k] }' |
		while IFS='	' read -r k v; do
			# shellcheck disable=SC2086 # one duration per word
			printf '%s\t%s\t%s\n' "$(printf '%s\n' $v | median)" "$(printf '%s\n' $v | sort -n | tail -n 1)" "$k"
		done | sort -t '	' -k 1,1nr | awk -F '\t' '{ printf "%7s %7s  %s\n", $1, $2, $3 }'
done

if [ -n "${STRACE:-}" ]; then
	t=$work/tb.A
	l=$(pgrep -P "$(cat "$t/nodes/$(nodenames "$t" | head -n 1)/init.pid")" sshd | head -n 1)
	strace -f -qq -e trace=execve -e signal=none -o "$work/strace" -p "$l" &
	spid=$!
	sleep 1
	"$PROVISION" up -i "$t/inventory.yaml" --phases prep --forks "$NODES" --no-tui >/dev/null 2>&1 || :
	sleep 0.5
	kill "$spid" 2>/dev/null || :
	wait "$spid" 2>/dev/null || :
	echo
	echo "-- node-1 under strace -f (A, one run): programs its sessions executed --"
	grep -c 'execve(' "$work/strace" | sed 's/^/execve: /'
	sed -n 's/.*execve("\([^"]*\)".*/\1/p' "$work/strace" | sed 's,.*/,,' | sort | uniq -c | sort -nr | head -n 20
fi
