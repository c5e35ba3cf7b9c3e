#!/bin/sh
# t0100-testbed: the test-node testbed itself (tests/testbed/testbed.sh).
#
# Brings up 3 chroot nodes and 1 nspawn node and checks, with plain OpenSSH
# and strict host key checking, what the other integration tests rely on:
# each node is its own host (name, machine-id, files, host key), the admin
# user's sudo with and without a password, systemd on the nspawn node, that
# nodes cannot reach the host's swap or kernel settings, the fault knobs
# (kill-node, and start-node booting a killed node again as the same machine),
# and that `down` leaves nothing behind.
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

test_need_root
test_need_cmd ssh ssh-keygen ip nsenter unshare setpriv findmnt systemd-nspawn debootstrap

TESTBED=$SRC_ROOT/tests/testbed/testbed.sh
TB=$TEST_DIR/tb
# However the script ends, the testbed goes (down is idempotent).
test_at_exit "'$TESTBED' down '$TB'"

# addr NODE: the node's address, from the node list `up` writes.
addr() {
	awk -v n="$1" '$1 == n { print $2 }' "$TB/nodes.txt"
}

# tssh [SSH-OPTION...] USER@NODE COMMAND: plain OpenSSH, the testbed's key
# and known_hosts only, strict host key checking, nothing from ~/.ssh.
tssh() {
	ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes \
		-o UserKnownHostsFile="$TB/known_hosts" -o GlobalKnownHostsFile=/dev/null \
		-o IdentitiesOnly=yes -i "$TB/id_ed25519" -o ConnectTimeout=5 -o LogLevel=ERROR "$@"
}

# on USER NODE COMMAND: tssh to a node by name.
on() {
	tssh "$1@$(addr "$2")" "$3"
}

test_case "rootfs: built once, then cached" '
	"$TESTBED" rootfs >path
	test -f "$(cat path)/.complete"
	test -x "$(cat path)/usr/sbin/sshd"
'

test_case "a subnet outside 198.18.0.0/15 is refused before anything is made" '
	expect_status 1 "$TESTBED" up "$TEST_DIR/bad" --chroot 1 --subnet 10.0.0.0/24 2>err
	expect_grep "outside 198.18.0.0/15" err
	test ! -e "$TEST_DIR/bad/testbed.env"
'

test_case "up: 3 chroot nodes and 1 nspawn node, node-3 with password sudo" '
	"$TESTBED" up "$TB" --chroot 3 --nspawn 1 --sudo-password-nodes node-3
	for f in inventory.yaml inventory-admin.yaml known_hosts id_ed25519 nodes.txt sudo.env; do
		test -s "$TB/$f"
	done
	expect_eq "node-1 nspawn nopasswd
node-2 chroot nopasswd
node-3 chroot password
node-4 chroot nopasswd" "$(awk "!/^#/ { print \$1, \$3, \$4 }" "$TB/nodes.txt")" "node list"
	expect_eq 4 "$(wc -l <"$TB/known_hosts")" "known_hosts lines"
	expect_grep "user: admin" "$TB/inventory-admin.yaml"
	expect_grep "host_keys: strict" "$TB/inventory.yaml"
'

test_case "each node answers with its own hostname and machine-id" '
	: >ids
	for n in node-1 node-2 node-3 node-4; do
		on root "$n" "hostname; cat /etc/machine-id" >out
		expect_eq "$n" "$(sed -n 1p out)" "hostname of $n"
		sed -n 2p out | grep -Eq "^[0-9a-f]{32}$"
		sed -n 2p out >>ids
	done
	expect_eq 4 "$(sort -u ids | wc -l)" "distinct machine-ids"
'

test_case "logins are in the node sshd logs" '
	on root node-2 true
	expect_grep "Accepted publickey for root from" "$TB/nodes/node-2/sshd.log"
	on root node-1 true
	expect_grep "Accepted publickey for root from" "$TB/nodes/node-1/sshd.log"
'

test_case "files written on one node appear neither on another node nor on the host" '
	mark=t0100-$$
	on root node-2 "echo $mark >/root/$mark; mkdir -p /etc/t0100; echo $mark >/etc/t0100/file"
	on root node-1 "echo $mark >/root/$mark"
	expect_eq "$mark" "$(on root node-2 "cat /root/$mark")" "written file"
	expect_status 1 on root node-3 "test -e /root/$mark || test -e /etc/t0100"
	expect_status 1 on root node-4 "test -e /root/$mark || test -e /etc/t0100"
	expect_status 1 on root node-1 "test -e /etc/t0100"
	test ! -e "/root/$mark"
	test ! -e /etc/t0100
	# Where it went: the own overlay upper directory of the node.
	test -f "$TB/nodes/node-2/upper/root/$mark"
'

test_case "admin: passwordless sudo on node-2 and on the nspawn node" '
	expect_eq "admin 0" "$(on admin node-2 "id -un; sudo -n id -u" | paste -sd " ")" "node-2"
	expect_eq "admin 0" "$(on admin node-1 "id -un; sudo -n id -u" | paste -sd " ")" "node-1"
'

test_case "admin on node-3: sudo -n refused, the password on stdin accepted" '
	expect_status 1 on admin node-3 "sudo -n true" 2>err
	expect_grep "password is required" err
	. "$TB/sudo.env"
	test -n "$PROVISION_SUDO_PASSWORD"
	expect_eq 0 "$(printf "%s\n" "$PROVISION_SUDO_PASSWORD" | on admin node-3 "sudo -S -p \"\" id -u")" "sudo -S"
	if echo wrong-password | on admin node-3 "sudo -S -p \"\" true" 2>/dev/null; then
		echo "a wrong password was accepted"; exit 1
	fi
'

test_case "nspawn node: systemd answers (running or degraded)" '
	state=$(on root node-1 "timeout 30 systemctl is-system-running --wait" || true)
	case $state in running | degraded) ;; *) echo "state: $state"; exit 1 ;; esac
	expect_eq active "$(on root node-1 "systemctl is-active ssh.service")" "ssh.service"
	expect_eq 1 "$(on root node-1 "cat /proc/1/comm" | grep -c systemd)" "PID 1"
'

test_case "modprobe overlay br_netfilter succeeds on both kinds (modules.builtin shim)" '
	on root node-2 "modprobe overlay br_netfilter"
	on root node-1 "modprobe overlay br_netfilter"
'

test_case "nodes cannot change the host fs.* sysctls; a chroot node sets its own net.*" '
	before=$(cat /proc/sys/fs/protected_fifos)
	other=$((before == 0 ? 1 : 0))
	fwd=$(cat /proc/sys/net/ipv4/ip_forward)
	for n in node-2 node-1; do
		expect_status 1 on root "$n" "sysctl -w fs.protected_fifos=$other" 2>err
		expect_grep "fs.protected_fifos" err
		expect_status 1 on root "$n" "echo $other >/proc/sys/fs/protected_fifos" 2>/dev/null
	done
	# A chroot node sets its own net.* (per network namespace); systemd-nspawn
	# mounts all of /proc/sys read-only, net.* included.
	on root node-2 "sysctl -q -w net.ipv4.ip_forward=1"
	expect_eq 1 "$(on root node-2 "cat /proc/sys/net/ipv4/ip_forward")" "ip_forward in node-2"
	expect_status 1 on root node-1 "echo 1 >/proc/sys/net/ipv4/ip_forward" 2>/dev/null
	expect_eq "$before" "$(cat /proc/sys/fs/protected_fifos)" "host fs.protected_fifos"
	expect_eq "$fwd" "$(cat /proc/sys/net/ipv4/ip_forward)" "host ip_forward"
'

test_case "swapon fails inside nodes (not permitted) and the host has no new swap" '
	swaps=$(cat /proc/swaps)
	for n in node-2 node-1; do
		on root "$n" "dd if=/dev/zero of=/t0100.swap bs=1M count=4 2>/dev/null; chmod 600 /t0100.swap; mkswap /t0100.swap >/dev/null"
		if on root "$n" "swapon /t0100.swap" 2>err; then echo "swapon succeeded in $n"; fi
		expect_grep "Operation not permitted" err
	done
	if [ "$(cat /proc/swaps)" != "$swaps" ]; then
		# Undo at once: a node must never add swap to this machine.
		awk "/t0100.swap/ { print \$1 }" /proc/swaps | xargs -r -n1 swapoff
		echo "the host gained swap:"; cat /proc/swaps; exit 1
	fi
	# Nor anything that could become swap: no block device in a chroot node.
	expect_eq "" "$(on root node-2 "find /dev -type b")" "block devices in node-2"
'

test_case "nothing routes off the bridge" '
	. "$TB/testbed.env"
	expect_eq 0 "$(cat /proc/sys/net/ipv4/conf/$TESTBED_BRIDGE/forwarding)" "bridge forwarding"
	expect_status 2 ip route get 192.0.2.1 from "$(addr node-2)" iif "$TESTBED_BRIDGE" 2>/dev/null
'

test_case "exec runs a command as root inside a node, without ssh" '
	expect_eq node-2 "$("$TESTBED" exec "$TB" node-2 cat /etc/hostname)" "chroot node"
	expect_eq node-1 "$("$TESTBED" exec "$TB" node-1 hostname)" "nspawn node"
	expect_eq "$(on root node-4 "cat /etc/machine-id")" \
		"$("$TESTBED" exec "$TB" node-4 cat /etc/machine-id)" "same node"
'

test_case "stop-sshd: connection refused; start-sshd: back" '
	for n in node-2 node-1; do
		"$TESTBED" stop-sshd "$TB" "$n"
		expect_status 255 on root "$n" true 2>err
		expect_grep "Connection refused" err
		"$TESTBED" exec "$TB" "$n" true
		"$TESTBED" start-sshd "$TB" "$n"
		on root "$n" true
	done
'

test_case "hang: connect times out (ConnectTimeout=2); resume: back" '
	"$TESTBED" hang "$TB" node-4
	start=$(date +%s)
	expect_status 255 tssh -o ConnectTimeout=2 "root@$(addr node-4)" true 2>err
	expect_grep "timed out" err
	test $(($(date +%s) - start)) -le 10
	"$TESTBED" resume "$TB" node-4
	on root node-4 true
'

test_case "hang freezes open sessions too" '
	tssh "root@$(addr node-4)" "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo \$i; sleep 0.1; done" >sess &
	pid=$!
	i=0; while [ ! -s sess ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	"$TESTBED" hang "$TB" node-4
	a=$(wc -l <sess); sleep 1; b=$(wc -l <sess)
	expect_eq "$a" "$b" "lines printed while hung"
	"$TESTBED" resume "$TB" node-4
	wait $pid
	expect_eq 20 "$(wc -l <sess)" "lines after resume"
'

test_case "rekey: strict host key checking refuses the node; the new key lets it in" '
	"$TESTBED" rekey "$TB" node-4
	expect_status 255 on root node-4 true 2>err
	expect_grep "Host key verification failed" err
	echo "$(addr node-4) $(cut -d" " -f1,2 "$TB/nodes/node-4/hostkey.pub")" >new_known_hosts
	ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes \
		-o UserKnownHostsFile=new_known_hosts -o GlobalKnownHostsFile=/dev/null \
		-o IdentitiesOnly=yes -i "$TB/id_ed25519" "root@$(addr node-4)" true
'

test_case "kill-node: the node dies, a running session drops, the others live on" '
	tssh "root@$(addr node-3)" "echo started; sleep 60; echo finished" >sess 2>&1 &
	pid=$!
	i=0; while ! grep -q started sess && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	"$TESTBED" kill-node "$TB" node-3
	i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	expect_status 1 kill -0 $pid 2>/dev/null
	expect_status 255 wait $pid
	expect_no_grep finished sess
	expect_status 255 on root node-3 true 2>/dev/null
	on root node-2 true
	for n in node-1 node-2; do on root $n true; done
'

test_case "kill-node on the nspawn node" '
	# what start-node must bring back: a file, an enabled service
	printf "[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n" |
		"$TESTBED" exec "$TB" node-1 sh -c "cat >/etc/systemd/system/tb-kept.service"
	"$TESTBED" exec "$TB" node-1 sh -c "echo kept >/var/tmp/kept && systemctl enable --now --quiet tb-kept.service"
	"$TESTBED" exec "$TB" node-1 systemctl is-active --quiet tb-kept.service
	"$TESTBED" kill-node "$TB" node-1 --silent
	expect_status 255 on root node-1 true 2>/dev/null
'

test_case "start-node: a killed node boots again as the same machine (host key, name, address, files, enabled services)" '
	"$TESTBED" start-node "$TB" node-1
	"$TESTBED" start-node "$TB" node-3
	expect_eq "node-1 kept" "$(on root node-1 "hostname; cat /var/tmp/kept" | paste -sd " ")" "node-1 after start-node"
	expect_eq node-3 "$(on root node-3 hostname)" "node-3 after start-node"
	i=0
	until on root node-1 "systemctl is-active tb-kept.service" >active 2>&1 || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
	expect_grep "^active\$" active
	on root node-1 "ip -4 -o addr show dev eth0" >addr1
	expect_grep " $(addr node-1)/" addr1
	expect_status 1 "$TESTBED" start-node "$TB" node-1 2>err
	expect_grep "node-1 is running" err
'

test_case "down leaves no process, netns, veth, mount or address behind" '
	. "$TB/testbed.env"
	cat "$TB"/nodes/*/init.pid >pids
	netns=$(awk "!/^#/ { print \$5 }" "$TB/nodes.txt")
	"$TESTBED" down "$TB"
	for ns in $netns; do
		expect_status 1 sh -c "ip netns list | grep -qw $ns"
	done
	expect_eq "" "$(ip -o link show | grep -E ": pv${TESTBED_ID}n[0-9]+[@:]" || true)" "veths"
	expect_eq "" "$(grep -F "$TB" /proc/mounts || true)" "mounts"
	expect_eq "" "$(grep -E " /run/netns/pvtb${TESTBED_ID}n[0-9]+ " /proc/mounts || true)" "netns mounts"
	expect_eq "" "$(pgrep -af "$TB" || true)" "processes"
	for p in $(cat pids); do
		expect_status 1 test -d "/proc/$p"
	done
	expect_eq "" "$(ip -4 -o addr show | grep -F " $TESTBED_HOST_ADDR/" || true)" "host address"
	test ! -e "$TB/testbed.env"
'

test_case "down again: nothing to do, success" '
	"$TESTBED" down "$TB"
'

test_done
