#!/bin/sh
# bench.sh: `provision bench` on one node (parsed by provision/bench.c).
#
# Runs the fixed workload (provision/bench/workload.c, uploaded by
# provision to $B) on the host, in a container started by the node's own
# containerd through ctr, and in one with a CPU quota; then, on a GPU node,
# times an nvidia-smi query.  Prints only protocol lines:
#   info ctr=VERSION
#   run VARIANT REP <the workload's line>
#   fail VARIANT|gpu REASON
#   gpu nvidia-smi ms=N gpus=N
#   end
# The container is what a pod gets from the same containerd: runtime
# io.containerd.runc.v2, the cgroup driver of containerd's config (systemd:
# the scope provision-bench-VARIANT-REP.scope under system.slice, as runc
# names "system.slice:PREFIX:NAME"), a root file system holding the workload
# alone (no image, no registry: offline labs need nothing more), removed
# after each run.  It changes nothing else on the node: the workload and
# its root file system stay in $D for the next run.
#
# Environment (from provision): PROVISION_BENCH_THREADS, _MS, _REPEAT,
# _QUOTA (microseconds of CPU per 100000), _SYSTEMD (1: systemd cgroup
# driver), _GPU (1: a GPU node).
LC_ALL=C
export LC_ALL
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
D=/var/lib/provision/bench
B=$D/provision-bench
R=$D/rootfs
NS=provision-bench
T=${PROVISION_BENCH_THREADS:-1}
MS=${PROVISION_BENCH_MS:-1000}
REPEAT=${PROVISION_BENCH_REPEAT:-3}
QUOTA=${PROVISION_BENCH_QUOTA:-100000}

# one: the workload's line out of what a run printed (ctr may warn first),
# or nothing.
one() {
	sed -n '/^v=[0-9]* threads=[0-9]* ms=[0-9]* cpu_mops=[0-9.]* mem_mbs=[0-9.]* cpu_max=[0-9a-z/]*$/{p;q;}'
}

# first_line TEXT / last_line TEXT: a line of what failed, for a fail line.
first_line() {
	printf '%s\n' "$1" | sed -n '/./{p;q;}' | cut -c1-200
}
last_line() {
	printf '%s\n' "$1" | sed -n '/./h; ${x;p;}' | cut -c1-200
}

# ctr_clean: containers an interrupted run left in our namespace.
ctr_clean() {
	for id in $(ctr -n "$NS" containers ls -q 2>/dev/null); do
		case $id in provision-bench-*) ;; *) continue ;; esac
		ctr -n "$NS" tasks kill -s SIGKILL "$id" >/dev/null 2>&1
		ctr -n "$NS" tasks rm -f "$id" >/dev/null 2>&1
		ctr -n "$NS" containers rm "$id" >/dev/null 2>&1
	done
}

# in_ctr VARIANT REP [ctr flags]: the workload in a container.  (POSIX sh
# has no local variables: its own names start with c_.)
in_ctr() {
	c_name=$1-$2
	shift 2
	if [ "${PROVISION_BENCH_SYSTEMD:-}" = 1 ]; then
		set -- "$@" --runc-systemd-cgroup --cgroup "system.slice:$NS:$c_name"
	fi
	# /sys/fs/cgroup as the CRI plugin mounts it in every pod's container
	# (ctr's own spec has none): the workload reads its quota there.
	ctr -n "$NS" run --rm "$@" --mount "type=cgroup,src=cgroup,dst=/sys/fs/cgroup,options=nosuid:noexec:nodev:relatime:ro" \
		--rootfs "$R" "provision-bench-$c_name" /provision-bench "$T" "$MS" 2>&1
}

[ -x "$B" ] || {
	echo "fail host the workload $B is missing"
	echo end
	exit 0
}
# container: why the containers cannot run (before the first run), or
# "failed" once a container run failed; capped likewise for the limited one.
container=
if ! command -v ctr >/dev/null 2>&1; then
	container="ctr is not installed (containerd's client)"
elif ! out=$(ctr version 2>&1); then
	container="containerd does not answer: $(last_line "$out")"
else
	v=$(printf '%s\n' "$out" | sed -n '/^Client:/,/^Server:/s/^ *Version: *\([A-Za-z0-9.~+_-]*\)$/\1/p' | head -n 1)
	[ -n "$v" ] && echo "info ctr=$v"
	mkdir -p "$R/proc" "$R/sys" "$R/dev" "$R/tmp"
	cp "$B" "$R/provision-bench.new" && mv "$R/provision-bench.new" "$R/provision-bench"
	ctr_clean
fi

capped=
r=1
while [ "$r" -le "$REPEAT" ]; do
	if out=$("$B" "$T" "$MS" 2>&1) && l=$(printf '%s\n' "$out" | one) && [ -n "$l" ]; then
		echo "run host $r $l"
	else
		echo "fail host $(first_line "$out")"
		break
	fi
	if [ -z "$container" ]; then
		if out=$(in_ctr container "$r") && l=$(printf '%s\n' "$out" | one) && [ -n "$l" ]; then
			echo "run container $r $l"
		else
			container=$(first_line "$out")
			echo "fail container ${container:-ctr run gave no output}"
			container=failed
		fi
	fi
	if [ -z "$container" ] && [ -z "$capped" ]; then
		if out=$(in_ctr capped "$r" --cpu-quota "$QUOTA" --cpu-period 100000) &&
			l=$(printf '%s\n' "$out" | one) && [ -n "$l" ]; then
			echo "run capped $r $l"
		else
			capped=$(first_line "$out")
			echo "fail capped ${capped:-ctr run gave no output}"
			capped=failed
		fi
	fi
	if out=$("$B" 1 "$MS" 2>&1) && l=$(printf '%s\n' "$out" | one) && [ -n "$l" ]; then
		echo "run host-1 $r $l"
	else
		echo "fail host-1 $(first_line "$out")"
		break
	fi
	r=$((r + 1))
done
case $container in
'' | failed) ;;
*) echo "fail container $container" ;;
esac
[ -n "$container" ] && [ -z "$capped" ] && echo "fail capped no container"

if [ "${PROVISION_BENCH_GPU:-}" = 1 ]; then
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		echo "fail gpu nvidia-smi is not installed"
	else
		t0=$(date +%s%N)
		if out=$(nvidia-smi --query-gpu=index,name --format=csv,noheader 2>&1); then
			t1=$(date +%s%N)
			n=$(printf '%s\n' "$out" | grep -c '^[0-9]')
			ms=$(((t1 - t0) / 100000))
			echo "gpu nvidia-smi ms=$((ms / 10)).$((ms % 10)) gpus=$n"
		else
			echo "fail gpu nvidia-smi: $(first_line "$out")"
		fi
	fi
fi
echo end
