# shellcheck shell=sh
# tests/lib-ha.sh: what the tests of several control planes behind a real
# virtual IP share (t0465, t0466, t0467, t0468).  POSIX sh; sourced after
# tests/lib.sh and tests/fakes/cluster-testbed.sh, its functions called
# after cluster_testbed: they need $SRC_ROOT, $TEST_DIR, $TESTBED, $TB,
# $INV, $STATE and the testbed's TESTBED_ROOTFS, TESTBED_HOST_ADDR and
# TESTBED_BRIDGE.
#
#   x NODE CMD...          CMD on the testbed node NODE (testbed.sh exec)
#   addr NODE              NODE's address on the testbed bridge
#   ha_mirror NODE...      Debian's keepalived, HAProxy and curl for NODEs
#                          (sets REPO, debport)
#   ha_inventory [NODE=ROLES...]  the inventory with the VIP (sets and
#                          exports VIP, API and HA; sets ADDR1)
#   ha_address_inventory [NODE=ROLES...]  the inventory with the lab's own
#                          balancer as cluster.api_endpoint.address (a
#                          tests/tools/tcp-balancer.py on this machine in
#                          front of the control planes; sets and exports
#                          API and HA)
#   admin_pem              the state folder's admin as PEM files for curl
#   api PATH               GET through the VIP as the admin (t0468 defines
#                          its own api after sourcing this)
#   ec NODE ARGS...        etcdctl on NODE against its own member (sets
#                          ec_node)
#   etcd_members NODE      etcd's member list there
#
# Cleanup (the HTTP server stopped, the VIP taken off the bridge) is
# registered with test_at_exit.  The test bodies (tests/lib.sh's
# test_case: a subshell of the script) see these functions and variables.

x() { "$TESTBED" exec "$TB" "$@"; }
addr() { awk -v n="$1" '$1 == n { print $2 }' "$TB/nodes.txt"; }

# ha_mirror NODE...: REPO set to the flat repository of keepalived, haproxy
# and curl that tests/testbed/apt-repo.sh builds for the testbed's release,
# served on $TESTBED_HOST_ADDR (port $debport, log $TEST_DIR/http-deb.log:
# cluster_serve of tests/fakes/cluster-testbed.sh) as the only apt source of
# every NODE (its /etc/apt/sources.list; sources.list.d emptied): the
# control planes' Debian mirror, from which roles/api-vip installs (and the
# control planes' 10-host-tools curl).  When the repository cannot be built
# or the server does not start within 5 s, the log is shown and the script
# ends (exit 1).
ha_mirror() {
	REPO=$("$SRC_ROOT/tests/testbed/apt-repo.sh" "$TESTBED_ROOTFS" keepalived haproxy curl 2>"$TEST_DIR/apt-repo.log") || {
		sed 's/^/# /' "$TEST_DIR/apt-repo.log"
		exit 1
	}
	cluster_serve "$REPO/repo" "$TEST_DIR/http-deb.log" || {
		sed 's/^/# /' "$TEST_DIR/http-deb.log"
		exit 1
	}
	debport=$CLUSTER_PORT
	for n in "$@"; do
		x "$n" sh -c "echo 'deb [trusted=yes] http://$TESTBED_HOST_ADDR:$debport/ ./' >/etc/apt/sources.list && rm -f /etc/apt/sources.list.d/*"
	done
}

# ha_write ENDPOINT [NODE=ROLES...]: $HA written: $INV with
# "api_endpoint: {ENDPOINT}" under cluster (after kubernetes_version) and
# each NODE's roles line "roles: [ROLES]" (e.g. node-2=control-plane, or
# "node-1=control-plane, worker"); the other lines as in $INV.
ha_write() {
	_endpoint=$1
	shift
	awk -v endpoint="$_endpoint" -v nodes="$(printf '%s|' "$@")" '
		BEGIN {
			n = split(nodes, a, "|")
			for (i = 1; i <= n; i++)
				if ((k = index(a[i], "=")) > 0) roles[substr(a[i], 1, k - 1)] = substr(a[i], k + 1)
		}
		/^  kubernetes_version:/ { print; print "  api_endpoint:"; print "    " endpoint; next }
		/^  - name: / { name = $3 }
		/^    roles: / && (name in roles) { print "    roles: [" roles[name] "]"; next }
		{ print }' "$INV" >"$HA"
}

# ha_inventory [NODE=ROLES...]: VIP set to .50 of node-1's subnet (ADDR1:
# node-1's address) and HA to $TEST_DIR/inventory-ha.yaml: $INV with
# cluster.api_endpoint.vip VIP (after kubernetes_version) and each NODE's
# roles line "roles: [ROLES]" (e.g. node-2=control-plane, or
# "node-1=control-plane, worker"); the other lines as in $INV.  VIP and HA
# exported; the VIP's removal from the bridge registered with test_at_exit.
ha_inventory() {
	ADDR1=$(addr node-1)
	VIP=${ADDR1%.*}.50
	HA=$TEST_DIR/inventory-ha.yaml
	ha_write "vip: $VIP" "$@"
	API=$VIP:8443
	export VIP API HA
	test_at_exit "ip addr del '$VIP/32' dev '$TESTBED_BRIDGE' 2>/dev/null; true"
}

# ha_address_inventory [NODE=ROLES...]: the lab's own load balancer in
# front of the control planes, which provision does not manage: a
# tests/tools/tcp-balancer.py on this machine's bridge address, port 9443
# (API, exported), to the API servers (6443) of the nodes given with
# control-plane among their ROLES, ready ones first (HTTPS /readyz once a
# second, as kubeadm's ha-considerations configures HAProxy; log
# $TEST_DIR/balancer.log; stopped at exit, and after 30 minutes whatever
# happens).  HA (exported): $INV with cluster.api_endpoint.address API and
# each NODE's roles line, as ha_inventory writes them.
ha_address_inventory() {
	API=$TESTBED_HOST_ADDR:9443
	HA=$TEST_DIR/inventory-ha.yaml
	_backends=
	for _a in "$@"; do
		case ${_a#*=} in
		*control-plane*) _backends="$_backends $(addr "${_a%%=*}"):6443" ;;
		esac
	done
	# shellcheck disable=SC2086 # one backend a word
	python3 -u "$SRC_ROOT/tests/tools/tcp-balancer.py" "$API" $_backends --seconds 1800 >"$TEST_DIR/balancer.log" 2>&1 &
	test_at_exit "kill $!"
	_i=0
	until grep -q "^listening on " "$TEST_DIR/balancer.log"; do
		_i=$((_i + 1))
		[ "$_i" -lt 50 ] || { sed 's/^/# /' "$TEST_DIR/balancer.log"; exit 1; }
		sleep 0.1
	done
	ha_write "address: $API" "$@"
	export API HA
}

# admin_pem: the client certificate, key and CA of the state folder's
# admin.conf into $TEST_DIR/{client-certificate,client-key,certificate-
# authority}-data.pem, for curl from this machine through the VIP (again
# after anything that writes a new admin.conf).
admin_pem() {
	for k in client-certificate-data client-key-data certificate-authority-data; do
		sed -n "s/^ *$k: *//p" "$STATE/private/admin.conf" | base64 -d >"$TEST_DIR/$k.pem"
	done
}
api() { # PATH: GET through the VIP as the admin (admin_pem first)
	curl --silent --show-error --max-time 5 --cacert "$TEST_DIR/certificate-authority-data.pem" \
		--cert "$TEST_DIR/client-certificate-data.pem" --key "$TEST_DIR/client-key-data.pem" \
		"https://$API$1"
}
ec() { # NODE ARGS...: etcdctl on NODE against its own member
	ec_node=$1
	shift
	x "$ec_node" env ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 \
		--cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \
		--key=/etc/kubernetes/pki/etcd/healthcheck-client.key "$@"
}
etcd_members() { # NODE: etcdctl member list there (name, started, learner)
	ec "$1" member list -w simple
}
