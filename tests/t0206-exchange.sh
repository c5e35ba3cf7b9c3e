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
# joiner 10-join: keep what was handed to this node.
printf '%s\n' "${PROVISION_SET_join_command:-none}" >/root/t0206-joined
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

test_case "a word a hostile node sent as ::secret is not hidden in the output" '
	"$PROVISION" logs -i "$TB_INV" node-3 >node-3.log
	expect_grep "kubeadm join said: this node (node-3) joined" node-3.log
'

test_done
