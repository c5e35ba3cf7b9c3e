#!/bin/sh
# t0266: preflight holds each node to what the cluster's Kubernetes minor
# needs (roles/kubernetes.yaml): node-1 is an nspawn node (a unified
# cgroup v2 hierarchy), node-2 a chroot node (this host's cgroup v1 tree);
# both have Debian 12's containerd 1.6.  For 1.35 the kubelet refuses cgroup
# v1, so node-2 fails with the kernel parameter in the hint while node-1
# goes on; for 1.34 both pass; for 1.36 node-1 goes on with a warning
# (kubeadm warns about containerd 1.x from 1.35, kubernetes/kubernetes#134906)
# and node-2 fails on cgroup v1.  `provision plan` only: nothing on the
# nodes changes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-testbed.sh"

test_need_root
test_need_cmd python3
tb_up --nspawn 1 --chroot 1
x() { "$TESTBED" exec "$TB" "$@"; }

# plan_result VERSION: each node's final state and its preflight failures at VERSION.
plan_result() {
	sed "s/^  kubernetes_version: .*/  kubernetes_version: \"$1\"/" "$TB_INV" >"inv-$1.yaml"
	"$PROVISION" plan -i "inv-$1.yaml" --roles "$SRC_ROOT/roles" --phases prep --no-tui -o json >"plan-$1.json" 2>"plan-$1.err" || true
	python3 - "plan-$1.json" <<-'PY'
		import json, sys
		ev = [json.loads(l) for l in open(sys.argv[1])]
		state = {e["node"]: e["state"] for e in ev if e["event"] == "node"}
		print(" ".join("%s=%s" % kv for kv in sorted(state.items())))
		for e in ev:
		    if e["event"] == "message" and e.get("phase") == "preflight":
		        print(e["node"], e.get("step"), e["text"])
	PY
}

test_case "the nodes: node-1 on cgroup v2, node-2 on cgroup v1, containerd 1.6 on both" "
	expect_eq cgroup2fs \"\$(x node-1 stat -fc %T /sys/fs/cgroup)\" 'node-1 /sys/fs/cgroup'
	expect_eq tmpfs \"\$(x node-2 stat -fc %T /sys/fs/cgroup)\" 'node-2 /sys/fs/cgroup'
	x node-2 dpkg-query -W -f '\${Version}' containerd >cv
	expect_grep '^1\\.6\\.' cv
"

test_case "1.35.8: node-2 (cgroup v1) refused with the kernel parameter; node-1 goes on" "
	plan_result 1.35.8 >result.out
	cat result.out
	expect_grep '^node-1=done node-2=failed\$' result.out
	expect_grep '^node-2 error the node runs cgroup v1, and the kubelet of Kubernetes 1.35.8 refuses to start on cgroup v1 (failCgroupV1) (hint: boot Debian 12 with cgroup v2: in /etc/default/grub add systemd.unified_cgroup_hierarchy=1 to GRUB_CMDLINE_LINUX' result.out
	expect_no_grep '^node-1 error' result.out
"

test_case "1.34.11: both nodes pass (cgroup v1 is still allowed); the minor's end of life (2026-10-27) is a warning at the inventory's line" "
	plan_result 1.34.11 >result.out
	cat result.out plan-1.34.11.err
	expect_grep '^inv-1.34.11.yaml:[0-9]*:[0-9]*: warning: Kubernetes 1.34 reached its end of life on 2026-10-27: it gets no more security fixes' plan-1.34.11.err
	expect_grep 'hint: raise kubernetes_version (1.37.1 is the newest provision pins)' plan-1.34.11.err
	expect_grep '^node-1=done node-2=done\$' result.out
	expect_no_grep 'cgroup' result.out
"

test_case "1.36.4: node-1 goes on, warned that containerd 1.6.20 is older than 2.0; node-2 refused (cgroup v1)" "
	plan_result 1.36.4 >result.out
	cat result.out
	expect_grep '^node-1=done node-2=failed\$' result.out
	expect_grep '^node-1 warning containerd 1.6.20.* is older than 2.0: kubeadm 1.36.4 warns (preflight ContainerRuntimeVersion) (hint: containerd 2.0 answers the kubelet' result.out
	expect_grep '^node-2 error the node runs cgroup v1, and the kubelet of Kubernetes 1.36.4 refuses' result.out
	expect_no_grep 'is older than 1.6' result.out
	if [ \"\$(date -u +%Y%m%d)\" -lt 20270629 ]; then expect_no_grep 'end of life' plan-1.36.4.err; fi
"

test_done
