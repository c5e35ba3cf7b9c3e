#!/bin/sh
# tests/demo.sh: provision on a local testbed, as a lab admin would use it.
# Starts test nodes on a private bridge (tests/testbed/testbed.sh: one
# systemd-nspawn node as the control plane, three network-namespace nodes as
# workers, each with its own OpenSSH sshd), shows what `up` would change
# (`plan`), runs `up` (the live TUI on a terminal, plain lines otherwise),
# runs it again (nothing changes), validates with `check`, and removes the
# nodes.  Run as root; `make demo` builds first.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PROVISION=${PROVISION:-$top/build/provision}
TESTBED=$top/tests/testbed/testbed.sh
dir=${PROVISION_DEMO_DIR:-$(mktemp -d /tmp/provision-demo.XXXXXX)}
trap '"$TESTBED" down "$dir/tb" >/dev/null 2>&1; rm -rf "$dir"' EXIT INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (the test nodes need network namespaces)" >&2
	exit 2
fi
step "test nodes: 1 control plane (systemd-nspawn) + 3 workers, own sshd each"
"$TESTBED" up "$dir/tb" --nspawn 1 --chroot 3
inv=$dir/tb/inventory.yaml
"$PROVISION" inventory -i "$inv"

step "provision plan: what up would change (node preparation)"
"$PROVISION" plan -i "$inv" --phases prep | tail -n 30

step "provision up --phases prep"
"$PROVISION" up -i "$inv" --phases prep

step "provision up again: nothing changes"
"$PROVISION" up -i "$inv" --phases prep --no-tui | tail -n 6

step "provision run: an ad-hoc command, grouped"
"$PROVISION" run -i "$inv" --group -- 'grep -c SystemdCgroup /etc/containerd/config.toml'

step "provision check: node-level validations (no Kubernetes on these nodes yet)"
"$PROVISION" check -i "$inv" --no-tui || true
step "done: the test nodes are removed"
