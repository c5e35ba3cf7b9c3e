#!/bin/sh
# t0001: the command line: help, version, usage errors, exit codes, and the
# man page and bash completion kept in step with the command table.
. "$(dirname "$0")/lib.sh"

man="$SRC_ROOT/doc/provision.1"
completion="$SRC_ROOT/contrib/completion/provision.bash"

# The commands, read from the binary's own --help (generated from cmd_table).
commands=$("$PROVISION" --help | sed -n '/^commands:/,/^$/p' | awk 'NR>1 && NF {print $1}')

test_case "--help lists commands and exit codes" '
	"$PROVISION" --help >out
	expect_grep "^commands:" out
	expect_grep "^exit status:" out
	expect_grep "  2    bad usage or invalid input" out
	[ -n "$commands" ]
'

test_case "--version prints the version from VERSION" '
	"$PROVISION" --version >out
	expect_eq "provision $(cat "$SRC_ROOT/VERSION")" "$(cat out)" version
'

test_case "no command is a usage error (exit 2)" '
	expect_status 2 "$PROVISION" 2>err
	expect_grep "missing command" err
'

test_case "an unknown command suggests the nearest (exit 2)" '
	expect_status 2 "$PROVISION" inventroy 2>err
	expect_grep "did you mean .inventory." err
'

test_case "an unknown option is a usage error naming it (exit 2)" '
	expect_status 2 "$PROVISION" inventory --bogus 2>err
	expect_grep "unknown option .--bogus." err
	expect_grep "^usage: provision inventory" err
'

test_case "a bad choice value names the choices (exit 2)" '
	expect_status 2 "$PROVISION" inventory -i x.yaml -o yaml 2>err
	expect_grep "text|json" err
'

test_case "an integer option out of range is rejected (exit 2)" '
	expect_status 2 "$PROVISION" run -i x.yaml --forks 0 -- true 2>err
	expect_grep "from 1 to" err
'

# man_has CMD OPTS: the man page documents the command and each option
# (roff escapes every "-" as "\-").
man_has() {
	cmd_esc=$(printf '%s' "$1" | sed 's/-/\\\\-/g')
	grep -q "^\.B $cmd_esc\( \|$\)" "$man" || { echo "command $1 missing from provision.1"; return 1; }
	for o in $2; do
		esc=$(printf '%s' "$o" | sed 's/-/\\-/g')
		grep -qF -- "$esc" "$man" || { echo "option $o of $1 missing from provision.1"; return 1; }
	done
}

# completion_has CMD OPTS: the completion lists the command and each option.
completion_has() {
	grep -q "commands=\".*\b$1\b" "$completion" || { echo "command $1 missing from completion"; return 1; }
	# The opts= line under the case label that names the command ("up|plan)").
	line=$(awk -v c="$1" '
		/^\t[-a-z|]+\)$/ { lab = substr($0, 2, length($0) - 2); n = split(lab, a, "|"); hit = 0
			for (i = 1; i <= n; i++) if (a[i] == c) hit = 1; next }
		hit && /opts=/ { print; hit = 0 }' "$completion")
	[ -n "$line" ] || { echo "no options listed for $1 in completion"; return 1; }
	for o in $2; do
		[ "$o" = -h ] && continue
		printf '%s\n' "$line" | grep -qE -- "[ \"]$o( |\"|$)" || { echo "option $o of $1 missing from completion"; return 1; }
	done
}

for c in $commands; do
	# Every option of the command, from its --help (read by the test bodies).
	# shellcheck disable=SC2034
	opts=$("$PROVISION" "$c" --help | sed -n '/^options:/,/^$/p' |
		grep -oE -- '(^|[ ,])--?[A-Za-z][-A-Za-z]*' | tr -d ' ,' | sort -u | tr '\n' ' ')
	test_case "'$c --help' shows usage, options and exit status" '
		"$PROVISION" "$c" --help >out
		expect_grep "^usage: provision $c " out
		expect_grep "^options:" out
		expect_grep "^exit status:" out
	'
	test_case "man page documents '$c' and all its options" 'man_has "$c" "$opts"'
	test_case "bash completion knows '$c' and all its options" 'completion_has "$c" "$opts"'
done

test_case "completion lists no command the binary lacks" '
	listed=$(sed -n "s/.*local commands=\"\(.*\)\"/\1/p" "$completion")
	for c in $listed; do
		printf "%s\n" $commands | grep -qx "$c" || { echo "completion lists unknown command $c"; exit 1; }
	done
'

test_case "bash completion script loads and completes commands" '
	bash -c ". \"$completion\"; COMP_WORDS=(provision in); COMP_CWORD=1; _provision; printf \"%s\n\" \"\${COMPREPLY[@]}\"" >out
	expect_grep "^inventory$" out
'

test_case "man page renders without warnings" '
	if command -v groff >/dev/null 2>&1; then
		groff -man -Tutf8 -ww -z "$man" 2>warn
		[ ! -s warn ] || { cat warn; exit 1; }
	else
		grep -q "^\.TH PROVISION 1" "$man"
	fi
'

# Several control planes (issue 36): what add-node, remove-node and reset
# refuse before any node is contacted (the addresses answer nothing: a
# command that went on would fail with exit 1, not 2).
cat >"$TEST_DIR/ha.yaml" <<'EOF'
cluster:
  name: ha
  kubernetes_version: "1.30.4"
  api_endpoint:
    vip: 198.18.250.50
ssh:
  user: admin
jupyterhub:
  enabled: false
nodes:
  - name: cp-[1-3]
    address: 198.18.250.[11-13]
    roles: [control-plane, worker]
  - name: w-1
    address: 198.18.250.21
    roles: [worker]
EOF
export HA="$TEST_DIR/ha.yaml"

test_case "several control planes: remove-node of the first refused with the reason (exit 2)" '
	expect_status 2 "$PROVISION" remove-node -i "$HA" --yes --no-tui cp-1 >out 2>err
	expect_grep "^provision remove-node: .cp-1. is the first control plane: it runs what acts on the whole cluster (join tokens, add-ons, the hub, this removal); remove-node removes the other control planes, workers and storage nodes; nothing was changed\$" err
'

# The same with the hub: its node (by default the second control plane,
# else jupyterhub.node) holds the hub's database.
sed -e 's/^jupyterhub:$/storage:\n  nfs:\n    server: w-1\njupyterhub:\n  admin_users: [lab-admin]/' \
	-e '/^  enabled: false$/d' -e 's/^    roles: \[worker\]$/    roles: [worker, nfs-server]/' "$HA" >"$TEST_DIR/ha-hub.yaml"
sed 's/^  admin_users: \[lab-admin\]$/&\n  node: cp-3/' "$TEST_DIR/ha-hub.yaml" >"$TEST_DIR/ha-hub3.yaml"
export HA_HUB="$TEST_DIR/ha-hub.yaml" HA_HUB3="$TEST_DIR/ha-hub3.yaml"

test_case "several control planes with the hub: remove-node of the hub's node refused with the reason and the way to move it (exit 2)" '
	expect_status 2 "$PROVISION" remove-node -i "$HA_HUB" --yes --no-tui cp-2 >out 2>err
	expect_grep "^provision remove-node: .cp-2. runs the hub and holds its database (jupyterhub.node, by default): removed, the hub would start elsewhere with an empty database (its users and sign-ups lost); nothing was changed\$" err
	expect_grep "hint: move the hub first: stop it (kubectl -n jhub scale deployment hub --replicas=0), copy /var/lib/provision/jupyterhub/jupyterhub.sqlite from .cp-2. to the same folder of another control plane (owner 1000, mode 0600), set jupyterhub.node to that one, run .provision up., then remove .cp-2.\$" err
	expect_status 2 "$PROVISION" remove-node -i "$HA_HUB3" --yes --no-tui cp-3 >out 2>err
	expect_grep "^provision remove-node: .cp-3. runs the hub and holds its database (jupyterhub.node): removed" err
	"$PROVISION" inventory -i "$HA_HUB3" >show 2>&1
	expect_grep "^  node  *cp-3 (the hub and its database)\$" show
'

test_case "several control planes: add-node of the first refused with the reason (exit 2)" '
	expect_status 2 "$PROVISION" add-node -i "$HA" --no-tui cp-1 >out 2>err
	expect_grep "^provision add-node: .cp-1. is the first control plane: it makes the cluster (kubeadm init)" err
'

test_case "several control planes: reset -l of a part of them refused (exit 2)" '
	expect_status 2 "$PROVISION" reset -i "$HA" --yes --no-tui -l cp-3,w-1 >out 2>err
	expect_grep "^provision reset: -l cp-3,w-1 takes 1 of the 3 control planes: reset takes every control plane (the whole cluster) or none; nothing was changed\$" err
	expect_grep "hint: provision remove-node -i .* NAME takes one control plane out" err
'

test_done
