#!/bin/sh
# t0121-invalid-no-login: bad input never reaches a node.
#   - Every invalid inventory derived from a live testbed's own inventory
#     (its nodes answer on real sshd) makes up, plan, check, status, run and
#     add-node exit 2 naming file:line:col, and no node's sshd logs a login.
#   - Every invalid case of tests/inventory (the ones whose .expected says
#     exit 2), given to `up` and `check`, exits 2 without one network
#     connect() (strace -f: no AF_INET/AF_INET6 connect at all).
# The good inventory and a broken role (t0201 covers role and template
# cases one by one) are the controls: the same checks can fail.
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016,SC2034
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$SRC_ROOT/tests/lib-testbed.sh"

tb_up --chroot 2

# logins: the login counts of both nodes, "N M".
logins() {
	echo "$(tb_logins node-1) $(tb_logins node-2)"
}

# commands INV: every command that takes an inventory, one per line.
commands() {
	cat <<EOF
up -i $1 --roles $SRC_ROOT/roles --no-tui
plan -i $1 --roles $SRC_ROOT/roles --no-tui
check -i $1
status -i $1 --no-tui
run -i $1 -- true
add-node -i $1 --no-tui node-2
EOF
}

# mutate NAME SED-SCRIPT: the testbed inventory with one error, as NAME.yaml.
mutate() {
	sed "$2" "$TB_INV" >"$1.yaml"
	if cmp -s "$1.yaml" "$TB_INV"; then
		echo "mutation $1 changed nothing"
		return 1
	fi
}

MUTATIONS='unknown-key|s/^  - name: node-2$/  - name: node-2\n    adress: x/
bad-version|s/^  kubernetes_version: .*/  kubernetes_version: "1.30.4.9"/
tab|s/^    roles: \[worker\]$/\troles: [worker]/
bad-indent|s/^    roles: \[worker\]$/      roles: [worker]/
unclosed-flow|s/^    roles: \[worker\]$/    roles: [worker/
duplicate-name|s/^  - name: node-2$/  - name: node-1/
unknown-role|s/roles: \[worker\]/roles: [wroker]/
wrong-type|s/^  port: 22$/  port: twenty-two/
duplicate-key|s/^  host_keys: strict$/  host_keys: strict\n  host_keys: strict/
no-control-plane|s/roles: \[control-plane\]/roles: [worker]/
bad-address|s/^    address: \(198\.18\.[0-9]*\)\.11$/    address: \1.300/'

test_case "the good inventory logs in (the control: the count can move)" '
	before=$(logins)
	"$PROVISION" run -i "$TB_INV" -- true
	[ "$(logins)" != "$before" ]
'

test_case "11 invalid inventories x 6 commands: exit 2, file:line:col, no login on any node" '
	printf "%s\n" "$MUTATIONS" | while IFS="|" read -r name script; do
		mutate "$name" "$script"
		commands "$name.yaml" | while read -r cmd; do
			before=$(logins)
			set +e
			# shellcheck disable=SC2086 # the command line is a list of words
			"$PROVISION" $cmd </dev/null >out 2>err
			rc=$?
			set -e
			if [ $rc != 2 ] || ! grep -q "^$name.yaml:[0-9]*:[0-9]*: error: " err || [ "$(logins)" != "$before" ]; then
				echo "$name: provision $cmd: exit $rc, logins $before -> $(logins)"
				cat err
				exit 1
			fi
		done
		echo "$name: 6 commands, exit 2, $(grep -m1 ": error: " err)"
	done
'

test_case "a broken role: up and plan exit 2, no login (t0201 has the cases)" '
	cp -R "$SRC_ROOT/roles" r
	printf "dependz_on: [kernel]\n" >>r/containerd/role.yaml
	before=$(logins)
	for cmd in up plan; do
		expect_status 2 "$PROVISION" $cmd -i "$TB_INV" --roles r --no-tui </dev/null 2>err
		expect_grep "^r/containerd/role.yaml:[0-9]*:1: error: unknown key" err
	done
	expect_eq "$before" "$(logins)" "logins"
'

if command -v strace >/dev/null 2>&1; then
	# LeakSanitizer cannot work under ptrace: off for the strace runs of a
	# SANITIZE=address build (no effect on others).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	export ASAN_OPTIONS
	test_case "every invalid case of tests/inventory: up and check exit 2 with no network connect()" '
		n=0
		for exp in "$TESTS_ROOT"/inventory/*.expected; do
			head -n 1 "$exp" | grep -qx "exit 2" || continue
			case=${exp%.expected}.yaml
			for cmd in "up --roles $SRC_ROOT/roles --no-tui" check; do
				set +e
				# shellcheck disable=SC2086 # the command line is a list of words
				strace -f -qq -e trace=connect -o trace "$PROVISION" $cmd -i "$case" </dev/null >out 2>err
				rc=$?
				set -e
				if [ $rc != 2 ] || grep -E "AF_INET6?[,}]" trace; then
					echo "$(basename "$case"): provision $cmd: exit $rc"
					cat err
					exit 1
				fi
			done
			n=$((n + 1))
		done
		echo "$n invalid cases, none connected"
		[ "$n" -gt 50 ]
	'
	test_case "strace sees the connect() of a valid run (the control)" '
		strace -f -qq -e trace=connect -o trace "$PROVISION" run -i "$TB_INV" -l node-1 -- true
		grep -E "AF_INET6?[,}].*htons\(22\)" trace
	'
else
	test_skip "every invalid case of tests/inventory: up and check exit 2 with no network connect()" "needs strace"
	test_skip "strace sees the connect() of a valid run (the control)" "needs strace"
fi

test_done
