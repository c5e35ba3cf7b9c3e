#!/bin/sh
# tests/bench/eta.sh [ROUNDS]: provision up's estimate against its real time
# (issue 22), on one node that is this machine through a real sshd on
# loopback (tests/lib-sshd.sh: nothing on the host changes but the test's
# own folder).  The roles are the bench's own: four steps whose check takes
# 0.3 s and whose apply takes 2 s the first time (they leave a file in the
# test's folder), so the first run does work and the next ones only check.
# Each round: a first run (files removed), a second run that changes
# nothing, a third with one step to do again.  Prints estimate, actual and
# the error of each run; never fails on time.
rounds=${1:-2}
BUILD_DIR=${BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/lib-sshd.sh
. "$(dirname "$0")/../lib-sshd.sh"
sshd_need
sshd_start a || exit 1
sshd_known_hosts a "$TEST_DIR/known_hosts"
mkdir -p "$TEST_DIR/roles/bench-eta/steps" "$TEST_DIR/marks"
cp "$(dirname "$0")/../../roles/lib.sh" "$TEST_DIR/roles/"
printf 'description: four steps, check 0.3 s, apply 2 s (tests/bench/eta.sh)\nphase: prep\n' \
	>"$TEST_DIR/roles/bench-eta/role.yaml"
for k in 1 2 3 4; do
	cat >"$TEST_DIR/roles/bench-eta/steps/${k}0-step.sh" <<EOS
case \${1:-} in
check) sleep 0.3; [ -f '$TEST_DIR/marks/$k' ] ;;
apply) sleep 2; touch '$TEST_DIR/marks/$k' ;;
*) exit 2 ;;
esac
EOS
done
cat >"$TEST_DIR/inv.yaml" <<EOF
cluster:
  name: bench
  kubernetes_version: "1.30.4"
ssh:
  user: root
  port: $(sshd_port a)
  identity: $SSHD_KEY
  known_hosts: $TEST_DIR/known_hosts
jupyterhub:
  enabled: false
nodes:
  - name: self
    address: 127.0.0.1
    roles: [control-plane]
EOF
# up KIND: one run; prints "KIND estimate actual error"
up() {
	"$PROVISION" up -i "$TEST_DIR/inv.yaml" --roles "$TEST_DIR/roles" --phases prep --no-tui \
		>"$TEST_DIR/$1.log" 2>&1 || :
	sed -nE "s/^up bench: took ([^,]*), estimated ([^ ]*) \(([-+][0-9]+%)\)$/\2 \1 \3/p" "$TEST_DIR/$1.log" |
		awk -v k="$1" '{ printf "%-9s %9s %9s %7s\n", k, $1, $2, $3; n++ } END { if (!n) printf "%-9s %9s\n", k, "(none)" }'
}
printf '%-9s %9s %9s %7s\n' run estimate actual error
r=0
while [ "$r" -lt "$rounds" ]; do
	rm -f "$TEST_DIR"/marks/*
	up first
	up second
	rm -f "$TEST_DIR/marks/3"
	up one-step
	r=$((r + 1))
done
