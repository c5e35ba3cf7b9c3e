# api-vip 30-services: HAProxy and keepalived enabled, running, and running
# the configuration now in place (its SHA-256 is kept in
# /var/lib/provision/api-vip.applied when a service is (re)loaded).  A
# changed configuration is checked first (haproxy -c, keepalived -t), then
# reloaded: keepalived keeps its VRRP state and the VIP, HAProxy its
# connections.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
APPLIED=$PROVISION_STATE_DIR/api-vip.applied

want() {
	sha256sum /etc/haproxy/haproxy.cfg /etc/keepalived/keepalived.conf /etc/keepalived/check-apiserver.sh
}

state() {
	for s in haproxy keepalived; do
		printf '%s %s %s\n' "$s" "$(systemctl is-enabled "$s" 2>/dev/null || true)" "$(systemctl is-active "$s" 2>/dev/null || true)"
	done
}

case ${1:-} in
check)
	st=$(state)
	echo "$st"
	[ "$st" = "haproxy enabled active
keepalived enabled active" ] || exit 1
	if ! want | cmp -s - "$APPLIED"; then
		echo "configuration changed since the services last read it"
		exit 1
	fi
	;;
apply)
	if ! out=$(haproxy -c -f /etc/haproxy/haproxy.cfg 2>&1); then
		printf '%s\n' "$out"
		pv_hint "HAProxy refuses /etc/haproxy/haproxy.cfg on $PROVISION_NODE ('haproxy -c -f /etc/haproxy/haproxy.cfg' there)"
		exit 1
	fi
	if ! out=$(keepalived --config-test --use-file=/etc/keepalived/keepalived.conf 2>&1); then
		printf '%s\n' "$out"
		pv_hint "keepalived refuses /etc/keepalived/keepalived.conf on $PROVISION_NODE ('keepalived --config-test' there)"
		exit 1
	fi
	systemctl enable --quiet haproxy keepalived
	for s in haproxy keepalived; do
		if [ "$(systemctl is-active "$s" 2>/dev/null || true)" = active ]; then
			systemctl reload "$s"
		else
			systemctl restart "$s"
		fi
	done
	# A reload takes a moment (systemctl says "reloading" meanwhile): the
	# check that follows must see both services settled.
	i=0
	while [ "$(state)" != "haproxy enabled active
keepalived enabled active" ] && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	mkdir -p "$PROVISION_STATE_DIR"
	want >"$APPLIED"
	echo "haproxy and keepalived running the current configuration"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
