# shellcheck shell=sh
# tests/lib-etcd.sh: what the tests on a REAL etcd share (t0404, t0460,
# t0461); sourced after tests/lib.sh.

# etcd_debs: ETCD set to the folder of Debian's etcd binaries of
# PROVISION_TESTBED_SUITE (bookworm by default; SUITE set too), fetched once
# by tests/testbed/etcd-debs.sh; every case skipped when they cannot be had.
etcd_debs() {
	SUITE=${PROVISION_TESTBED_SUITE:-bookworm}
	# shellcheck disable=SC2034 # used by the sourcing script
	ETCD=$(sh "$SRC_ROOT/tests/testbed/etcd-debs.sh" "$SUITE" 2>"$TEST_DIR.etcd-debs.err") || {
		cat "$TEST_DIR.etcd-debs.err"
		rm -f "$TEST_DIR.etcd-debs.err"
		test_skip_all "cannot fetch $SUITE's etcd packages"
	}
	rm -f "$TEST_DIR.etcd-debs.err"
}

# kubeadm_pki DIR [FUNCTION]: a PKI in DIR as kubeadm's certs phase makes
# it with openssl (RSA 2048, CAs 10 years, leaves 1 year): the CAs ca
# (kubernetes) and etcd/ca (etcd-ca), then FUNCTION run in DIR to make the
# leaves (pki_leaf); every key 0600.  Its output goes to DIR.log, shown
# when a step fails (and the script ends).
kubeadm_pki() {
	mkdir -p "$1/etcd"
	(
		cd "$1" && pki_ca ca kubernetes && pki_ca etcd/ca etcd-ca &&
			{ [ -z "${2:-}" ] || "$2"; } &&
			rm -f ./*.srl etcd/*.srl &&
			find . -name '*.key' -exec chmod 0600 {} +
	) >"$1.log" 2>&1 || { cat "$1.log"; exit 1; }
}

# pki_ca FILE CN: a CA certificate FILE.crt and its key FILE.key
pki_ca() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -subj "/CN=$2" \
		-days 3650 -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign
}

# pki_leaf FILE CA SUBJECT EKU [SAN]: FILE.crt and FILE.key signed by the
# CA CA.crt, CA.key (SUBJECT as "/O=.../CN=...", EKU as
# "serverAuth,clientAuth", SAN as "DNS:a,IP:b")
pki_leaf() {
	openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$3" &&
		{
			echo "keyUsage=critical,digitalSignature,keyEncipherment"
			echo "extendedKeyUsage=$4"
			[ -z "${5:-}" ] || echo "subjectAltName=$5"
		} >"$1.ext" &&
		openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial \
			-days 365 -extfile "$1.ext" -out "$1.crt" &&
		rm -f "$1.csr" "$1.ext"
}
