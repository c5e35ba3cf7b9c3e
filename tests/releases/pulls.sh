#!/bin/sh
# tests/releases/pulls.sh MERGED DIR: node.sh's THEN for t0270's pull case.
# Runs inside the node's namespaces once its containerd answers: a real
# registry (the upstream, serving DIR/pulls.env's REG_ROOT read-only), a
# real pull-through mirror of it (distribution's proxy.remoteurl) and a real
# proxy (squid), on addresses of the node's own loopback (198.18.255.1-3:
# not 127.0.0.0/8, which Go never sends through a proxy), then the node's
# own ctr pulls through the hosts.toml and proxy environment provision
# wrote (DIR/ctr.env: what roles/lib.sh pv_registry_env exports):
#   1. 198.18.255.1:5000/provision-test/small:1  with the mirror up
#   2. the mirror stopped, 198.18.255.1:5000/provision-test/small:2
# Results into DIR: pull-N.out/status, images.txt, and the logs of the
# three servers (upstream.log, mirror.log, proxy.log).  Every process it
# starts dies with the node's PID namespace.
set -u
m=$1 d=$2
# shellcheck disable=SC1091 # written by t0270
. "$d/pulls.env"
for a in 198.18.255.1 198.18.255.2 198.18.255.3; do ip addr add "$a/32" dev lo; done
# what tests/registry/lib.sh needs of tests/lib.sh
TEST_DIR=$d/pulls
mkdir -p "$TEST_DIR"
test_at_exit() { :; }
# shellcheck source=tests/registry/lib.sh
. "$SRC_ROOT/tests/registry/lib.sh"
registry_start upstream 198.18.255.1:5000 --root "$REG_ROOT" || exit 1
registry_start mirror 198.18.255.2:5000 --htpasswd lab "$MIRROR_PASSWORD" --mirror-of http://198.18.255.1:5000 || exit 1
proxy_start 198.18.255.3:3128 || exit 1

pull() { # TAG
	t0=$(date +%s%N)
	# shellcheck disable=SC2046 # NAME=VALUE words without blanks
	chroot "$m" env $(cat "$d/ctr.env") ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d \
		"198.18.255.1:5000/provision-test/small:$1" >"$d/pull-$1.out" 2>&1
	echo "$? $((($(date +%s%N) - t0) / 1000000))" >"$d/pull-$1.status"
}
pull 1
registry_stop mirror
pull 2
chroot "$m" ctr -n k8s.io images ls >"$d/images.txt" 2>&1
cp "$(registry_log upstream)" "$d/upstream.log"
cp "$(registry_log mirror)" "$d/mirror.log"
cp "$(proxy_log)" "$d/proxy.log"
