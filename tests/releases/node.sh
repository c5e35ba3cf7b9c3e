#!/bin/sh
# tests/releases/node.sh ROOTFS DIR [PREP]: start the containerd of the
# cached tree ROOTFS (rootfs.sh) once, as a throw-away node, and ask it.
# Run as root.  Writes into DIR:
#   dump.txt, dump.err    `containerd config dump` (before the daemon starts)
#   plugins.txt           `ctr plugins ls` of the running daemon
#   version.txt           `ctr version`
#   containerd.log        the daemon's log
#   status                "ok" or why the daemon did not answer
# The node: an overlay of ROOTFS (upper and work directories in DIR; the
# test may have put files into DIR/upper before), in its own mount, PID and
# network namespaces (`unshare --kill-child`: whatever ends this script,
# its namespace's init dies and every process of the node with it, the
# mounts go with the mount namespace).  Inside: a fresh /proc with
# /proc/sys read-only (containerd must not change the host's sysctls), a
# read-only /sys, the host's /dev, and tmpfs on /run, /tmp and
# /var/lib/containerd (containerd's socket, state and root are private to
# the node; its overlayfs snapshotter cannot sit on the overlay itself).
# PREP, if given, runs first as `sh PREP MERGED` (MERGED: the node's root
# as seen from the host side, inside the namespaces), e.g. the GPU
# Operator's toolkit editing a file of the node.  THEN, if given, runs as
# `sh THEN MERGED DIR` once the daemon answers, inside the namespaces (the
# registry pulls of t0270: registries, proxy and ctr on addresses of the
# node's own loopback); the processes it starts die with the node.
# DIR/containerd.env, if there, holds NAME=VALUE lines for the daemon's
# environment (what a systemd drop-in's Environment= gives it).  Every
# wait is bounded.
set -eu
[ -z "${NODE_SH_TRACE:-}" ] || set -x
root=$1 dir=$2 prep=${3:-} then=${4:-}
if [ "${NODE_SH_INNER:-}" != 1 ]; then
	mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
	NODE_SH_INNER=1 exec timeout -k 5 "${NODE_SH_TIMEOUT:-120}" \
		unshare --mount --pid --net --kill-child --propagation private "$0" "$@"
fi

m=$dir/merged
mount -t overlay overlay -o "lowerdir=$root,upperdir=$dir/upper,workdir=$dir/work" "$m"
mount -t proc proc "$m/proc"
mount --bind "$m/proc/sys" "$m/proc/sys"
mount -o remount,bind,ro "$m/proc/sys"
mount -t sysfs -o ro sysfs "$m/sys"
mount --rbind /dev "$m/dev"
for d in run tmp var/lib/containerd; do
	mkdir -p "$m/$d"
	mount -t tmpfs -o mode=0755 tmpfs "$m/$d"
done
ip link set lo up
[ -z "$prep" ] || sh "$prep" "$m"

chroot "$m" containerd config dump >"$dir/dump.txt" 2>"$dir/dump.err" || true
if [ -f "$dir/containerd.env" ]; then
	# shellcheck disable=SC2046 # NAME=VALUE words, no blanks in them
	env $(cat "$dir/containerd.env") chroot "$m" containerd >"$dir/containerd.log" 2>&1 &
else
	chroot "$m" containerd >"$dir/containerd.log" 2>&1 &
fi
pid=$!
status="containerd did not answer on /run/containerd/containerd.sock within 60 s"
i=0
while [ $i -lt 600 ]; do
	if ! kill -0 $pid 2>/dev/null; then
		status="containerd exited"
		break
	fi
	if chroot "$m" ctr version >"$dir/version.txt" 2>/dev/null; then
		status=ok
		break
	fi
	sleep 0.1
	i=$((i + 1))
done
if [ "$status" = ok ]; then
	chroot "$m" ctr plugins ls >"$dir/plugins.txt" 2>&1 || status="ctr plugins ls failed"
fi
echo "$status" >"$dir/status"
if [ "$status" = ok ] && [ -n "$then" ]; then
	sh "$then" "$m" "$dir" >"$dir/then.out" 2>&1 || echo "exit $?" >>"$dir/then.out"
fi
kill -TERM $pid 2>/dev/null || true
i=0
while kill -0 $pid 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -KILL $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
