# shellcheck shell=sh
# tests/registry/lib.sh: a real registry, a real pull-through mirror and a
# real proxy for the tests (README.md in this folder).  Sourced after
# tests/lib.sh (it uses TEST_DIR, SRC_ROOT and test_at_exit).  POSIX sh.
#
#   registry_images SPEC...            -> prints a cached registry root holding those images
#   registry_start NAME ADDR:PORT [--root DIR] [--tls] [--htpasswd USER PWFILE]
#                  [--mirror-of URL [--mirror-ca FILE]]
#   registry_stop NAME                 (the process gone: connection refused)
#   registry_log NAME                  -> path of its log (access lines included)
#   registry_url NAME                  -> http(s)://ADDR:PORT
#   registry_ca                        -> path of the tests' CA certificate (made once per test)
#   registry_htpasswd USER PWFILE OUT  (a bcrypt htpasswd line, as distribution wants)
#   registry_push NAME REPO:TAG [mkimage.py push options]
#   front_start NAME ADDR:PORT STATUS [RETRY_AFTER]  (every manifest/blob request answered STATUS)
#   proxy_start ADDR:PORT [--hosts FILE] -> squid; proxy_log -> its access log
#
# Every process is started under `timeout` (at most 30 minutes) and its
# stop registered with test_at_exit; every wait is bounded.
# shellcheck disable=SC2034 # REGISTRY_* are for the sourcing test

REGISTRY_LIB_DIR=$SRC_ROOT/tests/registry
REGISTRY_DIR=$TEST_DIR/registry
REGISTRY_CACHE=${PROVISION_REGISTRY_CACHE:-/var/cache/provision-registry}
mkdir -p "$REGISTRY_DIR"

# _registry_wait URL [CURL-ARGS...]: until URL answers (any HTTP status), 20 s at most.
_registry_wait() {
	_u=$1
	shift
	_i=0
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$_u")" != 000 ]; do
		_i=$((_i + 1))
		[ "$_i" -lt 100 ] || return 1
		sleep 0.2
	done
}

# _registry_kill PIDFILE: TERM, then KILL after 3 s.
_registry_kill() {
	[ -f "$1" ] || return 0
	_p=$(cat "$1")
	kill -TERM "$_p" 2>/dev/null || return 0
	_i=0
	while kill -0 "$_p" 2>/dev/null && [ "$_i" -lt 30 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	kill -KILL "$_p" 2>/dev/null || true
	rm -f "$1"
}

# registry_ca: the tests' CA (made with openssl at the first call); prints its certificate's path.
registry_ca() {
	_d=$REGISTRY_DIR/ca
	if [ ! -f "$_d/ca.crt" ]; then
		mkdir -p "$_d"
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj "/CN=provision tests registry CA" -keyout "$_d/ca.key" -out "$_d/ca.crt" 2>/dev/null ||
			return 1
	fi
	echo "$_d/ca.crt"
}

# _registry_cert NAME ADDR: a server certificate for ADDR (IP or name) signed by registry_ca.
_registry_cert() {
	_ca=$(registry_ca) || return 1
	_d=$REGISTRY_DIR/$1
	case $2 in
	*[!0-9.]*) _san="DNS:$2" ;;
	*) _san="IP:$2" ;;
	esac
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
		-keyout "$_d/server.key" -out "$_d/server.csr" 2>/dev/null &&
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$_san" >"$_d/ext" &&
		openssl x509 -req -in "$_d/server.csr" -CA "$_ca" -CAkey "$REGISTRY_DIR/ca/ca.key" \
			-CAcreateserial -days 2 -extfile "$_d/ext" -out "$_d/server.crt" 2>/dev/null
}

# registry_htpasswd USER PWFILE OUT: USER's bcrypt line (distribution reads
# only bcrypt), made with the C library's crypt(3) through python3 (libxcrypt
# knows $2b$), so no apache2-utils is needed.
registry_htpasswd() {
	python3 -W ignore - "$1" "$2" >"$3" <<-'EOF'
		import crypt, sys
		pw = open(sys.argv[2]).read().strip()
		h = crypt.crypt(pw, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 5))
		assert h and h.startswith("$2b$"), "no bcrypt in this crypt(3)"
		print("%s:%s" % (sys.argv[1], h))
	EOF
}

# registry_images SPEC...: a registry root (distribution's filesystem
# storage) holding the images SPEC names, built once into
# $PROVISION_REGISTRY_CACHE (default /var/cache/provision-registry) and
# printed.  SPEC: REPO:TAG=LAYERS[,index] where LAYERS is sizes joined by
# '+' (4k, 20M+20M, 1G); images of the same LAYERS share their blobs (same
# seed).  Serve it with `registry_start NAME ADDR --root DIR` (read-only).
registry_images() {
	_key=$({
		cat "$REGISTRY_LIB_DIR/mkimage.py"
		printf '%s\n' "$@"
	} | sha256sum | cut -c1-16)
	_root=$REGISTRY_CACHE/root-$_key
	mkdir -p "$REGISTRY_CACHE" || return 1
	(
		flock 9
		[ -f "$_root/.complete" ] && exit 0
		rm -rf "$_root.tmp"
		mkdir -p "$_root.tmp"
		_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		cat >"$_root.tmp.yml" <<-EOF
			version: 0.1
			log: {level: warn}
			storage:
			  filesystem: {rootdirectory: $_root.tmp}
			http: {addr: 127.0.0.1:$_port}
		EOF
		timeout 1800 docker-registry serve "$_root.tmp.yml" >"$_root.tmp.log" 2>&1 &
		_pid=$!
		trap 'kill $_pid 2>/dev/null || :' EXIT
		_registry_wait "http://127.0.0.1:$_port/v2/" || exit 1
		for _spec in "$@"; do
			_ref=${_spec%%=*}
			_layers=${_spec#*=}
			_opts=
			case $_layers in *,index) _opts=--index _layers=${_layers%,index} ;; esac
			set --
			for _l in $(echo "$_layers" | tr '+' ' '); do set -- "$@" --layer "$_l"; done
			# shellcheck disable=SC2086 # _opts: one flag or none
			python3 "$REGISTRY_LIB_DIR/mkimage.py" push "http://127.0.0.1:$_port" "$_ref" "$@" $_opts \
				--seed "$_layers" --cache "$REGISTRY_CACHE/layers" >>"$_root.tmp/.images" || exit 1
		done
		kill "$_pid"
		wait "$_pid" 2>/dev/null
		# the registry is gone: the trap has nothing to stop (dash ended the
		# subshell with the trap's failed kill as its status: a first build
		# of the images said 'registry_images failed' after it had worked)
		trap - EXIT
		touch "$_root.tmp/.complete"
		rm -f "$_root.tmp.yml" "$_root.tmp.log"
		mv "$_root.tmp" "$_root"
	) 9>"$REGISTRY_CACHE/.lock" || return 1
	echo "$_root"
}

# registry_start NAME ADDR:PORT [options]: Debian's docker-registry
# (distribution 2.8) on ADDR:PORT; its config, storage and log in
# $REGISTRY_DIR/NAME.  Options: --root DIR (serve that root read-only,
# e.g. from registry_images; default: an empty writable root), --tls (a
# certificate for ADDR from registry_ca), --htpasswd USER PWFILE (basic
# auth), --mirror-of URL (a pull-through cache of the registry at URL,
# distribution's proxy.remoteurl), --mirror-ca FILE (that registry's CA).
registry_start() {
	_n=$1 _addr=$2
	shift 2
	_d=$REGISTRY_DIR/$_n
	mkdir -p "$_d/root"
	_root=$_d/root _ro=false _tls='' _auth='' _mirror='' _mca=''
	while [ $# -gt 0 ]; do
		case $1 in
		--root) _root=$2 _ro=true && shift ;;
		--tls) _tls=1 ;;
		--htpasswd) registry_htpasswd "$2" "$3" "$_d/htpasswd" && _auth=1 && shift 2 ;;
		--mirror-of) _mirror=$2 && shift ;;
		--mirror-ca) _mca=$2 && shift ;;
		*) echo "registry_start: unknown option $1" >&2 && return 2 ;;
		esac
		shift
	done
	_scheme=http
	{
		echo "version: 0.1"
		echo "log: {level: info, formatter: text, accesslog: {disabled: false}, fields: {registry: $_n}}"
		echo "storage:"
		echo "  filesystem: {rootdirectory: $_root}"
		echo "  delete: {enabled: false}"
		echo "  maintenance: {uploadpurging: {enabled: false}, readonly: {enabled: $_ro}}"
		echo "http:"
		echo "  addr: $_addr"
		if [ -n "$_tls" ]; then
			_registry_cert "$_n" "${_addr%:*}" || return 1
			echo "  tls: {certificate: $_d/server.crt, key: $_d/server.key}"
			_scheme=https
		fi
		[ -z "$_auth" ] || echo "auth: {htpasswd: {realm: provision-test, path: $_d/htpasswd}}"
		[ -z "$_mirror" ] || echo "proxy: {remoteurl: $_mirror}"
	} >"$_d/config.yml"
	echo "$_scheme://$_addr" >"$_d/url"
	# A mirror reaching an https upstream with the tests' CA: Go reads SSL_CERT_FILE.
	if [ -n "$_mca" ]; then
		SSL_CERT_FILE=$_mca timeout 1800 docker-registry serve "$_d/config.yml" >>"$_d/log" 2>&1 &
	else
		timeout 1800 docker-registry serve "$_d/config.yml" >>"$_d/log" 2>&1 &
	fi
	echo $! >"$_d/pid"
	test_at_exit "_registry_kill '$_d/pid'"
	if [ -n "$_tls" ]; then
		_registry_wait "$_scheme://$_addr/v2/" --cacert "$(registry_ca)"
	else
		_registry_wait "$_scheme://$_addr/v2/"
	fi || {
		echo "registry $_n did not answer on $_addr:" >&2
		tail -n 5 "$_d/log" >&2
		return 1
	}
}

registry_stop() {
	_registry_kill "$REGISTRY_DIR/$1/pid"
}

registry_log() {
	echo "$REGISTRY_DIR/$1/log"
}

registry_url() {
	cat "$REGISTRY_DIR/$1/url"
}

# registry_push NAME REPO:TAG [mkimage.py push options]: an image made here into a running registry.
registry_push() {
	_n=$1 _ref=$2
	shift 2
	python3 "$REGISTRY_LIB_DIR/mkimage.py" push "$(registry_url "$_n")" "$_ref" \
		--cache "$REGISTRY_CACHE/layers" "$@"
}

# front_start NAME ADDR:PORT STATUS [RETRY_AFTER]: tests/registry/front.py,
# a registry's front that answers /v2/ 200 and every other request STATUS
# (429 with Retry-After: RETRY_AFTER, 401 with a Basic challenge, 404, ...),
# each request a line in registry_log NAME.
front_start() {
	_d=$REGISTRY_DIR/$1
	mkdir -p "$_d"
	echo "http://$2" >"$_d/url"
	timeout 1800 python3 "$REGISTRY_LIB_DIR/front.py" "$2" "$3" "${4:-}" >>"$_d/log" 2>&1 &
	echo $! >"$_d/pid"
	test_at_exit "_registry_kill '$_d/pid'"
	_registry_wait "http://$2/v2/"
}

# proxy_start ADDR:PORT [--hosts FILE]: Debian's squid on ADDR:PORT for
# clients in 198.18.0.0/15 and this machine's loopback, caching nothing,
# every request a line of its access log (proxy_log; squid's native
# format: time, ms, client, result/status, bytes, method, URL ...).  With
# --hosts FILE squid resolves names from FILE (hosts(5) lines) and has no
# DNS server: a name only the proxy knows is reachable only through it.
proxy_start() {
	_d=$REGISTRY_DIR/proxy
	mkdir -p "$_d"
	: >"$_d/hosts"
	[ "${2:-}" != --hosts ] || cp "$3" "$_d/hosts"
	: >"$_d/access.log"
	cat >"$_d/squid.conf" <<-EOF
		http_port $1
		pid_filename $_d/squid.pid
		access_log stdio:$_d/access.log squid
		cache_log $_d/cache.log
		cache_store_log none
		cache deny all
		cache_mem 8 MB
		coredump_dir $_d
		pinger_enable off
		shutdown_lifetime 1 seconds
		acl testbed src 198.18.0.0/15 127.0.0.0/8
		acl CONNECT method CONNECT
		http_access allow testbed
		http_access deny all
		hosts_file $_d/hosts
		dns_nameservers 127.0.0.1
	EOF
	# squid drops to its user (proxy) and writes its logs there
	chown -R proxy "$_d" 2>/dev/null || chmod 0777 "$_d"
	timeout 1800 squid -N -f "$_d/squid.conf" >"$_d/squid.out" 2>&1 &
	echo $! >"$_d/pid"
	test_at_exit "_registry_kill '$_d/pid'"
	_i=0
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$1/")" != 000 ]; do
		_i=$((_i + 1))
		[ "$_i" -lt 100 ] || {
			echo "squid did not answer on $1:" >&2
			tail -n 5 "$_d/cache.log" "$_d/squid.out" >&2
			return 1
		}
		sleep 0.2
	done
	echo "http://$1" >"$_d/url"
}

proxy_log() {
	echo "$REGISTRY_DIR/proxy/access.log"
}
