#!/bin/sh
# t0010-transport: the SSH transport against real OpenSSH sshd on loopback
# (tests/lib-sshd.sh), driven by build/tests/tools/transport-cli.
#
# transport-cli exits with the last command's status, or 100 - code on a
# transport error: 102 dns, 103 refused, 104 timeout, 105 host key,
# 106 auth, 108 command timeout, 109 connection lost, 111 cancelled.
# Real sudo needs a non-root user, which only the testbed nodes have
# (tests/testbed/).  Here a stand-in `sudo` (written below, first on the
# sessions' PATH through sshd's SetEnv) checks how the transport drives
# sudo: options, the password on stdin and never in argv, the messages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"

sshd_need
sshd_start a || exit 1
sshd_known_hosts a "$TEST_DIR/known_hosts" || exit 1
cd "$TEST_DIR" || exit 1

# Keys of host_ed25519.pub as "SHA256:..." (what the error must show).
fingerprint() {
	ssh-keygen -l -E sha256 -f "$(sshd_dir "$1")/host_ed25519.pub" | awk '{print $2}'
}

# A process that runs (zombies count as gone: PID 1 may not reap them).
alive() {
	case $(ps -o stat= -p "$1" 2>/dev/null) in
	'' | Z*) return 1 ;;
	*) return 0 ;;
	esac
}

for mode in agent channel; do
	flag=
	[ "$mode" = channel ] && flag=-c

	test_case "$mode: connect and run a command" "
		tcli a $flag 127.0.0.1 exec 'echo hello; echo world' stats >out
		expect_eq 'hello
world' \"\$(grep -v '^stats' out)\" output
		expect_grep 'stats mode=$mode ' out
		expect_grep 'is_root=1' out
	"

	test_case "$mode: exit statuses 0, 1, 77 and killed by a signal" "
		expect_status 0 tcli a $flag 127.0.0.1 exec true
		expect_status 1 tcli a $flag 127.0.0.1 exec false
		expect_status 77 tcli a $flag 127.0.0.1 exec 'exit 77'
		expect_status 137 tcli a $flag 127.0.0.1 exec -S 1 'kill -9 \$\$'
		expect_status 143 tcli a $flag 127.0.0.1 exec -S 1 'kill -TERM \$\$'
		expect_status 137 tcli a $flag 127.0.0.1 exec 'sh -c \"kill -9 \\\$\\\$\"'
		tcli a $flag -T 127.0.0.1 exec false exec 'exit 3' exec true >out
		expect_eq 'status 1 timed_out=0
status 3 timed_out=0
status 0 timed_out=0' \"\$(grep ^status out)\" statuses
	"

	test_case "$mode: stdout and stderr stay apart" "
		tcli a $flag 127.0.0.1 exec 'echo to-out; echo to-err >&2; echo more-out' >o 2>e
		expect_eq 'to-out
more-out' \"\$(cat o)\" stdout
		expect_eq to-err \"\$(cat e)\" stderr
	"

	test_case "$mode: lines stream while the command runs" "
		tcli a $flag -T 127.0.0.1 exec 'echo first; sleep 2; echo second' >out
		first=\$(awk '\$1 == \"out\" && \$3 == \"first\" {print \$2}' out)
		second=\$(awk '\$1 == \"out\" && \$3 == \"second\" {print \$2}' out)
		echo \"first at \$first ms, second at \$second ms\"
		[ -n \"\$first\" ] && [ \"\$first\" -lt 1500 ] && [ \"\$second\" -ge 1900 ]
	"

	test_case "$mode: input bytes reach the command's stdin" "
		head -c 100000 /dev/urandom >input
		printf 'tail without newline' >>input
		want=\$(sha256sum <input | cut -d' ' -f1)
		tcli a $flag 127.0.0.1 exec -f input 'sha256sum | cut -d\" \" -f1' >out
		expect_eq \"\$want\" \"\$(cat out)\" 'hash of the input seen by the command'
		tcli a $flag 127.0.0.1 exec 'cat; echo rc=\$?' >out
		expect_eq rc=0 \"\$(cat out)\" 'no input: empty stdin'
	"

	test_case "$mode: 10 MB of output arrive intact" "
		head -c 7500000 /dev/urandom | base64 -w 100 >big
		tcli a $flag 127.0.0.1 exec \"cat '\$TEST_DIR/big'\" >out
		cmp big out
	"

	test_case "$mode: binary bytes and long lines" "
		head -c 300000 /dev/urandom >bin
		printf '\\n' >>bin
		# Random bytes: a newline every ~256 bytes, lines far below 64 KiB.
		tcli a $flag 127.0.0.1 exec \"cat '\$TEST_DIR/bin'\" >out
		cmp bin out
		tcli a $flag -T 127.0.0.1 exec \"head -c 200000 /dev/zero | tr '\\\\0' x\" >out
		expect_eq '65536 65536 65536 3392' \"\$(awk '\$1 == \"out\" {printf \"%s%d\", sep, length(\$3); sep = \" \"}' out)\" 'pieces of a 200000-byte line'
	"

	test_case "$mode: a timeout kills the command and the session goes on" "
		start=\$(date +%s)
		tcli a $flag -T 127.0.0.1 exec -t 1000 \"sleep 60 & echo \\\$! >'\$TEST_DIR/child'; wait\" exec 'echo alive' stats >out || true
		end=\$(date +%s)
		expect_grep '^error command timeout: command on .* timed out after 1000 ms' out
		expect_grep '^out [0-9]* alive' out
		expect_grep 'mode=$mode' out
		[ \$((end - start)) -lt 10 ]
		child=\$(cat child)
		if alive \"\$child\"; then echo \"child \$child still runs\"; exit 1; fi
	"

	test_case "$mode: cancellation stops the command" "
		tcli a $flag -T 127.0.0.1 exec -C 300 'sleep 60' exec 'echo after' >out || true
		expect_grep '^error cancelled: command on .* cancelled' out
		expect_grep '^out [0-9]* after' out
	"
done

test_case "many commands over one session" "
	tcli a -T 127.0.0.1 bench 200 'echo x' exec 'echo done' stats >out
	expect_grep 'commands=201' out
	expect_grep '^out [0-9]* done' out
"

test_case "strict: an unknown host key is refused with its fingerprint" "
	: >empty_known_hosts
	expect_status 105 tcli a -k empty_known_hosts 127.0.0.1 exec true 2>err
	cat err
	fp=\$(fingerprint a)
	expect_grep \"host key of '127.0.0.1:\$(sshd_port a)' is unknown: ssh-ed25519 \$fp\" err
	expect_grep \"ssh-keyscan -p \$(sshd_port a) 127.0.0.1 >> 'empty_known_hosts'\" err
	expect_grep 'accept-new' err
	[ ! -s empty_known_hosts ]
"

test_case "accept-new records a new key, then a changed key is refused in both modes" "
	sshd_start b
	rm -f kh_b
	tcli b -k kh_b -a 127.0.0.1 exec 'echo in' >out
	expect_eq in \"\$(cat out)\" output
	expect_grep \"^\\[127.0.0.1\\]:\$(sshd_port b) ssh-ed25519 \" kh_b
	tcli b -k kh_b 127.0.0.1 exec 'echo strict-now-ok' >out
	expect_eq strict-now-ok \"\$(cat out)\" output
	sshd_stop b
	sshd_new_host_key b
	old_port=\$(sshd_port b)
	sshd_start b
	expect_eq \"\$old_port\" \"\$(sshd_port b)\" 'port after the restart (known_hosts names host:port)'
	fp=\$(fingerprint b)
	expect_status 105 tcli b -k kh_b 127.0.0.1 exec true 2>err || { cat err kh_b; false; }
	expect_grep \"host key of '127.0.0.1:\$(sshd_port b)' has CHANGED: the server offers ssh-ed25519 \$fp\" err
	expect_grep 'ssh-keygen -R' err
	expect_status 105 tcli b -k kh_b -a 127.0.0.1 exec true 2>err
	expect_grep 'has CHANGED' err
	expect_eq 1 \"\$(wc -l <kh_b)\" 'known_hosts lines (nothing appended)'
"

test_case "authentication with a key the server does not know fails clearly" "
	ssh-keygen -q -t ed25519 -N '' -f other_key
	expect_status 106 \"\$TRANSPORT_CLI\" -p \"\$(sshd_port a)\" -l root -i other_key -k known_hosts 127.0.0.1 exec true 2>err
	cat err
	expect_grep \"authentication as 'root' to '127.0.0.1:\$(sshd_port a)' failed: tried identity 'other_key'\" err
	expect_grep 'server offers publickey' err
	expect_status 106 \"\$TRANSPORT_CLI\" -p \"\$(sshd_port a)\" -l root -i missing_key -k known_hosts 127.0.0.1 exec true 2>err
	expect_grep \"identity 'missing_key' (No such file or directory)\" err
"

# glibc rejects a name with '!' before asking any resolver: no DNS traffic.
test_case "a name that does not resolve is a dns error" "
	expect_status 102 \"\$TRANSPORT_CLI\" -k known_hosts 'bad_host!.invalid' exec true 2>err
	expect_grep \"dns: cannot resolve 'bad_host!.invalid'\" err
"

test_case "a closed port is refused" "
	sshd_start c
	port=\$(sshd_port c)
	sshd_stop c
	expect_status 103 \"\$TRANSPORT_CLI\" -p \"\$port\" -l root -i \"\$SSHD_KEY\" -k known_hosts 127.0.0.1 exec true 2>err
	expect_grep \"connection to '127.0.0.1:\$port' refused\" err
"

test_case "a port that accepts but never speaks times out" "
	\"\$TRANSPORT_CLI\" blackhole bh_port &
	bh=\$!
	n=0; while [ ! -s bh_port ] && [ \$n -lt 50 ]; do sleep 0.1; n=\$((n + 1)); done
	start=\$(date +%s)
	set +e
	\"\$TRANSPORT_CLI\" -p \"\$(cat bh_port)\" -l root -i \"\$SSHD_KEY\" -k known_hosts -t 1000 127.0.0.1 exec true 2>err
	rc=\$?
	set -e
	end=\$(date +%s)
	kill \$bh
	cat err
	expect_eq 104 \$rc 'exit status'
	expect_grep 'timed out after 1000 ms' err
	[ \$((end - start)) -le 4 ]
"

test_case "a frozen sshd (SIGSTOP) times out" "
	sshd_freeze a
	set +e
	tcli a -t 1000 127.0.0.1 exec true 2>err
	rc=\$?
	set -e
	sshd_thaw a
	cat err
	expect_eq 104 \$rc 'exit status'
	expect_grep 'timed out' err
	expect_status 0 tcli a 127.0.0.1 exec true
"

test_case "sshd killed mid-command: connection lost" "
	tcli a -T 127.0.0.1 exec 'echo started; sleep 30' >out 2>err &
	cli=\$!
	n=0; while ! grep -q started out && [ \$n -lt 100 ]; do sleep 0.1; n=\$((n + 1)); done
	sshd_kill_sessions a
	set +e
	wait \$cli
	rc=\$?
	set -e
	cat out err
	expect_eq 109 \$rc 'exit status'
	expect_grep \"^error connection lost: connection to '127.0.0.1:\$(sshd_port a)' lost while running a command\" out
"

test_case "keepalive: TCP keepalive is armed on the session's socket" "
	test_need_cmd ss
	tcli a -K 7 127.0.0.1 exec 'sleep 1' &
	cli=\$!
	sleep 0.5
	ss -tno state established \"( dport = :\$(sshd_port a) )\" >ss.out
	wait \$cli
	cat ss.out
	expect_grep 'timer:(keepalive' ss.out
"

test_case "put_file: atomic replace, mode, no leftovers, skip when unchanged" "
	mkdir -p dst
	head -c 20000000 /dev/urandom >v1
	head -c 20000000 /dev/urandom >v2
	h1=\$(sha256sum <v1 | cut -d' ' -f1)
	h2=\$(sha256sum <v2 | cut -d' ' -f1)
	tcli a 127.0.0.1 put -m 0640 v1 \"\$TEST_DIR/dst/file\" >out
	expect_eq 'put sent' \"\$(cat out)\" 'first upload'
	expect_eq 640 \"\$(stat -c %a dst/file)\" mode
	# A reader on the node hashes the file in a loop during two uploads.
	: >hashes
	tcli a 127.0.0.1 exec \"while [ ! -e '\$TEST_DIR/stop' ]; do sha256sum <'\$TEST_DIR/dst/file' >>'\$TEST_DIR/hashes'; done\" &
	reader=\$!
	tcli a 127.0.0.1 put -m 0640 v2 \"\$TEST_DIR/dst/file\" put -m 0640 v1 \"\$TEST_DIR/dst/file\" put -m 0600 v2 \"\$TEST_DIR/dst/file\" >out
	touch stop
	wait \$reader
	expect_eq 'put sent
put sent
put sent' \"\$(cat out)\" uploads
	echo \"\$(wc -l <hashes) reads\"
	[ \"\$(wc -l <hashes)\" -gt 3 ]
	bad=\$(cut -d' ' -f1 hashes | grep -v -e \"\$h1\" -e \"\$h2\" | wc -l)
	expect_eq 0 \"\$bad\" 'partial reads'
	expect_eq \"\$h2\" \"\$(sha256sum <dst/file | cut -d' ' -f1)\" 'final content'
	expect_eq 600 \"\$(stat -c %a dst/file)\" 'final mode'
	expect_eq file \"\$(ls -A dst)\" 'directory content'
	tcli a 127.0.0.1 put -m 0600 v2 \"\$TEST_DIR/dst/file\" put -m 0644 v2 \"\$TEST_DIR/dst/file\" stats >out
	expect_eq 'put skipped
put sent' \"\$(grep ^put out)\" 'same content and mode: skipped; new mode: sent'
	expect_grep 'sent=1 skipped=1' out
	expect_eq 644 \"\$(stat -c %a dst/file)\" 'mode after the mode change'
	expect_eq 'root:root' \"\$(stat -c %U:%G dst/file)\" owner
"

test_case "put_file: errors name the file" "
	echo x >small
	expect_status 110 tcli a 127.0.0.1 put small \"\$TEST_DIR/no/such/dir/file\" 2>err
	expect_grep \"cannot create '\$TEST_DIR/no/such/dir/.file.provision-\" err
	expect_status 110 tcli a 127.0.0.1 put small relative/path 2>err
	expect_grep 'need an absolute file path' err
"

test_case "jump host: the target is reached through another sshd" "
	sshd_start j
	sshd_start t
	sshd_known_hosts j known_hosts
	sshd_known_hosts t known_hosts
	tcli t -T -J \"root@127.0.0.1:\$(sshd_port j)\" 127.0.0.1 exec 'echo via-jump' put small \"\$TEST_DIR/jumped\" stats >out
	cat out
	expect_grep '^out [0-9]* via-jump' out
	expect_grep 'put sent' out
	expect_grep 'mode=agent' out
	cmp small jumped
	grep -q 'direct-tcpip' \"\$(sshd_dir j)/log\" || grep -q 'Accepted publickey' \"\$(sshd_dir j)/log\"
"

test_case "jump host: an unreachable target and a lost jump host are reported" "
	sshd_start c
	port=\$(sshd_port c)
	sshd_stop c
	expect_status 103 tcli t -p \"\$port\" -J \"root@127.0.0.1:\$(sshd_port j)\" 127.0.0.1 exec true 2>err
	expect_grep \"jump host '127.0.0.1:\$(sshd_port j)' cannot reach '127.0.0.1:\$port'\" err
	tcli t -T -J \"root@127.0.0.1:\$(sshd_port j)\" 127.0.0.1 exec 'echo started; sleep 30' >out 2>err &
	cli=\$!
	n=0; while ! grep -q started out && [ \$n -lt 100 ]; do sleep 0.1; n=\$((n + 1)); done
	sshd_kill_sessions j
	set +e
	wait \$cli
	rc=\$?
	set -e
	cat out err
	expect_eq 109 \$rc 'exit status'
	expect_grep 'jump host .* went away' out
"

test_case "agent: a command that kills the agent loses only that command" "
	# In the agent's subshell \$\$ is the agent; under a shell of its own, \$PPID.
	tcli a -T 127.0.0.1 exec 'kill -9 \$\$' exec 'echo again' exec -S 1 'kill -9 \$PPID' \
		exec 'echo and again' stats >out || true
	cat out
	expect_eq 2 \"\$(grep -c \"^error connection lost: the agent on '127.0.0.1:\$(sshd_port a)' exited while running a command\" out)\" 'agents lost'
	expect_grep '^out [0-9]* again' out
	expect_grep '^out [0-9]* and again' out
	expect_grep 'mode=agent' out
"

test_case "agent: commands run in a subshell of the agent, or with -S in a shell of their own" "
	tcli a -T 127.0.0.1 exec 'echo \"[\$#] \$\$\"; x=leaked' exec 'echo \"[\${x-unset}] \$\$\"' \
		exec -S 1 'echo \"[\$#] \$\$\"' >out
	cat out
	agent=\$(sed -n 's/^out [0-9]* \\[0\\] \\([0-9]*\\)\$/\\1/p' out | head -n 1)
	test -n \"\$agent\"
	expect_grep \"^out [0-9]* \\[unset\\] \$agent\$\" out
	own=\$(sed -n 's/^out [0-9]* \\[0\\] \\([0-9]*\\)\$/\\1/p' out | tail -n 1)
	test \"\$own\" != \"\$agent\"
"

# A stand-in for sudo(8): the options provision uses (-n; -S -p PROMPT),
# sudo's messages and exit status 1 on refusal, three password tries with
# -S (read from stdin up to a newline), and no change of user.  The mode
# file says what the node's sudoers would: nopasswd, password:SECRET, denied,
# escapes (its refusal drives a terminal).  Files per node when sshd sets
# FAKE_SUDO_NODE (sudo.mode.NODE ...).  When sudo.record(.NODE) exists,
# everything the session sends on stdin is kept in sudo.stdin(.NODE): what a
# node receives, the password included, whoever reads it.
mkdir -p fakebin
cat >fakebin/sudo <<'EOF'
#!/bin/sh
state=$(cd "$(dirname "$0")/.." && pwd)
sfx=${FAKE_SUDO_NODE:+.$FAKE_SUDO_NODE}
if [ -e "$state/sudo.record$sfx" ] && [ -z "${FAKE_SUDO_TEE:-}" ]; then
	FAKE_SUDO_TEE=1 && export FAKE_SUDO_TEE
	tee -a "$state/sudo.stdin$sfx" | "$0" "$@"
	exit
fi
printf '%s\n' "$*" >>"$state/sudo.argv$sfx"
mode=$(cat "$state/sudo.mode$sfx")
case $mode in
escapes)
	printf 'sudo: \033]0;pwned\007\033[2Jgone \302\23331m red \033[31mRED\033[0m \377 end\n' >&2
	exit 1 ;;
denied)
	echo "$(id -un) is not in the sudoers file.  This incident will be reported." >&2
	exit 1 ;;
esac
if [ "$1" = -n ]; then
	shift
	case $mode in password:*) echo 'sudo: a password is required' >&2; exit 1 ;; esac
elif [ "$1" = -S ]; then
	shift 3
	case $mode in
	password:*)
		tries=0
		while :; do
			IFS= read -r pw || exit 1
			[ "$pw" = "${mode#password:}" ] && break
			tries=$((tries + 1))
			echo 'Sorry, try again.' >&2
			[ $tries -lt 3 ] && continue
			echo "sudo: $tries incorrect password attempts" >&2
			exit 1
		done ;;
	esac
fi
exec "$@"
EOF
chmod +x fakebin/sudo
mkdir -p "$(sshd_dir s)"
echo "SetEnv PATH=$TEST_DIR/fakebin:/usr/local/bin:/usr/bin:/bin" >"$(sshd_dir s)/extra_config"
sshd_start s || exit 1
sshd_known_hosts s known_hosts || exit 1

for mode in agent channel; do
	flag=
	[ "$mode" = channel ] && flag=-c

	test_case "sudo ($mode): passwordless sudo -n runs commands and installs files" "
		echo nopasswd >sudo.mode
		: >sudo.argv
		echo content >sfile
		tcli s $flag -s always -T 127.0.0.1 exec 'echo \$PATH; id -u' put -m 0604 sfile \"\$TEST_DIR/sudo-dst-$mode\" exec 'ls -A ~' stats >out
		cat out sudo.argv
		expect_grep '^out [0-9]* $TEST_DIR/fakebin:' out
		expect_grep '^out [0-9]* 0\$' out
		expect_grep 'put sent' out
		expect_grep 'mode=$mode .*is_root=1' out
		expect_grep '^-n /bin/sh -c ' sudo.argv
		cmp sfile sudo-dst-$mode
		expect_eq 604 \"\$(stat -c %a sudo-dst-$mode)\" mode
		expect_no_grep 'provision-upload' out
	"

	test_case "sudo ($mode): the password goes on stdin, never on a command line" "
		echo 'password:s3cr3t pass' >sudo.mode
		: >sudo.argv
		PROVISION_SUDO_PASSWORD='s3cr3t pass' tcli s $flag -s always 127.0.0.1 exec -f sfile 'cat; id -u' >out
		expect_eq 'content
0' \"\$(cat out)\" output
		expect_grep '^-S -p  /bin/sh -c ' sudo.argv
		expect_eq '-n' \"\$(head -n 1 sudo.argv | cut -d ' ' -f 1)\" 'first try: sudo -n, without the password'
		expect_no_grep s3cr3t sudo.argv
		expect_no_grep s3cr3t out
	"

	test_case "sudo ($mode): a node whose sudo needs no password never gets the password" "
		echo nopasswd >sudo.mode
		: >sudo.argv
		PROVISION_SUDO_PASSWORD='s3cr3t pass' tcli s $flag -s always 127.0.0.1 exec -f sfile 'cat; id -u' >out
		expect_eq 'content
0' \"\$(cat out)\" output
		expect_grep '^-n /bin/sh -c ' sudo.argv
		expect_no_grep '^-S' sudo.argv
	"

	test_case "sudo ($mode): a node whose sudo -n works never receives the password, not on stdin either" "
		echo nopasswd >sudo.mode
		: >sudo.argv
		: >sudo.stdin
		: >sudo.record
		PROVISION_SUDO_PASSWORD='s3cr3t pass' tcli s $flag -s always 127.0.0.1 exec -f sfile 'cat; id -u' >out
		rm -f sudo.record
		expect_eq 'content
0' \"\$(cat out)\" output
		test -s sudo.stdin
		expect_no_grep s3cr3t sudo.stdin
		expect_no_grep '^-S' sudo.argv
	"

	test_case "sudo ($mode): sudo's error text reaches the terminal cleaned" "
		echo escapes >sudo.mode
		expect_status 107 tcli s $flag -s always 127.0.0.1 exec true 2>err
		cat -v err
		expect_grep \"sudo on '127.0.0.1:\$(sshd_port s)' failed: sudo: gone ?31m red RED ? end\" err
		expect_eq 0 \"\$(LC_ALL=C tr -d '\\040-\\176\\n' <err | wc -c)\" 'bytes other than printable ASCII in err'
	"

	test_case "sudo ($mode): refusals are sudo errors" "
		echo 'password:s3cr3t' >sudo.mode
		expect_status 107 tcli s $flag -s always 127.0.0.1 exec true 2>err
		expect_grep \"sudo: sudo on '127.0.0.1:\$(sshd_port s)' needs a password for 'root'\" err
		expect_grep PROVISION_SUDO_PASSWORD err
		PROVISION_SUDO_PASSWORD=wrong expect_status 107 tcli s $flag -s always 127.0.0.1 exec true 2>err
		expect_grep 'rejected the password' err
		echo denied >sudo.mode
		expect_status 107 tcli s $flag -s always 127.0.0.1 exec true 2>err
		expect_grep \"'root' may not use sudo on\" err
		echo nopasswd >sudo.mode
		expect_status 0 tcli s $flag -s never 127.0.0.1 exec true
	"
done

# Two nodes behind sshds p1 and p2 (their sudo stand-ins keep their own
# files): p1 names a sudo password file of its own, p2 takes the
# inventory's.  Each gets its own password and never the other's (issue 31
# F5: before, every node got the one password, p1's own file was ignored).
for n in p1 p2; do
	mkdir -p "$(sshd_dir $n)"
	echo "SetEnv PATH=$TEST_DIR/fakebin:/usr/local/bin:/usr/bin:/bin FAKE_SUDO_NODE=$n" >"$(sshd_dir $n)/extra_config"
	sshd_start $n || exit 1
	sshd_known_hosts $n known_hosts || exit 1
done
umask 077
echo 'pw-of-p1-only-1234' >p1.pw
echo 'shared-lab-pw-5678' >shared.pw
umask 022
cat >two.yaml <<EOF
cluster:
  name: two
  kubernetes_version: "1.30.4"
ssh:
  user: $(id -un)
  identity: $SSHD_KEY
  known_hosts: $TEST_DIR/known_hosts
  sudo: always
  sudo_password_file: shared.pw
jupyterhub:
  enabled: false
nodes:
  - name: p1
    address: 127.0.0.1
    roles: [control-plane]
    ssh:
      port: $(sshd_port p1)
      sudo_password_file: p1.pw
  - name: p2
    address: 127.0.0.1
    roles: [worker]
    ssh:
      port: $(sshd_port p2)
EOF

test_case "a node's own sudo_password_file: that node gets it, the others never do" "
	echo 'password:pw-of-p1-only-1234' >sudo.mode.p1
	echo 'password:shared-lab-pw-5678' >sudo.mode.p2
	for n in p1 p2; do : >sudo.stdin.\$n; : >sudo.record.\$n; : >sudo.argv.\$n; done
	PROVISION_SUDO_PASSWORD=shared-lab-pw-5678 '$PROVISION' run -i two.yaml --sudo -- id -u >out 2>err ||
		{ cat out err; false; }
	rm -f sudo.record.p1 sudo.record.p2
	cat out
	expect_grep '^p1: 0\$' out
	expect_grep '^p2: 0\$' out
	expect_grep '^pw-of-p1-only-1234\$' sudo.stdin.p1
	expect_no_grep shared-lab sudo.stdin.p1
	expect_grep '^shared-lab-pw-5678\$' sudo.stdin.p2
	expect_no_grep pw-of-p1 sudo.stdin.p2
	expect_no_grep pw- out
	expect_no_grep pw- err
"

test_case "a node's own sudo_password_file that cannot be read: that node gets no password at all" "
	echo 'password:pw-of-p1-only-1234' >sudo.mode.p1
	echo nopasswd >sudo.mode.p2
	for n in p1 p2; do : >sudo.stdin.\$n; : >sudo.record.\$n; done
	chmod 644 p1.pw
	expect_status 1 '$PROVISION' run -i two.yaml --sudo -- id -u >out 2>err
	chmod 600 p1.pw
	rm -f sudo.record.p1 sudo.record.p2
	cat out err
	expect_grep \"sudo password file '.*p1.pw' is readable by others\" err
	expect_grep \"^p1: unreachable: sudo on .* needs a password\" err
	expect_grep '^p2: 0\$' out
	expect_no_grep pw- sudo.stdin.p1
	expect_no_grep pw- sudo.stdin.p2
"

test_done
