#!/bin/sh
# tests/bench/fanout.sh: `provision run -- true` against pdsh and a plain ssh
# loop on the same testbed nodes, and provision's peak RSS.  Prints figures;
# it is a benchmark, not a test: nothing passes or fails on time.
#
#   sh tests/bench/fanout.sh [ROUNDS]     (root; builds its own testbed of 64 nodes)
#
# Contenders run in alternation (A B C A B C ...) so that the machine's
# background load falls on all of them alike; the table shows medians.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
PROVISION=${PROVISION:-$top/build/provision}
TESTBED=$top/tests/testbed/testbed.sh
rounds=${1:-5}
work=$(mktemp -d /tmp/provision-bench.XXXXXX)
tb=$work/tb
trap '"$TESTBED" down "$tb" >/dev/null 2>&1; rm -rf "$work"' EXIT INT TERM

"$TESTBED" up "$tb" --chroot 64 >"$work/up.log" 2>&1 || { cat "$work/up.log"; exit 1; }
inv=$tb/inventory.yaml

ms() { date +%s%N | cut -b1-13; }

# time_ms CMD...: wall time of one run in ms; the command must succeed.
time_ms() {
	t0=$(ms)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	echo $(( $(ms) - t0 ))
}

median() {
	sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}

nodes() { # nodes N: node-1,...,node-N
	seq 1 "$1" | sed 's/^/node-/' | paste -sd, -
}

ssh_loop() { # ssh_loop N: one ssh after the other
	for h in $(seq 1 "$1"); do
		ssh -F "$tb/ssh_config" "node-$h" true || return 1
	done
}

export PDSH_SSH_ARGS="-F $tb/ssh_config -x -l%u %h"
export PDSH_RCMD_TYPE=ssh

printf '%-8s %12s %12s %12s %10s %10s %12s\n' nodes provision pdsh ssh-loop prov/pdsh prov/ssh "RSS(provision)"
for n in 1 8 32 64; do
	list=$(nodes "$n")
	: >"$work/p" ; : >"$work/d"; : >"$work/s"
	r=0
	while [ $r -lt "$rounds" ]; do
		time_ms "$PROVISION" run -i "$inv" -l "$list" --forks 64 -- true >>"$work/p"
		time_ms pdsh -R ssh -f 64 -w "$list" true >>"$work/d"
		if [ "$n" -le 32 ] || [ $r -lt 2 ]; then
			time_ms ssh_loop "$n" >>"$work/s"
		fi
		r=$((r + 1))
	done
	rss=$(/usr/bin/time -f %M "$PROVISION" run -i "$inv" -l "$list" -- true 2>&1 >/dev/null | tail -n 1)
	p=$(median <"$work/p"); d=$(median <"$work/d"); s=$(median <"$work/s")
	printf '%-8s %10sms %10sms %10sms %10s %10s %9s KiB\n' "$n" "$p" "$d" "$s" \
		"$(awk -v a="$p" -v b="$d" 'BEGIN { printf "%.2f", a / b }')" \
		"$(awk -v a="$p" -v b="$s" 'BEGIN { printf "%.2f", a / b }')" "$rss"
done
echo "($rounds rounds each, medians; pdsh -R ssh -f 64; ssh-loop: one ssh per node in turn, 2 rounds at 64)"
