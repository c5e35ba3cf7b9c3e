#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 288 s in CI (beside another; tests/run.sh starts the longest first)
# t0438-reset: `provision up` then `provision reset` on three nspawn
# testbed nodes (node-1 the control plane, node-2 and node-3 workers),
# judged by the nodes' own state, not by provision's report: a snapshot of
# each node taken before `up` (every file's type, mode, owner and size
# outside the volatile trees, the SHA-256 of every file under /etc,
# /opt, /root and /var/lib, `iptables-save` without counters, the network
# interfaces, the kubelet and containerd units) is taken again after the
# reset and must be identical, except on node-3, reset with --keep-prep,
# where only what node preparation made may differ (the prep files and the
# packages it installed).  Also: the fakes made the interfaces and iptables
# chains a real cluster leaves (flannel.1, cni0, KUBE-*/FLANNEL-*), and a
# chain and a rule of the lab's own firewall and a CNI file of someone
# else survive the reset; no terminal and no --yes changes nothing; a
# second reset removes nothing; a node where only the prep phase ran
# resets clean too; the reset is recorded in the state folder.
#
# Trees left out of the snapshot: /proc, /sys, /dev, /run, /tmp, /var/tmp,
# /var/log, /var/cache, /var/lib/apt and /var/lib/dpkg (apt's and dpkg's
# own bookkeeping), /var/lib/systemd (timers' stamps), /var/lib/containerd
# and /opt/containerd (the runtime's own state: containerd is installed and
# running on the testbed's nodes before up, and makes them whenever it
# starts with its default plugins), and the
# fakes' own
# /var/lib/fake-kubernetes and /etc/fake-kubernetes (test plumbing: a real
# cluster has no such folders).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="up refused reset report snapshots foreign second partial record"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
K8S=1.30.4
cluster_testbed 3 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
P="--state $STATE --roles $ROLES --no-tui"

tb() { "$TESTBED" exec "$TB" "$@"; }

# snapshot NODE OUT: the node's state (see the header).
snapshot() {
	tb "$1" sh -c '
		find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
			-o -path /var/tmp -o -path /var/log -o -path /var/cache -o -path /var/lib/apt \
			-o -path /var/lib/dpkg -o -path /var/lib/systemd -o -path /var/lib/containerd \
			-o -path /opt/containerd -o -path /var/lib/fake-kubernetes -o -path /etc/fake-kubernetes \) -prune \
			-o -type d -printf "%y %m %u:%g - %p\n" -o -printf "%y %m %u:%g %s %p\n" | sort -k 5
		find /etc /opt /root /var/lib -xdev \( -path /var/lib/apt -o -path /var/lib/dpkg \
			-o -path /var/lib/systemd -o -path /var/lib/containerd -o -path /var/lib/fake-kubernetes \
			-o -path /etc/fake-kubernetes \) -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum
		# rules, user chains and non-default policies (an empty table that
		# appears in the listing once used is no change)
		echo "== iptables"; iptables-save | awk "/^\\*/ { t = \$1 } /^-A/ || /^:[^ ]+ - / || (/^:/ && \$2 != \"ACCEPT\") { print t, \$0 }" | sed "s/\[[0-9]*:[0-9]*\]//"
		echo "== links"; ip -o link | awk -F ": " "{ print \$2 }" | sed "s/@.*//" | sort
		echo "== units"; for u in kubelet containerd; do echo "$u $(systemctl is-enabled $u 2>&1) $(systemctl is-active $u 2>&1)"; done
	' >"$2"
}

# The lab's own: a firewall chain with a rule jumping to it, a CNI file of
# someone else's (one the kubelet does not load: a .conf there would make the
# nodes Ready before Flannel runs).
for n in node-1 node-2 node-3; do
	tb $n sh -c 'iptables -N LAB-SSH && iptables -A LAB-SSH -p tcp --dport 22 -j ACCEPT && iptables -I INPUT -j LAB-SSH &&
		mkdir -p /etc/cni/net.d && echo "{\"name\": \"lab\"}" >/etc/cni/net.d/99-lab.conflist.disabled'
	snapshot $n "$TEST_DIR/$n.before"
done

test_case "up: the cluster, and on every node what a cluster leaves: flannel.1, KUBE-* and FLANNEL-* chains" "
	'$PROVISION' up -i '$INV' $P >up.out 2>&1 || { run_tail up.out; false; }
	for n in node-1 node-2 node-3; do
		tb \$n ip link show dev flannel.1 >/dev/null
		tb \$n iptables-save >ipt.\$n
		expect_grep '^:FLANNEL-FWD' ipt.\$n
		expect_grep '^:KUBE-SERVICES' ipt.\$n
		expect_grep '^-A POSTROUTING .*-j FLANNEL-POSTRTG' ipt.\$n
		expect_eq 'active enabled' \"\$(tb \$n systemctl is-active kubelet) \$(tb \$n systemctl is-enabled kubelet)\" \"\$n: kubelet\"
	done
	# CoreDNS has a pod IP: the bridge plugin made cni0 on its node.
	found=0
	for n in node-1 node-2 node-3; do
		! tb \$n ip link show dev cni0 >/dev/null 2>&1 || found=1
	done
	expect_eq 1 \$found 'cni0 on some node'
"

test_case "no terminal and no --yes: exit 2, nothing changed" "
	expect_status 2 '$PROVISION' reset -i '$INV' $P </dev/null >out 2>err
	expect_grep 'not on a terminal' err
	expect_eq active \"\$(tb node-2 systemctl is-active kubelet)\" 'kubelet on node-2'
	tb node-1 test -f /etc/kubernetes/admin.conf
"

test_case "reset --yes (node-3 with --keep-prep): exit 0, every step on every node done" "
	'$PROVISION' reset -i '$INV' $P --yes -l node-3 --keep-prep >reset3.out 2>&1 || { run_tail reset3.out; false; }
	'$PROVISION' reset -i '$INV' $P --yes -l node-1,node-2 >reset.out 2>&1 || { run_tail reset.out; false; }
	expect_grep '^reset .*: 2 nodes, .* 0 failed, 0 unreachable' reset.out
	expect_grep '^reset .*: 1 node, .* 0 failed, 0 unreachable' reset3.out
	expect_no_grep 'reset-prep' reset3.out
"

test_case "the report: per node what was removed, verified clean and reachable over SSH" "
	# files: node-1's kubeconfigs; the empty /etc/kubernetes/pki kubeadm reset leaves, everywhere.
	for n in node-1 node-2; do
		expect_grep \"^\$n  *removed: kubeadm, kubelet, cni, interfaces, iptables, files, prep files, prep units, prep packages, prep state\\\$\" reset.out
	done
	expect_grep '^node-3  *removed: kubeadm, kubelet, cni, interfaces, iptables, files\$' reset3.out
	[ \"\$(grep -c 'verified: clean (ports, processes, folders, interfaces, chains, kubelet); reachable over SSH (a new session)' reset.out)\" = 2 ]
	expect_grep 'verified: clean .*reachable over SSH' reset3.out
	expect_grep 'removed .*/private/admin.conf' reset.out
	[ ! -e '$STATE/private/admin.conf' ]
"

test_case "snapshots: node-1 and node-2 exactly as before up; node-3 only differs by node preparation" "
	for n in node-1 node-2 node-3; do snapshot \$n \$n.after; done
	diff -u node-1.before node-1.after
	diff -u node-2.before node-2.after
	diff node-3.before node-3.after | grep '^[<>]' >node-3.diff || true
	# What --keep-prep keeps: the prep files, the apt repository, swap.target
	# masked, the packages provision installed (their files; the kubelet's unit
	# now there, disabled), provision's records and backups.
	grep -v -E ' (/etc/(fstab|sysctl\\.d/99-provision-k8s\\.conf|modules-load\\.d/provision-k8s\\.conf|containerd(/.*)?|apt/(keyrings/kubernetes-apt-keyring\\.asc|sources\\.list\\.d/kubernetes\\.list)|default/kubelet|kubernetes(/manifests)?|systemd/system/(kubelet|containerd|swap\\.target)[^ ]*|ld\\.so\\.cache)|/usr/(bin|sbin|lib|share)/.*|/opt/cni(/.*)?|/var/lib/(provision|kubelet|containerd|cni)(/.*)?)\$' node-3.diff >node-3.unexpected || true
	grep -v -E '^[<>] [0-9a-f]{64}  /(etc/(containerd/config\\.toml|ld\\.so\\.cache)|usr/.*|var/lib/provision/.*)\$' node-3.unexpected |
		grep -v -E '^[<>] containerd |^< kubelet Failed to get unit file state|^> kubelet disabled inactive\$' >node-3.left || true
	if [ -s node-3.left ]; then cat node-3.left; false; fi
	# and it did keep them
	tb node-3 test -f /etc/sysctl.d/99-provision-k8s.conf
	tb node-3 dpkg-query -W kubeadm >/dev/null
"

test_case "the lab's own chain, rule and CNI file survive; Kubernetes' are gone" "
	test -s reset.out
	for n in node-1 node-2 node-3; do
		tb \$n iptables-save >ipt.\$n
		expect_grep '^-A INPUT -j LAB-SSH' ipt.\$n
		expect_grep '^-A LAB-SSH -p tcp -m tcp --dport 22 -j ACCEPT' ipt.\$n
		expect_no_grep 'KUBE-\\|FLANNEL-\\|CNI-' ipt.\$n
		tb \$n test -f /etc/cni/net.d/99-lab.conflist.disabled
		! tb \$n ip link show dev flannel.1 >/dev/null 2>&1
		! tb \$n ip link show dev cni0 >/dev/null 2>&1
	done
"

test_case "a second reset (--keep-prep: node-3 keeps its preparation): nothing left to remove, still verified" "
	'$PROVISION' reset -i '$INV' $P --yes --keep-prep >reset2.out 2>&1 || { run_tail reset2.out; false; }
	[ \"\$(grep -c 'removed: nothing (it was clean)' reset2.out)\" = 3 ]
	[ \"\$(grep -c 'verified: clean' reset2.out)\" = 3 ]
"

test_case "a node where only the prep phase ran: reset, and its files are as before up" "
	'$PROVISION' up -i '$INV' $P -l node-2 --phases prep >prep.out 2>&1 || { run_tail prep.out; false; }
	tb node-2 test -f /etc/sysctl.d/99-provision-k8s.conf
	'$PROVISION' reset -i '$INV' $P --yes -l node-2 >reset-prep.out 2>&1 || { run_tail reset-prep.out; false; }
	# files: what the prep phase's containerd wrote for the testbed's registry
	# (cluster.registries: hosts.toml), removed with provision's other files
	expect_grep '^node-2  *removed: \(files, \)\{0,1\}prep files, prep units, prep state\$' reset-prep.out
	snapshot node-2 node-2.after2
	diff -u node-2.before node-2.after2
"

test_case "every reset is recorded in the state folder's history" "
	'$PROVISION' history -i '$INV' --state '$STATE' >history.out
	[ \"\$(grep -c ' reset ' history.out)\" -ge 4 ]
"

test_done
