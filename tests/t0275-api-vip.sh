#!/bin/sh
# t0275: the API's virtual IP for real (issue 36).  Five nspawn nodes, all
# control planes, an inventory with cluster.api_endpoint.vip (.50 of the
# testbed's subnet); `provision up --phases prep` with roles/api-vip alone
# installs Debian's real keepalived and HAProxy (bookworm's packages,
# from a flat repository that tests/testbed/apt-repo.sh builds and this
# script serves on the testbed bridge as the lab's Debian mirror) and
# starts them.  A stand-in API server on each node (a small HTTPS server
# on 6443 answering "ok NODE") is what HAProxy balances and keepalived's
# check asks.  Then, three times: the node that holds the VIP is lost (its
# network unplugged and every process of its nspawn machine killed:
# testbed.sh kill-node --silent), and the API through the VIP
# (https://VIP:8443/healthz, polled every 0.1 s) answers again within the
# stated time; the figure and the new holder are printed.
#
# Five nodes, not three: each run loses a machine for good (the testbed
# has no restart), and the third loss must still leave two.
#
# Test bodies are single-quoted on purpose: test_case evaluates them later.
# shellcheck disable=SC2016
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-testbed.sh"

test_need_root
test_need_cmd python3 curl apt-ftparchive systemd-nspawn
tb_up --nspawn 5 --chroot 0
# shellcheck disable=SC1091
. "$TB/testbed.env"
x() { "$TESTBED" exec "$TB" "$@"; }

REPO=$("$SRC_ROOT/tests/testbed/apt-repo.sh" "$TESTBED_ROOTFS" keepalived haproxy curl 2>"$TEST_DIR/apt-repo.log") || {
	sed 's/^/# /' "$TEST_DIR/apt-repo.log"
	exit 1
}
timeout 900 python3 -u -m http.server --bind "$TESTBED_HOST_ADDR" --directory "$REPO/repo" 0 \
	>"$TEST_DIR/http.log" 2>&1 &
http_pid=$!
test_at_exit "kill $http_pid"
t_start=$(date +%s)
i=0
until port=$(sed -n 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p' "$TEST_DIR/http.log") && [ -n "$port" ]; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || {
		echo "# the HTTP server did not start:"
		sed 's/^/# /' "$TEST_DIR/http.log"
		exit 1
	}
	sleep 0.1
done

ADDR1=$(awk '$1 == "node-1" { print $2 }' "$TB/nodes.txt")
VIP=${ADDR1%.*}.50
INV=$TB/inventory-vip.yaml
sed -e "s|^  kubernetes_version: .*|&\n  api_endpoint:\n    vip: $VIP|" \
	-e 's/roles: \[worker\]/roles: [control-plane]/' "$TB_INV" >"$INV"
# roles/api-vip alone: the other prep roles are t0200's.
mkdir -p "$TEST_DIR/r"
cp -r "$SRC_ROOT/roles/api-vip" "$SRC_ROOT/roles/lib.sh" "$SRC_ROOT/roles/kubernetes.yaml" \
	"$SRC_ROOT/roles/artifacts.yaml" "$TEST_DIR/r/"
export VIP INV ADDR1
test_at_exit "ip addr del '$VIP/32' dev '$TESTBED_BRIDGE' 2>/dev/null; true"

# Every node: the served repository as its only apt source, and the API
# server's stand-in (TLS with a throw-away key, every GET answered
# "ok NODE") as a systemd unit of the node.
cat >"$TEST_DIR/api-standin.py" <<'PY'
import http.server, socket, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("ok %s\n" % socket.gethostname()).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("0.0.0.0", 6443), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain("/etc/api-standin/cert.pem", "/etc/api-standin/key.pem")
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
for n in $TESTBED_NODES; do
	x "$n" sh -c "echo 'deb [trusted=yes] http://$TESTBED_HOST_ADDR:$port/ ./' >/etc/apt/sources.list && rm -f /etc/apt/sources.list.d/*"
	x "$n" sh -c 'cat >/usr/local/bin/api-standin.py' <"$TEST_DIR/api-standin.py"
	x "$n" sh -c 'mkdir -p /etc/api-standin && cd /etc/api-standin &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=api -days 1 \
			-keyout key.pem -out cert.pem 2>/dev/null'
done
# start_api_servers: every node as after kubeadm init/join: its API server
# (the stand-in) answers on 6443 and /etc/kubernetes/kubelet.conf exists
# (preflight then takes a busy 6443 for the cluster's own).
start_api_servers() {
	for n in $TESTBED_NODES; do
		x "$n" sh -c 'mkdir -p /etc/kubernetes && : >/etc/kubernetes/kubelet.conf &&
			systemd-run --quiet --unit=api-standin python3 /usr/local/bin/api-standin.py'
	done
}

# holders: the live nodes that hold the VIP, one name a line.
holders() {
	for n in $TESTBED_NODES; do
		grep -qx "$n" "$TEST_DIR/lost" 2>/dev/null && continue
		if x "$n" ip -o -4 addr show | grep -q " $VIP/"; then echo "$n"; fi
	done
}
: >"$TEST_DIR/lost"
export TEST_DIR

test_case "preflight: a stranger answers for the VIP, node-3 cannot reach node-1: refused with both reasons" '
	ip addr add "$VIP/32" dev "$TESTBED_BRIDGE"
	x node-3 ip route add prohibit "$ADDR1/32"
	set +e
	"$PROVISION" plan -i "$INV" --roles r --phases prep --no-tui >pf.out 2>&1
	rc=$?
	set -e
	ip addr del "$VIP/32" dev "$TESTBED_BRIDGE"
	x node-3 ip route del prohibit "$ADDR1/32"
	expect_eq 1 "$rc" "exit status of plan"
	mac=$(cat "/sys/class/net/$TESTBED_BRIDGE/address")
	for n in $TESTBED_NODES; do
		expect_grep "^\[$n\] preflight: error: the VIP $VIP is in use: $mac answers for it, and no control plane holds it" pf.out
	done
	expect_grep "^\[node-3\] preflight: error: control plane .node-3. cannot reach control plane .node-1. ($ADDR1) on port 2380 (etcd.s peers): rejected or no route" pf.out
	expect_grep "^\[node-1\] preflight: error: control plane .node-1. cannot reach control plane .node-3. (.*) on port 2379 (etcd.s clients): no answer within 2 s" pf.out
	expect_no_grep "^\[node-2\] preflight: error: control plane" pf.out
'

test_case "up --phases prep: keepalived and HAProxy from the mirror, one node holds the VIP, the API answers through it" '
	"$PROVISION" up -i "$INV" --roles r --phases prep --no-tui >up1.out 2>&1 || { cat up1.out; exit 1; }
	for n in $TESTBED_NODES; do
		expect_grep "^\[$n\] api-vip › 10-install … changed" up1.out
		expect_grep "^\[$n\] api-vip › 30-services … changed" up1.out
		expect_eq "active active" "$(x $n systemctl is-active keepalived haproxy | paste -sd " " -)" "$n services"
		x $n grep -q "interface eth0" /etc/keepalived/keepalived.conf
	done
	x node-1 grep -q "priority 100" /etc/keepalived/keepalived.conf
	x node-5 grep -q "priority 96" /etc/keepalived/keepalived.conf
	# No API server answers yet (as before kubeadm init): the VIP is held
	# all the same, by one node (node-1, the highest priority, unless
	# another started first: preempt_delay keeps it where it is for 30 s).
	i=0
	until [ "$(holders | wc -l)" = 1 ]; do i=$((i + 1)); [ $i -lt 50 ] || break; sleep 0.2; done
	holders >holder.txt
	expect_eq 1 "$(wc -l <holder.txt)" "number of VIP holders"
	start_api_servers
	i=0
	until curl -sk --max-time 2 "https://$VIP:8443/healthz" >via-vip.out; do i=$((i + 1)); [ $i -lt 30 ] || break; sleep 0.2; done
	expect_grep "^ok node-[1-5]$" via-vip.out
	expect_eq "$(cat holder.txt)" "$(holders)" "the VIP holder"
	echo "# $(cat holder.txt) holds the VIP $VIP; $(cat via-vip.out) through it"
'

test_case "a second up changes nothing" '
	"$PROVISION" up -i "$INV" --roles r --phases prep --no-tui >up2.out 2>&1 || { cat up2.out; exit 1; }
	expect_grep "^up testbed: 5 nodes, 0 changed, 0 failed, 0 unreachable" up2.out
	expect_no_grep "… changed" up2.out
	expect_eq "$(cat holder.txt)" "$(holders)" "the VIP holder"
'

# lose_holder RUN: the VIP's holder is lost; how long until the API answers through the VIP.
lose_holder() {
	old=$(holders)
	[ "$(echo "$old" | wc -l)" = 1 ] || { echo "holders before: $old"; return 1; }
	curl -sk --max-time 3 "https://$VIP:8443/healthz" >/dev/null
	t0=$(date +%s%N)
	"$TESTBED" kill-node "$TB" "$old" --silent
	echo "$old" >>"$TEST_DIR/lost"
	until curl -sk --connect-timeout 0.5 --max-time 1.5 "https://$VIP:8443/healthz" >answer.out 2>/dev/null; do
		[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 20000 ] || { echo "no answer through the VIP 20 s after $old was lost"; return 1; }
		sleep 0.1
	done
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	new=$(holders)
	echo "# failover $1: $old lost, $new holds the VIP, the API answers through it after $ms ms ($(cat answer.out))" | tee -a "$TEST_DIR/figures"
	[ "$(echo "$new" | wc -l)" = 1 ] && [ "$new" != "$old" ]
	expect_grep "^ok node-[1-5]$" answer.out
	# the stated time: VRRP declares a master dead after 3 missed adverts
	# (advert_int 1 s) plus its skew; HAProxy retries a lost server on the next
	[ "$ms" -lt 10000 ] || { echo "failover took $ms ms, more than 10 s"; return 1; }
}

for run in 1 2 3; do
	test_case "failover $run: the holder's machine is lost, the API answers through the VIP within 10 s" "lose_holder $run"
done
[ -f "$TEST_DIR/figures" ] && cat "$TEST_DIR/figures"
echo "# $(($(date +%s) - t_start)) s from the repository's server to the last failover"

test_done
