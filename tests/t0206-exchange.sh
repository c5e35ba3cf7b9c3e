#!/bin/sh
# t0206-exchange: a hostile node cannot hand values it has no right to
# (issue 19, finding 1; provision/exchange.h).  Three chroot nodes over real
# SSH; roles of this test only: `tokens` on the control plane hands a join
# command for node-3 (declared: to node), `gossip` runs everywhere after it,
# and node-2's gossip step also prints a join command for node-3 and a
# ::secret of its own; `joiner` on the workers comes after gossip and keeps
# the join command it read.  Before the exchange node-3 read node-2's
# command (the last writer won run-wide); now node-2's step fails as a
# protocol violation and node-3 reads the control plane's.
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$SRC_ROOT/tests/lib-testbed.sh"

tb_up --chroot 3

R=$TEST_DIR/roles
mkdir -p "$R/tokens/steps" "$R/gossip/steps" "$R/joiner/steps"
cp "$SRC_ROOT/roles/lib.sh" "$R/"
cat >"$R/tokens/role.yaml" <<'EOF'
description: t0206 - a join command for node-3 alone, made on the control plane
phase: prep
applies_to: [control-plane]
hands:
  - {name: join_command, secret: true, to: node}
EOF
cat >"$R/tokens/steps/10-tokens.sh" <<'EOF'
# tokens 10-tokens: the control plane's join command for node-3.
echo "::secret join_command@node-3=kubeadm join $PROVISION_ADDRESS:6443 --token good.t0206good"
exit 0
EOF
cat >"$R/gossip/role.yaml" <<'EOF'
description: t0206 - every node after tokens; node-2 is hostile here
phase: prep
wait_for: [tokens]
EOF
cat >"$R/gossip/steps/10-gossip.sh" <<'EOF'
# gossip 10-gossip: node-2 hands what its role does not declare.
if [ "$PROVISION_NODE" = node-2 ]; then
	echo "::secret join_command@node-3=kubeadm join 198.18.0.66:6443 --token evil.t0206evil"
	echo "::secret hide=kubeadm join"
fi
exit 0
EOF
cat >"$R/joiner/role.yaml" <<'EOF'
description: t0206 - the workers keep the join command they read
phase: nfs
applies_to: [worker]
depends_on: [tokens]
wait_for: [tokens]
after: [gossip]
EOF
cat >"$R/joiner/steps/10-join.sh" <<'EOF'
# joiner 10-join: keep what was handed to this node; while a child runs,
# look for the secret in every environment and command line of the node.
# /root/t0206-mode (set by the test) ends it otherwise: fail, term (TERM
# to the step's two shells, as the agent's kill of a timeout), kill (KILL:
# nothing on the node can clean up then).
set -eu
cmd=$(pv_secret join_command)
printf '%s\n' "${cmd:-none}" >/root/t0206-joined
if [ -n "$cmd" ]; then
	# the pattern for grep -f: a 0600 file, never an argument
	pat=$(mktemp)
	printf '%s\n' "$cmd" >"$pat"
	T0206_MARK=t0206-child sleep 60 &
	child=$!
	i=0
	until grep -q -a -F T0206_MARK=t0206-child "/proc/$child/environ" 2>/dev/null; do
		[ "$i" -lt 300 ] || break
		sleep 0.1
		i=$((i + 1))
	done
	grep -l -a -F T0206_MARK=t0206-child /proc/[0-9]*/environ >/root/t0206-marks 2>/dev/null || true
	grep -l -a -F -f "$pat" /proc/[0-9]*/environ /proc/[0-9]*/cmdline >/root/t0206-leaks 2>/dev/null || true
	kill "$child"
	rm -f "$pat"
	stat -c '%a %n' "$PROVISION_SECRETS" "$PROVISION_SECRETS"/* >/root/t0206-files
fi
mode=$(cat /root/t0206-mode 2>/dev/null || true)
case $mode in
fail) exit 3 ;;
term | kill)
	# this shell and its parent, the one that made the folder
	read -r pid _ _ ppid _ </proc/self/stat
	[ "$mode" = term ] && sig=TERM || sig=KILL
	kill -s "$sig" "$ppid" "$pid"
	;;
esac
echo "kubeadm join said: this node ($PROVISION_NODE) joined"
exit 0
EOF

test_case "a node's undeclared hand-over fails its step; the joining node reads the control plane's command" '
	expect_status 1 "$PROVISION" up -i "$TB_INV" --roles "$R" --phases prep,nfs --no-tui >up.out 2>&1
	expect_grep "protocol violation by node .node-2. in gossip › 10-gossip: .join_command. is not a value role .gossip. hands" up.out
	tb exec "$TB" node-3 cat /root/t0206-joined >joined
	expect_grep "^kubeadm join .*:6443 --token good.t0206good\$" joined
	if grep -q evil joined; then cat joined; false; fi
	tb exec "$TB" node-1 sh -c "test ! -e /root/t0206-joined"
'

test_case "a handed secret is in no process environment or command line of the node during the step" '
	tb exec "$TB" node-3 cat /root/t0206-marks >marks
	tb exec "$TB" node-3 cat /root/t0206-leaks >leaks
	# the scan reads the environment of the step'"'"'s child ...
	expect_grep "^/proc/[0-9]*/environ\$" marks
	# ... and finds the secret in none, nor in a command line
	if [ -s leaks ]; then cat leaks; false; fi
'

test_case "the secret was a 0600 file in a 0700 folder, gone after the step" '
	tb exec "$TB" node-3 cat /root/t0206-files >files
	expect_grep "^700 /run/provision/secrets/[0-9]*\.[A-Za-z0-9]*\$" files
	expect_grep "^600 /run/provision/secrets/[0-9]*\.[A-Za-z0-9]*/join_command\$" files
	expect_eq 2 "$(wc -l <files)" "stat lines"
	tb exec "$TB" node-3 ls -A /run/provision/secrets >left
	if [ -s left ]; then cat left; false; fi
'

# up_mode MODE: the run again, node-3's joiner ending as MODE says; the
# folder its step had in dir-MODE.
up_mode() {
	tb exec "$TB" node-3 sh -c "printf %s $1 >/root/t0206-mode && rm -f /root/t0206-files"
	expect_status 1 "$PROVISION" up -i "$TB_INV" --roles "$R" --phases prep,nfs --no-tui >"up-$1.out" 2>&1
	tb exec "$TB" node-3 cat /root/t0206-files >"files-$1"
	sed -n "s,^700 \(/run/provision/secrets/.*\),\1,p" "files-$1" >"dir-$1"
	expect_eq 1 "$(wc -l <"dir-$1")" "folders of the step"
}

test_case "the folder is gone when the step fails and when a timeout's TERM ends it" '
	for m in fail term; do
		up_mode $m
		tb exec "$TB" node-3 sh -c "test ! -e \"\$1\" && ls -A /run/provision/secrets" sh "$(cat dir-$m)" >left
		if [ -s left ]; then cat left; false; fi
	done
'

test_case "a folder a KILL left behind is removed by the node's next step" '
	up_mode kill
	tb exec "$TB" node-3 sh -c "test -d \"\$1\"" sh "$(cat dir-kill)"
	tb exec "$TB" node-3 rm -f /root/t0206-mode
	expect_status 1 "$PROVISION" up -i "$TB_INV" --roles "$R" --phases prep,nfs --no-tui >up-again.out 2>&1
	tb exec "$TB" node-3 sh -c "test ! -e \"\$1\" && ls -A /run/provision/secrets" sh "$(cat dir-kill)" >left
	if [ -s left ]; then cat left; false; fi
'

test_case "a word a hostile node sent as ::secret is not hidden in the output" '
	"$PROVISION" logs -i "$TB_INV" node-3 >node-3.log
	expect_grep "kubeadm join said: this node (node-3) joined" node-3.log
'

test_done
