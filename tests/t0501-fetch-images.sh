#!/bin/sh
# t0501-fetch-images: `provision fetch --images` (the offline bundle) against
# real registries on this machine's loopback (tests/registry: Debian's
# docker-registry, distribution 2.8, images made by mkimage.py; front.py
# for the 429 a real registry never gives; tests/tools/token-registry.py for
# the bearer-token flow of public registries), reached through the
# inventory's cluster.registries as the nodes reach them: which node needs
# which image (--list), every blob verified by digest and stored by it, a
# second fetch that downloads nothing, an OCI index resolved to the node's
# platform and an image for another platform refused, token
# authentication (the token in no output), a registry that sends a blob
# whose bytes are not its digest (refused, nothing kept), one that sends
# more than the manifest's size (stopped there, nothing kept), an https
# registry whose token service is plain http:// (refused: no credentials
# down to http), a tag that does not exist, 429 with its Retry-After, 401
# without and with credentials; then the archive a node imports
# (tests/tools/oci) as tar sees it.
# About 5 s (15 s when the images and the CA are made first).
# shellcheck disable=SC2016 # test bodies are single-quoted: lib.sh evaluates them
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3 sha256sum tar
command -v docker-registry >/dev/null 2>&1 || test_skip_all "needs docker-registry (make deps)"
# shellcheck source=tests/registry/lib.sh
. "$SRC_ROOT/tests/registry/lib.sh"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

# shellcheck disable=SC2034 # used in the test bodies
OCI=$BUILD/tests/tools/oci
CACHE=$TEST_DIR/cache
ROLES=$TEST_DIR/roles
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
P_LAB=$(free_port) P_TOKEN=$(free_port) P_429=$(free_port) P_AUTH=$(free_port) P_BAD=$(free_port)
P_TLS=$(free_port)

registry_start lab "127.0.0.1:$P_LAB" || exit 1
registry_push lab lab/small:v1 --layer 64k --seed small >/dev/null || exit 1
registry_push lab lab/indexed:v1 --layer 32k --layer 32k --index --seed indexed >/dev/null || exit 1
registry_push lab lab/tokened:v1 --layer 24k --seed tokened >/dev/null || exit 1
python3 "$SRC_ROOT/tests/tools/token-registry.py" "127.0.0.1:$P_TOKEN" "http://127.0.0.1:$P_LAB" --lifetime 300 \
	>"$TEST_DIR/token.log" 2>&1 &
test_at_exit "kill $!"
python3 "$SRC_ROOT/tests/tools/token-registry.py" "127.0.0.1:$P_BAD" "http://127.0.0.1:$P_LAB" --corrupt --lifetime 300 \
	>"$TEST_DIR/corrupt.log" 2>&1 &
test_at_exit "kill $!"
mkdir -p "$REGISTRY_DIR/tls-front"
_registry_cert tls-front 127.0.0.1 || exit 1
CA=$(registry_ca)
python3 "$SRC_ROOT/tests/tools/token-registry.py" "127.0.0.1:$P_TLS" "http://127.0.0.1:$P_LAB" --lifetime 300 \
	--tls "$REGISTRY_DIR/tls-front/server.crt" "$REGISTRY_DIR/tls-front/server.key" \
	--realm "http://127.0.0.1:$P_TOKEN/token" >"$TEST_DIR/tls.log" 2>&1 &
test_at_exit "kill $!"
front_start refuse "127.0.0.1:$P_429" 429 120 || exit 1
printf 'a-registry-password\n' >"$TEST_DIR/pw"
chmod 600 "$TEST_DIR/pw"
registry_start auth "127.0.0.1:$P_AUTH" --htpasswd lab "$TEST_DIR/pw" || exit 1
python3 "$REGISTRY_LIB_DIR/mkimage.py" push "http://127.0.0.1:$P_AUTH" lab/private:v1 --layer 16k --seed private \
	--user lab --password-file "$TEST_DIR/pw" >/dev/null || exit 1
i=0
until grep -q listening "$TEST_DIR/token.log" && grep -q listening "$TEST_DIR/corrupt.log" &&
	grep -q listening "$TEST_DIR/tls.log"; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || { cat "$TEST_DIR/token.log"; exit 1; }
	sleep 0.1
done

# A roles folder with one role whose workloads run the test's images.
mkdir -p "$ROLES/app/steps"
cp "$SRC_ROOT/roles/lib.sh" "$ROLES/"
printf 'case $1 in *) exit 0 ;; esac\n' >"$ROLES/app/steps/10-noop.sh"
app_images() { # REF:ON...
	{
		echo "description: test role of t0501 (images only)"
		echo "phase: prep"
		echo "images:"
		for x in "$@"; do
			echo "  - {ref: \"${x%@*}\", on: ${x#*@}}"
		done
	} >"$ROLES/app/role.yaml"
}
# INV: the lab's nodes (amd64, and one arm64 with ARM=1), its registries mirrored here
inventory() { # [extra registry lines]
	{
		cat <<-EOF
			cluster:
			  name: t0501
			  kubernetes_version: "1.36.4"
			  registries:
			    registry.k8s.io:
			      mirrors: [{url: "http://127.0.0.1:$P_LAB"}]
			      upstream: false
			    quay.io:
			      mirrors: [{url: "http://127.0.0.1:$P_TOKEN"}]
			      upstream: false
			    ghcr.io:
			      mirrors: [{url: "http://127.0.0.1:$P_429"}]
			      upstream: false
			    nvcr.io:
			      mirrors: [{url: "http://127.0.0.1:$P_AUTH"$*}]
			      upstream: false
			    docker.io:
			      mirrors: [{url: "http://127.0.0.1:$P_BAD"}]
			      upstream: false
			    lab.example.com:
			      mirrors: [{url: "https://127.0.0.1:$P_TLS", ca_file: "$CA", username: lab, password_file: "$TEST_DIR/pw"}]
			      upstream: false
			ssh: {user: admin}
			jupyterhub: {enabled: false}
			nodes:
			  - {name: cp, address: 198.18.0.10, roles: [control-plane]}
			  - {name: w1, address: 198.18.0.11, roles: [worker]}
		EOF
		[ -z "${ARM:-}" ] || echo "  - {name: w2, address: 198.18.0.12, roles: [worker], arch: arm64}"
	} >"$TEST_DIR/inv.yaml"
}
fetch() {
	"$PROVISION" fetch -i "$TEST_DIR/inv.yaml" --roles "$ROLES" --cache "$CACHE" --state "$TEST_DIR/state" "$@"
}
blob_gets() { # how many blob GETs registry lab answered
	grep -c '"GET /v2/[^ ]*/blobs/sha256:' "$(registry_log lab)" || true
}

test_case "--list: which node runs which image for which platform, fetching nothing" '
	app_images "registry.k8s.io/lab/small:v1@cluster" "registry.k8s.io/lab/indexed:v1@workers"
	inventory
	fetch --images --list >list.out 2>list.err
	cat list.out
	expect_grep "^registry.k8s.io/lab/small:v1	linux/amd64	cp,w1	not in the bundle$" list.out
	expect_grep "^registry.k8s.io/lab/indexed:v1	linux/amd64	w1	not in the bundle$" list.out
	[ "$(blob_gets)" = 0 ]
	[ ! -d "$CACHE/images" ]
'

test_case "fetch --images: each image through the registry the inventory names, every blob verified and stored by its digest, the bundle listed" '
	fetch --images >out 2>err
	cat out err
	expect_grep "^registry.k8s.io/lab/small:v1	linux/amd64	[0-9.]* kB	fetched from http://127.0.0.1:$P_LAB	cp,w1$" out
	expect_grep "^registry.k8s.io/lab/indexed:v1	linux/amd64	[0-9.]* kB	fetched from http://127.0.0.1:$P_LAB	w1$" out
	expect_grep "^images of .t0501.: 2 in $CACHE/images" out
	n=0
	for f in "$CACHE"/images/blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -c1-64)" = "${f##*/}" ] || { echo "$f is not its digest"; false; }
		n=$((n + 1))
	done
	# small: manifest, config, layer; indexed: manifest, config, two layers (the index is not kept)
	[ "$n" = 7 ]
	ls "$CACHE"/images/blobs/sha256/ | grep -q partial && false || true
	fetch --images --list >list.out
	expect_grep "cp,w1	in the bundle$" list.out
'

test_case "a second fetch downloads nothing" '
	before=$(blob_gets)
	fetch --images >out 2>err
	expect_grep "^registry.k8s.io/lab/small:v1	linux/amd64	.*	already in the bundle, verified	cp,w1$" out
	expect_grep ", 0 fetched now$" out
	[ "$(blob_gets)" = "$before" ]
'

test_case "an arm64 node: an index without linux/arm64, and a single-platform amd64 image, are refused for it (exit 1), the amd64 nodes served" '
	ARM=1 inventory
	app_images "registry.k8s.io/lab/small:v1@cluster" "registry.k8s.io/lab/indexed:v1@workers"
	fetch --images >out 2>err && rc=0 || rc=$?
	cat err
	[ "$rc" = 1 ]
	expect_grep "cannot fetch registry.k8s.io/lab/indexed:v1 (linux/arm64, for w2): no linux/arm64 image in its index" err
	expect_grep "cannot fetch registry.k8s.io/lab/small:v1 (linux/arm64, for w2): the image is for linux/amd64, not linux/arm64" err
	expect_grep "^registry.k8s.io/lab/small:v1	linux/amd64	.*	cp,w1$" out
'

test_case "token authentication (WWW-Authenticate: Bearer): the token asked for once and used, in no output" '
	inventory
	app_images "quay.io/lab/tokened:v1@cluster"
	fetch --images >out 2>err
	cat out err "$TEST_DIR/token.log"
	expect_grep "^quay.io/lab/tokened:v1	linux/amd64	.*	fetched from http://127.0.0.1:$P_TOKEN	cp,w1$" out
	grep -q "token-front 401 GET /v2/lab/tokened/manifests/v1 none" "$TEST_DIR/token.log"
	[ "$(grep -c "token-request" "$TEST_DIR/token.log")" = 1 ]
	grep -q "token-front 200 GET /v2/lab/tokened/manifests/v1 bearer" "$TEST_DIR/token.log"
	grep -q "token-front 200 GET /v2/lab/tokened/blobs/sha256:[0-9a-f]* bearer" "$TEST_DIR/token.log"
	! grep -rq provision-test-token out err "$CACHE"
'

test_case "a registry whose blob is not what its digest says: refused with both digests, nothing kept under the name" '
	app_images "docker.io/lab/tampered:v1@cluster"
	registry_push lab lab/tampered:v1 --layer 48k --seed tampered >/dev/null
	fetch --images >out 2>err && rc=0 || rc=$?
	cat err
	[ "$rc" = 1 ]
	expect_grep "cannot fetch docker.io/lab/tampered:v1 (linux/amd64, for cp,w1): http://127.0.0.1:$P_BAD: blob sha256:[0-9a-f]*: what came hashes to sha256:[0-9a-f]* (refused)" err
	! ls "$CACHE"/images/blobs/sha256/ | grep -q partial
	for f in "$CACHE"/images/blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -c1-64)" = "${f##*/}" ] || { echo "$f is not its digest"; false; }
	done
'

test_case "a registry that sends more than the manifest says a blob is: stopped at that size, nothing kept" '
	app_images "docker.io/lab/padded-long:v1@cluster"
	registry_push lab lab/padded-long:v1 --layer 48k --seed padded >/dev/null
	fetch --images >out 2>err && rc=0 || rc=$?
	cat err
	[ "$rc" = 1 ]
	expect_grep "cannot fetch docker.io/lab/padded-long:v1 (linux/amd64, for cp,w1): .http://127.0.0.1:$P_BAD/v2/lab/padded-long/blobs/sha256:[0-9a-f]*.: more than the [0-9]* bytes expected" err
	! ls "$CACHE"/images/blobs/sha256/ | grep -q partial
	for f in "$CACHE"/images/blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -c1-64)" = "${f##*/}" ] || { echo "$f is not its digest"; false; }
	done
'

test_case "an https registry whose token service is plain http://: refused, no credentials sent down to http" '
	app_images "lab.example.com/lab/tokened:v1@cluster"
	before=$(grep -c "token-request" "$TEST_DIR/token.log")
	fetch --images >out 2>err && rc=0 || rc=$?
	cat err
	[ "$rc" = 1 ]
	grep -q "token-front 401 GET /v2/lab/tokened/manifests/v1 none" "$TEST_DIR/tls.log"
	expect_grep "cannot fetch lab.example.com/lab/tokened:v1 (linux/amd64, for cp,w1): unauthorized (HTTP 401): https://127.0.0.1:$P_TLS sends for its token to a plain http:// realm (refused)" err
	[ "$(grep -c "token-request" "$TEST_DIR/token.log")" = "$before" ]
'

test_case "a tag that does not exist: not found, at which registry" '
	app_images "registry.k8s.io/lab/small:nope@cluster"
	fetch --images >out 2>err && rc=0 || rc=$?
	[ "$rc" = 1 ]
	expect_grep "cannot fetch registry.k8s.io/lab/small:nope (linux/amd64, for cp,w1): not found: http://127.0.0.1:$P_LAB has no manifest registry.k8s.io/lab/small:nope" err
'

test_case "429 Too Many Requests: said with the registry's Retry-After" '
	app_images "ghcr.io/lab/small:v1@cluster"
	fetch --images >out 2>err && rc=0 || rc=$?
	[ "$rc" = 1 ]
	expect_grep "cannot fetch ghcr.io/lab/small:v1 (linux/amd64, for cp,w1): rate limited (HTTP 429 Too Many Requests) at http://127.0.0.1:$P_429, retry after 120 s" err
'

test_case "401 (basic auth): unauthorized without credentials; fetched with username and password_file" '
	app_images "nvcr.io/lab/private:v1@cluster"
	fetch --images >out 2>err && rc=0 || rc=$?
	[ "$rc" = 1 ]
	expect_grep "cannot fetch nvcr.io/lab/private:v1 (linux/amd64, for cp,w1): unauthorized (HTTP 401): the registry wants credentials" err
	inventory ", username: lab, password_file: $TEST_DIR/pw"
	fetch --images >out 2>err
	expect_grep "^nvcr.io/lab/private:v1	linux/amd64	.*	fetched from http://127.0.0.1:$P_AUTH	cp,w1$" out
	! grep -rq a-registry-password out err "$CACHE"
'

test_case "the archive a node imports: an OCI image layout (oci-layout, index.json naming the image, the manifest, config and layers by digest), its size said beforehand" '
	"$OCI" archive "$CACHE" registry.k8s.io/lab/indexed:v1 amd64 >img.tar
	[ "$(wc -c <img.tar)" = "$("$OCI" size "$CACHE" registry.k8s.io/lab/indexed:v1 amd64)" ]
	tar -tf img.tar >members
	cat members
	[ "$(sed -n 1p members)" = oci-layout ]
	[ "$(sed -n 2p members)" = index.json ]
	[ "$(grep -c "^blobs/sha256/[0-9a-f]\{64\}$" members)" = 4 ]
	tar -xOf img.tar index.json | grep -q "\"io.containerd.image.name\":\"registry.k8s.io/lab/indexed:v1\""
	tar -xf img.tar
	for f in blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -c1-64)" = "${f##*/}" ]
	done
'

test_done
