#!/bin/sh
# t0265: preflight fails a node where something already listens on a port
# Kubernetes needs: the API server's (the inventory's api_port, 6443 unless
# set) on the control plane, the kubelet's 10250 and flanneld's health
# endpoint 8081 on every node.  Listeners
# are real sockets in the nodes' network namespaces (IPv4 on loopback and
# IPv6 on any address: facts see both), started here and gone after 300 s
# at most.  The others go on; with api_port 8443 the 6443 listener no
# longer matters and an 8443 one does.  (facts.sh's first version looked
# for 0x1913 in /proc/net/tcp, which is 6419: a busy 6443 went unseen.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-testbed.sh"

test_need_root
test_need_cmd python3
tb_up --chroot 3
x() { "$TESTBED" exec "$TB" "$@"; }

# listen NODE FAMILY ADDRESS PORT: a listening TCP socket in NODE for 300 s.
listen() {
	x "$1" sh -c "python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET$2)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"$3\", $4))
s.listen()
print(\"listening\", flush=True)
time.sleep(300)
' >/tmp/listen-$4.log 2>&1 &
	for i in 1 2 3 4 5 6 7 8 9 10; do grep -q listening /tmp/listen-$4.log && exit 0; sleep 0.2; done
	cat /tmp/listen-$4.log; exit 1"
}
test_at_exit "'$TESTBED' exec '$TB' node-1 pkill -f 'time.sleep.300' 2>/dev/null; '$TESTBED' exec '$TB' node-2 pkill -f 'time.sleep.300' 2>/dev/null; '$TESTBED' exec '$TB' node-3 pkill -f 'time.sleep.300' 2>/dev/null; true"

# plan_result INVENTORY: each node's final state and its preflight failures.
plan_result() {
	"$PROVISION" plan -i "$1" --roles "$SRC_ROOT/roles" --phases prep --no-tui -o json >plan.json || true
	python3 -c '
import json
ev = [json.loads(l) for l in open("plan.json")]
state = {e["node"]: e["state"] for e in ev if e["event"] == "node"}
print(" ".join("%s=%s" % kv for kv in sorted(state.items())))
for e in ev:
    if e["event"] == "message" and e.get("result") == "failed":
        print(e["node"], e["phase"], e["text"])
'
}

test_case "no listeners: every node passes preflight" "
	plan_result '$TB_INV' >result.out
	cat result.out
	expect_no_grep 'already in use' result.out
"

test_case "6443 on node-1 (IPv4 loopback), 10250 on node-2 (IPv6 any): both fail, node-3 goes on" "
	listen node-1 '' 127.0.0.1 6443
	listen node-2 6 :: 10250
	plan_result '$TB_INV' >result.out
	cat result.out
	expect_grep '^node-1=failed node-2=failed node-3=done\$' result.out
	expect_grep '^node-1 preflight port 6443 (the Kubernetes API) is already in use' result.out
	expect_grep '^node-2 preflight port 10250 (the kubelet) is already in use' result.out
"

test_case "8081 (flanneld's health endpoint, Flannel v0.28.9) on node-3: it fails too" "
	listen node-3 '' 0.0.0.0 8081
	plan_result '$TB_INV' >result.out
	cat result.out
	expect_grep '^node-1=failed node-2=failed node-3=failed\$' result.out
	expect_grep '^node-3 preflight port 8081 (Flannel.s health check) is already in use' result.out
"

test_case "api_port 8443: node-1's 6443 no longer matters, an 8443 listener does" "
	sed 's/^  kubernetes_version: .*/&\\n  api_port: 8443/' '$TB_INV' >'$TB/inventory-8443.yaml'
	grep -q 'api_port: 8443' '$TB/inventory-8443.yaml'
	plan_result '$TB/inventory-8443.yaml' >result.out
	cat result.out
	expect_no_grep '^node-1 preflight port' result.out
	listen node-1 '' 0.0.0.0 8443
	plan_result '$TB/inventory-8443.yaml' >result.out
	cat result.out
	expect_grep '^node-1 preflight port 8443 (the Kubernetes API) is already in use' result.out
"

test_done
