# tests/bench/lib.sh: sourced by the bench scripts that time runs against
# the machine's own load (compare.sh, prep-profile.sh).  POSIX sh.
# shellcheck shell=sh

# ms: the wall clock in milliseconds.
ms() { date +%s%N | cut -b1-13; }

# median: of the numbers on standard input, one a line (the mean of the two
# middle ones for an even count, rounded down).
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# busy_ms: CPU time the whole machine spent busy so far (user, nice, system,
# irq, softirq of /proc/stat, all CPUs), in ms.
busy_ms() {
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%d\n", ($2 + $3 + $4 + $7 + $8) * 1000 / hz; exit }' /proc/stat
}

# settle: wait (60 s at most) until the machine is quiet, less than 10 % of
# its CPU busy over a second (a testbed just started keeps it busy a while;
# the load average printed with each table lags behind).
settle() {
	i=0
	while [ $i -lt 60 ]; do
		b0=$(busy_ms)
		sleep 1
		[ $(($(busy_ms) - b0)) -lt $((100 * $(nproc))) ] && return 0
		i=$((i + 1))
	done
}
