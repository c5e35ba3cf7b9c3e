# shellcheck shell=sh
# tests/lib-sshd.sh: real OpenSSH sshd servers on 127.0.0.1 for transport
# tests.  Source it after tests/lib.sh.  Everything lives under $TEST_DIR
# (host keys, config, authorized keys, pid file, log) and every wait is
# bounded.  The servers log in as the user running the tests (root here)
# with a key made for the test.
#
#   sshd_need                 skip the script when sshd cannot run here
#   sshd_start NAME           create (first time) and start server NAME
#   sshd_port NAME            its port
#   sshd_stop NAME            stop it and every session it serves
#   sshd_kill_sessions NAME   kill -9 the per-connection processes only
#   sshd_freeze NAME / sshd_thaw NAME   SIGSTOP / SIGCONT the listener
#   sshd_new_host_key NAME    replace its host key (takes effect on start)
#   sshd_known_hosts NAME FILE   append its host key to FILE (from its .pub)
#   tcli NAME ARGS...         transport-cli against NAME with the test key
#
# Lines in $(sshd_dir NAME)/extra_config are appended to NAME's config
# (e.g. SetEnv PATH=... to put a stand-in command first on the PATH).
#
# Each server runs in a private mount namespace (nothing on the host
# changes): when the host lacks sshd's privilege-separation directory
# /run/sshd, a tmpfs on /run provides it; and the login user's home is an
# empty tmpfs, so the host's dotfiles stay out of the tests (here root's
# .bashrc runs `pyenv init` twice: 130 ms for every login shell, which
# would swamp what the tests and the benchmark measure).  SSHD_KEEP_HOME=1
# keeps the real home.

SSHD_BIN=${SSHD_BIN:-/usr/sbin/sshd}
TRANSPORT_CLI=${TRANSPORT_CLI:-$BUILD/tests/tools/transport-cli}
SSHD_KEY=$TEST_DIR/client_key

sshd_need() {
	[ "$(id -u)" = 0 ] || test_skip_all "needs root to run sshd"
	[ -x "$SSHD_BIN" ] || test_skip_all "needs $SSHD_BIN (openssh-server)"
	[ -x "$TRANSPORT_CLI" ] || test_skip_all "needs $TRANSPORT_CLI (make tests)"
	test_need_cmd ssh-keygen ssh-keyscan unshare
	unshare --mount --propagation private /bin/true 2>/dev/null ||
		test_skip_all "needs mount namespaces (unshare --mount)"
	if [ ! -f "$SSHD_KEY" ]; then
		ssh-keygen -q -t ed25519 -N '' -C provision-test -f "$SSHD_KEY" >/dev/null
		cp "$SSHD_KEY.pub" "$TEST_DIR/authorized_keys"
	fi
}

sshd_dir() {
	echo "$TEST_DIR/sshd-$1"
}

sshd_port() {
	cat "$(sshd_dir "$1")/port"
}

sshd_new_host_key() {
	d=$(sshd_dir "$1")
	rm -f "$d/host_ed25519" "$d/host_ed25519.pub"
	ssh-keygen -q -t ed25519 -N '' -C "host-$1" -f "$d/host_ed25519" >/dev/null
}

# Write the config for NAME on PORT.
sshd_config() {
	d=$(sshd_dir "$1")
	cat >"$d/sshd_config" <<EOF
Port $2
ListenAddress 127.0.0.1
HostKey $d/host_ed25519
PidFile $d/sshd.pid
AuthorizedKeysFile $TEST_DIR/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding yes
MaxStartups 100
MaxSessions 100
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel VERBOSE
EOF
	if [ -f "$d/extra_config" ]; then
		cat "$d/extra_config" >>"$d/sshd_config"
	fi
}

sshd_start() {
	name=$1
	d=$(sshd_dir "$name")
	mkdir -p "$d"
	[ -f "$d/host_ed25519" ] || sshd_new_host_key "$name"
	port=
	[ -f "$d/port" ] && port=$(cat "$d/port")
	tries=0
	while [ "$tries" -lt 8 ]; do
		tries=$((tries + 1))
		# A port that was ours stays ours across restarts when it can
		# (a test that replaces the host key wants the same host:port):
		# three tries, 0.3 s apart, before another port.
		if [ -n "$port" ] && [ "$tries" -gt 1 ] && [ "$tries" -le 3 ]; then
			sleep 0.3
		elif [ -z "$port" ] || [ "$tries" -gt 1 ]; then
			port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000 ))
		fi
		sshd_config "$name" "$port"
		: >"$d/log"
		# unshare and sh exec: $! is the sshd listener.
		# shellcheck disable=SC2016 # expanded by the inner shell
		SSHD_HOME=$(getent passwd "$(id -un)" | cut -d: -f6) unshare --mount --propagation private /bin/sh -c '
			set -e
			if [ ! -d /run/sshd ]; then
				mount -t tmpfs -o mode=755 provision-test /run
				mkdir -m 755 /run/sshd
			fi
			if [ "${SSHD_KEEP_HOME:-0}" != 1 ] && [ -d "$SSHD_HOME" ]; then
				mount -t tmpfs -o mode=700 provision-home "$SSHD_HOME"
			fi
			exec "$@"' sshd "$SSHD_BIN" -D -f "$d/sshd_config" -E "$d/log" </dev/null &
		pid=$!
		echo "$pid" >"$d/pid"
		echo "$port" >"$d/port"
		waited=0
		while [ "$waited" -lt 100 ]; do
			if grep -q 'Server listening' "$d/log" 2>/dev/null; then
				test_at_exit "sshd_stop $name"
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
			waited=$((waited + 1))
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		grep -q 'Address already in use' "$d/log" || break
	done
	echo "sshd $name did not start:"
	sed 's/^/| /' "$d/log"
	return 1
}

# The pids of the processes serving NAME's connections (children of the
# listener, then theirs).
sshd_session_pids() {
	pid=$(cat "$(sshd_dir "$1")/pid")
	ps -e -o pid= -o ppid= | awk -v root="$pid" '
		{ kids[$2] = kids[$2] " " $1 }
		END {
			n = split(kids[root], q, " ")
			for (i = 1; i <= n; i++) {
				print q[i]
				m = split(kids[q[i]], c, " ")
				for (j = 1; j <= m; j++)
					q[++n] = c[j]
			}
		}'
}

sshd_kill_sessions() {
	for p in $(sshd_session_pids "$1"); do
		kill -9 "$p" 2>/dev/null
	done
	return 0
}

sshd_stop() {
	d=$(sshd_dir "$1")
	[ -f "$d/pid" ] || return 0
	pid=$(cat "$d/pid")
	# Each kill may find the process gone already: not an error (set -e).
	kill -CONT "$pid" 2>/dev/null || :
	sessions=$(sshd_session_pids "$1")
	kill "$pid" 2>/dev/null || :
	for p in $sessions; do
		kill -9 "$p" 2>/dev/null || :
	done
	waited=0
	while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 50 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	kill -9 "$pid" 2>/dev/null || :
	wait "$pid" 2>/dev/null || :
	rm -f "$d/pid"
	return 0
}

sshd_freeze() {
	kill -STOP "$(cat "$(sshd_dir "$1")/pid")"
}

sshd_thaw() {
	kill -CONT "$(cat "$(sshd_dir "$1")/pid")"
}

sshd_known_hosts() {
	# The line is written from NAME's public host key, not asked of the
	# server with ssh-keyscan: a keyscan that timed out on a loaded machine
	# added nothing while the check after it still found an earlier
	# server's line (CI, stop 38: both jump-host cases failed with a host
	# key error).  A line another server left for the same port goes first.
	kh_entry="[127.0.0.1]:$(sshd_port "$1")"
	kh_key=$(cut -d' ' -f1-2 "$(sshd_dir "$1")/host_ed25519.pub") || return 1
	if [ -f "$2" ]; then
		grep -v -F "$kh_entry " "$2" >"$2.new" || true
		mv "$2.new" "$2"
	fi
	printf '%s %s\n' "$kh_entry" "$kh_key" >>"$2"
	grep -q -F "$kh_entry $kh_key" "$2"
}

tcli() {
	name=$1
	shift
	"$TRANSPORT_CLI" -p "$(sshd_port "$name")" -l "$(id -un)" -i "$SSHD_KEY" \
		-k "$TEST_DIR/known_hosts" -t 5000 "$@"
}
