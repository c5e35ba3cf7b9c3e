#!/bin/sh
# t0920-vm-nfs-rerun: VM tier, scenarios 2 and 3 (issue 9), on 2 QEMU VMs.
#   2. `provision up --phases prep,nfs` with vm-2 as NFS server (the
#      nfs-server role) and vm-1 as client (nfs-client): the export is real
#      (nfsd running, exportfs lists it), and a file written on the client's
#      NFS mount is on the server's export, and the reverse.
#   3. A second `up` changes nothing (every step unchanged, no file on either
#      node changed); `plan` after manual changes to the nodes' real state
#      (a sysctl set back by hand, a swap file turned back on, a line added
#      to provision's sysctl file) lists exactly those, changes nothing
#      itself, and the next `up` puts them back.
# Judged by each VM's real state over ssh, not by provision's report.
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016,SC2031,SC2034
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=vm/lib-vm.sh
. "$SRC_ROOT/tests/vm/lib-vm.sh"

vm_require
vm_up --nodes 2 --nfs-server vm-2
NODES="vm-1 vm-2"
SERVER_ADDR=$(awk '$1 == "vm-2" { print $2 }' "$VM/nodes.txt")
EXPORT_LINE="/srv/nfs $VM_SUBNET(rw,sync,no_root_squash,no_subtree_check)"

# snapshot NODE: every file provision or its roles could touch, hashed,
# and every symlink with its target (one sha256sum for all files: a process
# a file costs minutes under TCG).
snapshot() {
	on "$1" 'cd / && find etc var/lib/provision srv -xdev -type f -print0 2>/dev/null | LC_ALL=C sort -z |
		xargs -0 -r sha256sum; find etc var/lib/provision srv -xdev -type l -printf "%p -> %l\n" 2>/dev/null | LC_ALL=C sort'
}

# results FILE: "node role step result" of each step of a JSON run.
results() {
	jq -r 'select(.event == "step_end" and .phase != "facts") | "\(.node) \(.role) \(.step) \(.result)"' "$1"
}

t=$(date +%s)
test_case "scenario 2: up --phases prep,nfs: exit 0; the NFS roles ran on their nodes" '
	pv_json up1.json up --phases prep,nfs || { cat up1.json; false; }
	results up1.json >steps1
	note up steps1
	for n in $NODES; do
		expect_eq done "$(jq -r "select(.event == \"node\" and .node == \"$n\") | .state" up1.json | tail -n 1)" "$n: final state"
	done
	expect_no_grep " failed\$" steps1
	expect_grep "^vm-2 nfs-server 10-package unchanged\$" steps1
	expect_grep "^vm-2 nfs-server 20-service changed\$" steps1
	expect_grep "^vm-2 nfs-server 30-export changed\$" steps1
	expect_grep "^vm-1 nfs-client 10-package unchanged\$" steps1
	expect_grep "^vm-1 nfs-client 20-trial-mount unchanged\$" steps1
	expect_no_grep "^vm-1 nfs-server" steps1
	expect_no_grep "^vm-2 nfs-client" steps1
'
vm_time "scenario 2: up --phases prep,nfs" "$t"

test_case "scenario 2: the server exports /srv/nfs to the VMs network, nfsd running" '
	expect_eq "active enabled" "$(on vm-2 "systemctl is-active nfs-server; systemctl is-enabled nfs-server" | paste -sd " ")" "nfs-server"
	on vm-2 "cat /etc/exports" >exports
	expect_grep "^$EXPORT_LINE\$" exports
	on vm-2 "exportfs -v" >exportfs
	note exportfs exportfs
	expect_grep "^/srv/nfs" exportfs
	expect_grep "$VM_SUBNET" exportfs
	on vm-2 "cat /proc/fs/nfsd/threads" >threads
	test "$(cat threads)" -gt 0
	on vm-1 "lsmod" >lsmod1
	test "$(on vm-1 "findmnt -n -t nfs,nfs4 | wc -l")" = 0
'

t=$(date +%s)
test_case "scenario 2: a file written on the client is on the server export, and the reverse" '
	token1=client-$(od -An -N8 -tx1 /dev/urandom | tr -d " \n")
	token2=server-$(od -An -N8 -tx1 /dev/urandom | tr -d " \n")
	on vm-1 "mkdir -p /mnt/pvnfs && mount -t nfs $SERVER_ADDR:/srv/nfs /mnt/pvnfs && findmnt -n -o FSTYPE,SOURCE,OPTIONS /mnt/pvnfs" >mnt
	note "client mount" mnt
	expect_grep "^nfs4  *$SERVER_ADDR:/srv/nfs  *rw," mnt
	on vm-1 "echo $token1 >/mnt/pvnfs/from-client && sync /mnt/pvnfs/from-client"
	expect_eq "$token1" "$(on vm-2 "cat /srv/nfs/from-client")" "client file on the server"
	expect_eq "root:root" "$(on vm-2 "stat -c %U:%G /srv/nfs/from-client")" "owner (no_root_squash)"
	on vm-2 "echo $token2 >/srv/nfs/from-server && sync /srv/nfs/from-server"
	expect_eq "$token2" "$(on vm-1 "cat /mnt/pvnfs/from-server")" "server file on the client"
	on vm-1 "umount /mnt/pvnfs && rm -f /srv/nfs/from-client"
	on vm-2 "rm -f /srv/nfs/from-client /srv/nfs/from-server"
'
vm_time "scenario 2: NFS both ways" "$t"

t=$(date +%s)
test_case "scenario 3: a second up changes nothing: every step unchanged, no file changed" '
	for n in $NODES; do snapshot $n >before.$n; done
	pv_json up2.json up --phases prep,nfs || { cat up2.json; false; }
	results up2.json >steps2
	expect_eq "" "$(grep -v " unchanged\$" steps2)" "steps that were not unchanged"
	test "$(wc -l <steps2)" -ge 18
	for n in $NODES; do
		expect_eq done "$(jq -r "select(.event == \"node\" and .node == \"$n\") | .state" up2.json | tail -n 1)" "$n: final state"
		snapshot $n >after.$n
		diff -u before.$n after.$n
	done
'
vm_time "scenario 3: second up" "$t"

t=$(date +%s)
test_case "scenario 3: plan after manual changes lists exactly them and changes nothing" '
	on vm-1 "sysctl -q -w net.ipv4.ip_forward=0"
	on vm-2 "swapon /swapfile && echo \"# a local note\" >>/etc/sysctl.d/99-provision-k8s.conf"
	for n in $NODES; do snapshot $n >before.$n; done
	pv plan --phases prep,nfs >plan.out 2>&1 || { cat plan.out; false; }
	note plan plan.out
	for n in $NODES; do snapshot $n >after.$n; diff -u before.$n after.$n; done
	expect_eq 0 "$(on vm-1 "cat /proc/sys/net/ipv4/ip_forward")" "vm-1 ip_forward after plan"
	expect_eq /swapfile "$(on vm-2 "swapon --show=NAME --noheadings")" "vm-2 swap after plan"
	expect_eq "vm-1: 1 change
  ~ kernel › 20-sysctl
vm-2: 2 changes
  ~ kernel › /etc/sysctl.d/99-provision-k8s.conf
  ~ swap-off › 10-swapoff" "$(grep -E "^(vm-[12]: |  ~ )" plan.out)" "what plan lists"
	expect_grep "^      -# a local note" plan.out
	pv_json plan.json plan --phases prep,nfs || { cat plan.json; false; }
	expect_eq "vm-1 kernel 20-sysctl
vm-2 kernel /etc/sysctl.d/99-provision-k8s.conf
vm-2 swap-off 10-swapoff" "$(results plan.json | grep -v " unchanged\$" | cut -d " " -f 1-3 | LC_ALL=C sort)" "plan JSON: steps that would change"
'
vm_time "scenario 3: plan after manual changes" "$t"

t=$(date +%s)
test_case "scenario 3: up puts the changed state back; the run after it changes nothing" '
	pv_json up3.json up --phases prep,nfs || { cat up3.json; false; }
	expect_eq "vm-1 kernel 20-sysctl changed
vm-2 kernel /etc/sysctl.d/99-provision-k8s.conf changed
vm-2 swap-off 10-swapoff changed" "$(results up3.json | grep -v " unchanged\$" | LC_ALL=C sort)" "steps that changed"
	expect_eq 1 "$(on vm-1 "cat /proc/sys/net/ipv4/ip_forward")" "vm-1 ip_forward"
	expect_eq "" "$(on vm-2 "swapon --show --noheadings")" "vm-2 swap"
	on vm-2 "cat /etc/sysctl.d/99-provision-k8s.conf" >sysctl2
	expect_no_grep "a local note" sysctl2
	pv_json up4.json up --phases prep,nfs || { cat up4.json; false; }
	expect_eq "" "$(results up4.json | grep -v " unchanged\$")" "steps of the run after"
'
vm_time "scenario 3: up puts it back" "$t"

test_done
