#!/bin/sh
# tests/testbed/node.sh: the node-side half of tests/testbed/testbed.sh.
#
# testbed.sh installs this file as /usr/local/sbin/testbed-node in every test
# node and calls it there through `testbed.sh exec`.  It runs only inside a
# node: never on the host.
#
#   testbed-node init           PID 1 of a chroot node: start sshd, reap orphans
#   testbed-node sshd-start     start sshd (systemd's ssh.service on nspawn nodes)
#   testbed-node sshd-stop      stop the listener; open sessions live on, as
#                               with `systemctl stop ssh` (KillMode=process)
#   testbed-node rekey          new ed25519 host key, restart sshd, print the key
#   testbed-node hang | resume  SIGSTOP / SIGCONT sshd's listener and every
#                               process of its sessions
set -eu

PIDFILE=/run/sshd.pid
LOG=/var/log/sshd.log
HOSTKEY=/etc/ssh/ssh_host_ed25519_key

die() {
	echo "testbed-node: $*" >&2
	exit 1
}

# nspawn nodes boot systemd, which owns ssh.service; chroot nodes have
# testbed-node as PID 1 and run sshd directly.
has_systemd() { [ -d /run/systemd/system ]; }

# The pid of sshd's listening process, or nothing.
listener() {
	[ -s "$PIDFILE" ] || return 0
	pid=$(cat "$PIDFILE")
	[ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = sshd ] && echo "$pid"
	return 0
}

sshd_start() {
	if has_systemd; then
		systemctl start ssh.service
		return
	fi
	[ -z "$(listener)" ] || return 0
	[ -d /run/sshd ] || mkdir -m 0755 /run/sshd # privilege separation directory
	# sshd binds its sockets before it daemonizes: listening on return.
	/usr/sbin/sshd -E "$LOG"
}

sshd_stop() {
	if has_systemd; then
		systemctl stop ssh.service
		return
	fi
	pid=$(listener)
	[ -n "$pid" ] || return 0
	kill -s TERM "$pid"
	i=0
	while [ -d "/proc/$pid" ] && [ "$i" -lt 50 ]; do # at most 5 s
		sleep 0.1
		i=$((i + 1))
	done
	[ ! -d "/proc/$pid" ] || die "sshd ($pid) did not stop within 5 s"
	rm -f "$PIDFILE"
}

# The listener and all its descendants (session privsep children, shells,
# commands), from one `ps` snapshot.
sshd_tree() {
	root=$(listener)
	[ -n "$root" ] || return 0
	ps -e -o pid= -o ppid= | awk -v root="$root" '
		{ parent[$1] = $2 }
		END {
			for (p in parent) {
				q = p
				while (q != root && (q in parent) && q > 1)
					q = parent[q]
				if (q == root)
					print p
			}
		}'
}

signal_tree() { # SIGNAL
	# Twice: a session that forked between the snapshot and the signal is
	# caught by the second pass (the listener itself is stopped first, so no
	# new session can start).
	for _ in 1 2; do
		for p in $(sshd_tree); do
			kill -s "$1" "$p" 2>/dev/null || true
		done
	done
}

case ${1:-} in
init)
	[ "$$" = 1 ] || die "init must be PID 1 of the node"
	# SIGTERM from the host: stop everything in the node, then leave
	# (when PID 1 exits the kernel kills what is left in the namespace).
	trap 'kill -s TERM -1 2>/dev/null || true; exit 0' TERM INT
	sshd_start
	# Orphans are re-parented to PID 1; the shell reaps every child that
	# exits while it waits here.
	while :; do
		sleep 86400 &
		wait $! || true
	done
	;;
sshd-start) sshd_start ;;
sshd-stop) sshd_stop ;;
rekey)
	rm -f "$HOSTKEY" "$HOSTKEY.pub"
	ssh-keygen -q -t ed25519 -N '' -C "root@$(hostname)" -f "$HOSTKEY" </dev/null >/dev/null
	if has_systemd; then
		systemctl restart ssh.service
	else
		sshd_stop
		sshd_start
	fi
	cat "$HOSTKEY.pub"
	;;
hang)
	pid=$(listener)
	[ -n "$pid" ] || die "sshd is not running"
	kill -s STOP "$pid"
	signal_tree STOP
	;;
resume) signal_tree CONT ;;
*) die "usage: testbed-node init|sshd-start|sshd-stop|rekey|hang|resume" ;;
esac
