# renew-certs 10-renew: every certificate kubeadm manages valid for more than
# PROVISION_CERT_WARNING_DAYS days; otherwise `kubeadm certs renew all`.  A
# second run finds them renewed and changes nothing.  The restarts come next
# (20-restart): a marker says they are owed, so an interrupted run does them
# the next time even though the certificates are already new.
set -eu
PKI=/etc/kubernetes/pki
MARK=/var/lib/provision/renew-certs/restart-owed
days=${PROVISION_CERT_WARNING_DAYS:-30}
secs=$((days * 86400))

# NAME FILE: "NAME ok" or "NAME due", the certificate alone (never the key)
one() {
	case $2 in
	*.conf)
		[ -f "$2" ] || return 0
		# the client certificate embedded in a kubeconfig
		pem=$(sed -n 's/^ *client-certificate-data: *//p' "$2" | base64 -d)
		;;
	*)
		[ -f "$2" ] || {
			echo "$1 missing"
			return 1
		}
		pem=$(cat "$2")
		;;
	esac
	if printf '%s\n' "$pem" | openssl x509 -noout -checkend "$secs" >/dev/null; then
		echo "$1 ok: $(printf '%s\n' "$pem" | openssl x509 -noout -enddate)"
	else
		echo "$1 due: $(printf '%s\n' "$pem" | openssl x509 -noout -enddate)"
		return 1
	fi
}

all() {
	rc=0
	for c in apiserver apiserver-kubelet-client front-proxy-client apiserver-etcd-client; do
		one "$c" "$PKI/$c.crt" || rc=1
	done
	for c in server peer healthcheck-client; do
		one "etcd-$c" "$PKI/etcd/$c.crt" || rc=1
	done
	for c in admin super-admin controller-manager scheduler; do
		one "$c.conf" "/etc/kubernetes/$c.conf" || rc=1
	done
	return $rc
}

case ${1:-} in
check)
	all
	;;
apply)
	mkdir -p "${MARK%/*}"
	: >"$MARK"
	kubeadm certs renew all
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
