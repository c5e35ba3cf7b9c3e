#!/bin/sh
# run.sh: beside others (tests/run.sh: loopback servers, mostly waiting for stalls and timeouts; nothing here times itself tightly)
# run.sh: about 40 s in CI (beside another; tests/run.sh starts the longest first)
# t0500-artifacts: `provision fetch` (and the fetch `up` does before it
# touches a node) against a real HTTP server on loopback started here
# (tests/tools/artifact-server.py, which exits by itself after 5 minutes):
# a good file (cached once, verified), a wrong checksum (URL, expected and
# actual hash named, nothing kept), a server that drops the connection
# half-way (resumed with a Range request), a 404, a slow but steady server
# against a stalled one with a 2 s timeout, progress lines off a terminal, a
# forward proxy from http_proxy, a pending hash that `up` refuses and
# `fetch --record` fills in; then the HTTP check of validation: /readyz over
# TLS with the admin client certificate from a kubeconfig (a Python ssl
# server that requires the client certificate).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3 sha256sum

SERVER=$SRC_ROOT/tests/tools/artifact-server.py
HTTP_GET=$BUILD/tests/tools/http-get
FILES=$TEST_DIR/files
ROLES=$TEST_DIR/roles
CACHE=$TEST_DIR/cache
INV=$SRC_ROOT/inventory/lab-a.yaml
mkdir -p "$FILES" "$ROLES/probe/steps"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

# Files: a small one, a 256 KiB one (the slow and dropped downloads).
printf 'artifact for provision tests\n' >"$FILES/good.bin"
python3 -c 'import os,sys; sys.stdout.buffer.write(os.urandom(262144))' >"$FILES/big.bin"
GOOD_SHA=$(sha256sum <"$FILES/good.bin" | cut -c1-64)
BIG_SHA=$(sha256sum <"$FILES/big.bin" | cut -c1-64)

start_server() { # LOG [ARGS...]: sets $port
	log=$1
	shift
	python3 -u "$SERVER" --lifetime 300 "$@" >"$log" 2>&1 &
	test_at_exit "kill $!"
	i=0
	until [ -f "$log" ] && port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$log") && [ -n "$port" ]; do
		i=$((i + 1))
		[ "$i" -lt 50 ] || { echo "# the server did not start:"; sed 's/^/# /' "$log"; exit 1; }
		sleep 0.1
	done
}
start_server "$TEST_DIR/server.log" --dir "$FILES"
PORT=$port
URL=http://127.0.0.1:$PORT
start_server "$TEST_DIR/proxy.log" --proxy
PROXY=http://127.0.0.1:$port

# A role that needs one artifact, so `up` has something to refuse.
cp "$SRC_ROOT/roles/lib.sh" "$ROLES/"
cat >"$ROLES/probe/role.yaml" <<EOF
description: test role of t0500 (one artifact)
phase: prep
artifacts:
  - name: probe
    dest: /var/lib/provision/artifacts/probe.bin
EOF
printf 'case $1 in check) exit 0 ;; *) exit 0 ;; esac\n' >"$ROLES/probe/steps/10-noop.sh"

manifest() { # NAME URL SHA [NAME URL SHA]... (the role's `probe` is added when not given)
	: >"$ROLES/artifacts.yaml"
	[ "$1" = probe ] || set -- "$@" probe "$URL/good.bin" "$GOOD_SHA"
	while [ $# -ge 3 ]; do
		printf '# %s\n%s:\n  url: %s\n  sha256: %s\n  description: a test artifact\n' "$1" "$1" "$2" "$3" >>"$ROLES/artifacts.yaml"
		shift 3
	done
}
fetch() {
	"$PROVISION" fetch -i "$INV" --roles "$ROLES" --cache "$CACHE" "$@"
}
requests() { # PATH: how many requests the server saw for it
	grep -c "^GET $1 " "$TEST_DIR/server.log" || true
}

test_case "a good file is fetched, verified, stored by hash, and fetched only once" "
	manifest probe '$URL/good.bin' $GOOD_SHA
	fetch >out 2>err
	expect_grep '^fetched probe: 29 bytes, sha256 verified' err
	expect_eq '$GOOD_SHA' \"\$(sha256sum <'$CACHE/sha256/$GOOD_SHA' | cut -c1-64)\" 'cached file'
	expect_eq 1 \"\$(requests /good.bin)\" 'requests'
	fetch >out 2>err
	expect_eq 1 \"\$(requests /good.bin)\" 'requests after a second fetch'
	expect_no_grep fetched err
"

test_case "a wrong checksum names the URL, the expected and the actual hash; nothing is kept" "
	pinned=\$(printf other | sha256sum | cut -c1-64)
	manifest wrong '$URL/good.bin' \$pinned
	expect_status 3 fetch --all >out 2>err
	expect_grep \"checksum mismatch for '$URL/good.bin': expected sha256 \$pinned, got $GOOD_SHA\" err
	[ ! -e '$CACHE/sha256/'\$pinned ]
	[ ! -e '$CACHE/partial/wrong' ]
"

test_case "a connection dropped half-way is resumed with a Range request" "
	manifest dropped '$URL/drop/big.bin' $BIG_SHA
	fetch --all >out 2>err
	expect_grep '^fetched dropped: 256.0 KiB, sha256 verified (2 attempts; resumed at 131072 bytes)' err
	expect_grep '^GET /drop/big.bin range=-' '$TEST_DIR/server.log'
	expect_grep '^GET /drop/big.bin range=bytes=131072-' '$TEST_DIR/server.log'
	expect_eq '$BIG_SHA' \"\$(sha256sum <'$CACHE/sha256/$BIG_SHA' | cut -c1-64)\" 'resumed file'
"

test_case "a 404 is an error naming the URL and the status" "
	manifest missing '$URL/nothing-here.bin' $GOOD_SHA
	rm -rf '$CACHE'
	expect_status 3 fetch --all >out 2>err
	expect_grep \"cannot fetch artifact 'missing': '$URL/nothing-here.bin': the server answered HTTP 404\" err
	[ ! -e '$CACHE/partial/missing' ]
"

test_case "a slow but steady server finishes within a 2 s stall timeout, with progress lines" "
	rm -rf '$CACHE'
	manifest slow '$URL/slow/big.bin' $BIG_SHA
	fetch --all --timeout 2 >out 2>err
	expect_grep '^fetching slow: .* KiB of 256.0 KiB ([0-9]*%)' err
	expect_grep '^fetched slow: 256.0 KiB, sha256 verified' err
"

# libcurl judges the speed over its last ~5 s of samples, so each attempt
# ends ~6-8 s after the last byte, and there are 4 attempts.
test_case "a stalled server times out (2 s without data); what arrived is kept for the next fetch" "
	rm -rf '$CACHE'
	manifest stalled '$URL/stall/big.bin' $BIG_SHA
	t0=\$(date +%s)
	expect_status 3 fetch --all --timeout 2 >out 2>err
	t1=\$(date +%s)
	expect_grep \"'$URL/stall/big.bin': the server stopped sending (no data for 2 s)\" err
	expect_grep '4 attempts' err
	expect_grep 'the next fetch resumes from it' err
	[ \$((t1 - t0)) -lt 90 ] || { echo \"took \$((t1 - t0)) s\"; false; }
	[ -s '$CACHE/partial/stalled' ]
"

# Issue 31 F6: limits (before: no size limit, no overall time; --max-size and
# --max-time were unknown options, exit 2).
test_case "an artifact larger than --max-size is refused; nothing of it is kept" "
	rm -rf '$CACHE'
	manifest large '$URL/big.bin' $BIG_SHA
	rc=0
	fetch --all --max-size 100K >out 2>err || rc=\$?
	cat err
	expect_eq 3 \"\$rc\" 'exit status'
	expect_grep \"cannot fetch artifact 'large': '$URL/big.bin': larger than 102400 bytes\" err
	[ ! -e '$CACHE/partial/large' ]
	[ ! -e '$CACHE/sha256/$BIG_SHA' ]
	fetch --all --max-size 256K >out 2>err
	expect_grep '^fetched large: 256.0 KiB, sha256 verified' err
"

test_case "an artifact that takes longer than --max-time in all is given up; what arrived is kept" "
	rm -rf '$CACHE'
	manifest slowest '$URL/slow/big.bin' $BIG_SHA
	t0=\$(date +%s)
	rc=0
	fetch --all --max-time 2 >out 2>err || rc=\$?
	t1=\$(date +%s)
	cat err
	expect_eq 3 \"\$rc\" 'exit status'
	expect_grep \"cannot fetch artifact 'slowest': gave up after 2 s\" err
	[ \$((t1 - t0)) -lt 6 ] || { echo \"took \$((t1 - t0)) s\"; false; }
	[ -s '$CACHE/partial/slowest' ]
"

test_case "http_proxy from the environment is used" "
	rm -rf '$CACHE'
	manifest viaproxy '$URL/good.bin' $GOOD_SHA
	http_proxy='$PROXY' fetch --all >out 2>err
	expect_grep '^fetched viaproxy' err
	expect_grep '^PROXY GET $URL/good.bin' '$TEST_DIR/proxy.log'
"

test_case "a pending hash: up refuses before any node; fetch --record writes the hash, only that" "
	rm -rf '$CACHE'
	manifest probe '$URL/good.bin' pending
	cp '$ROLES/artifacts.yaml' before.yaml
	expect_status 2 '$PROVISION' up -i '$INV' --roles '$ROLES' --state state --no-tui >out 2>err
	expect_grep \"artifact 'probe' ($URL/good.bin) has no pinned sha256 in '$ROLES/artifacts.yaml' (line 2)\" err
	expect_grep \"run 'provision fetch -i FILE --record'\" err
	expect_status 2 fetch >out 2>err
	expect_grep \"artifact 'probe' ($URL/good.bin) has no pinned sha256\" err
	fetch --record >out 2>err
	expect_grep \"^recorded probe: sha256 $GOOD_SHA\" err
	expect_grep \"warning: this hash trusts whatever $URL/good.bin sent\" err
	diff before.yaml '$ROLES/artifacts.yaml' >d || true
	expect_eq '< sha256: pending
---
> sha256: $GOOD_SHA' \"\$(grep '^[<>-]' d | sed 's/^\\([<>]\\) */\\1 /')\" 'manifest change'
	fetch >out 2>err
	expect_no_grep fetched err
"

test_case "an artifact pinned for one Helm major reaches only an inventory of that major (cluster.helm, default 4); 'helm: 5' is refused" "
	rm -rf '$CACHE' r2
	cp -R '$ROLES' r2
	mkdir -p r2/hm/steps
	cp r2/probe/steps/10-noop.sh r2/hm/steps/
	printf '%s\\n' 'description: test role of t0500 (one archive per Helm major)' 'phase: addons' 'artifacts:' \
		'  - {name: h4, helm: 4, dest: /var/lib/provision/artifacts/h.tar.gz}' \
		'  - {name: h3, helm: 3, dest: /var/lib/provision/artifacts/h.tar.gz}' >r2/hm/role.yaml
	printf 'helm 4 archive\\n' >'$FILES/h4.bin'
	printf 'helm 3 archive\\n' >'$FILES/h3.bin'
	printf '%s\\n' h4: '  url: $URL/h4.bin' \"  sha256: \$(sha256sum <'$FILES/h4.bin' | cut -c1-64)\" \\
		h3: '  url: $URL/h3.bin' \"  sha256: \$(sha256sum <'$FILES/h3.bin' | cut -c1-64)\" >>r2/artifacts.yaml
	'$PROVISION' fetch -i '$INV' --roles r2 --cache '$CACHE' >out 2>err || { cat err; false; }
	expect_grep '^fetched h4: ' err
	expect_no_grep '^fetched h3' err
	sed 's/^  kubernetes_version: .*/&\\n  helm: 3/' '$INV' >inv3.yaml
	grep -q '^  helm: 3\$' inv3.yaml
	rm -rf '$CACHE'
	'$PROVISION' fetch -i inv3.yaml --roles r2 --cache '$CACHE' >out 2>err || { cat err; false; }
	expect_grep '^fetched h3: ' err
	expect_no_grep '^fetched h4' err
	sed -i 's/helm: 3,/helm: 5,/' r2/hm/role.yaml
	expect_status 2 '$PROVISION' fetch -i '$INV' --roles r2 --cache '$CACHE' >out 2>err
	expect_grep \"role.yaml:5:.*'helm' must be 3 or 4\" err
"

# Issue 35 P3: before, role.c and artifacts.c took a key given twice without
# a word (the second description, the second url won).
test_case "a key given twice in role.yaml or roles/artifacts.yaml: an error at its file:line:col, exit 2, nothing fetched" "
	rm -rf '$CACHE' r3
	manifest probe '$URL/good.bin' $GOOD_SHA
	cp -R '$ROLES' r3
	printf 'description: again\\n' >>r3/probe/role.yaml
	line=\$(wc -l <r3/probe/role.yaml)
	before=\$(requests /good.bin)
	expect_status 2 '$PROVISION' fetch -i '$INV' --roles r3 --cache '$CACHE' >out 2>err
	expect_grep \"^r3/probe/role.yaml:\$line:1: error: duplicate key 'description' (first at 1:1)\$\" err
	expect_grep '^  hint: remove one of them\$' err
	expect_status 2 '$PROVISION' up -i '$INV' --roles r3 --state state --no-tui >out 2>err
	expect_grep \"^r3/probe/role.yaml:\$line:1: error: duplicate key 'description'\" err
	expect_grep 'nothing was changed' err
	cp '$ROLES/probe/role.yaml' r3/probe/role.yaml
	printf '  url: %s\\n' '$URL/big.bin' >>r3/artifacts.yaml
	expect_status 2 '$PROVISION' fetch -i '$INV' --roles r3 --cache '$CACHE' >out 2>err
	expect_grep \"^r3/artifacts.yaml:6:3: error: duplicate key 'url' (first at 3:3)\$\" err
	expect_eq \"\$before\" \"\$(requests /good.bin)\" 'requests for good.bin'
	expect_no_grep '^fetched' err
"

# ---- the HTTP check of validation: /readyz with the admin client certificate

if command -v openssl >/dev/null 2>&1; then
	test_case "/readyz over TLS with the kubeconfig's client certificate; refused without it" "
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=test-ca 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1\n' >san
		openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 1 -extfile san 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -keyout cli.key -out cli.csr -subj /CN=kubernetes-admin 2>/dev/null
		openssl x509 -req -in cli.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out cli.crt -days 1 2>/dev/null
		cat >tls.py <<'PY'
import http.server, ssl, sys, threading, os
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = b'ok' if self.path == '/readyz' else b'no'
        self.send_response(200 if self.path == '/readyz' else 404)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
srv = http.server.HTTPServer(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain('srv.crt', 'srv.key')
ctx.load_verify_locations('ca.crt')
ctx.verify_mode = ssl.CERT_REQUIRED
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print('port', srv.server_address[1], flush=True)
threading.Timer(60, lambda: os._exit(0)).start()
srv.serve_forever()
PY
		python3 -u tls.py >tls.log 2>&1 &
		i=0; until tport=\$(sed -n 's/^port //p' tls.log) && [ -n \"\$tport\" ]; do i=\$((i+1)); [ \$i -lt 50 ]; sleep 0.1; done
		b64() { base64 -w0 <\"\$1\"; }
		cat >admin.conf <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: \$(b64 ca.crt)
    server: https://127.0.0.1:\$tport
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
users:
- name: kubernetes-admin
  user:
    client-certificate-data: \$(b64 cli.crt)
    client-key-data: \$(b64 cli.key)
EOF
		'$HTTP_GET' admin.conf /readyz >out 2>&1
		expect_eq '200 ok' \"\$(cat out)\" 'GET /readyz with the client certificate'
		# a key given twice: refused at its place, not the first (or last) taken
		awk '{ print } /^    server:/ { print }' admin.conf >twice.conf
		expect_status 1 '$HTTP_GET' twice.conf /readyz >out 2>&1
		expect_grep \"^twice.conf:7:5: duplicate key 'server' (first at 6:5); remove one of them\$\" out
		grep -v client-key-data admin.conf >nokey.conf
		expect_status 1 '$HTTP_GET' nokey.conf /readyz >out 2>&1
		expect_grep \"https://127.0.0.1:\$tport/readyz'\" out
	"
	# Issue 31 F6: before, a redirect from https:// to http:// was followed (and
	# fetch --record would pin what came over plain HTTP).
	test_case "a redirect from https to http is refused; from https to https it is followed" "
		cat >redir.py <<'PY'
import http.server, ssl, sys, threading, os
plain = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        port = self.server.server_address[1]
        where = {'/down': 'http://127.0.0.1:%s/good.bin' % plain,
                 '/up': 'https://127.0.0.1:%d/ok' % port}.get(self.path)
        body = b'' if where else b'ok'
        self.send_response(302 if where else 200)
        if where:
            self.send_header('Location', where)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
srv = http.server.HTTPServer(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain('srv.crt', 'srv.key')
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print('port', srv.server_address[1], flush=True)
threading.Timer(60, lambda: os._exit(0)).start()
srv.serve_forever()
PY
		python3 -u redir.py $PORT >redir.log 2>&1 &
		i=0; until rport=\$(sed -n 's/^port //p' redir.log) && [ -n \"\$rport\" ]; do i=\$((i+1)); [ \$i -lt 50 ]; sleep 0.1; done
		sed \"s|server: https://127.0.0.1:[0-9]*|server: https://127.0.0.1:\$rport|\" admin.conf >redir.conf
		rc=0
		'$HTTP_GET' redir.conf /down >out 2>&1 || rc=\$?
		cat out
		expect_eq 1 \"\$rc\" 'exit status of http-get /down'
		expect_grep 'redirected away from https (refused)' out
		'$HTTP_GET' redir.conf /up >out 2>&1
		expect_eq '200 ok' \"\$(cat out)\" 'https to https'
	"
else
	test_skip "/readyz over TLS with the kubeconfig's client certificate" "no openssl"
	test_skip "a redirect from https to http is refused; from https to https it is followed" "no openssl"
fi

test_done
