#!/bin/sh
# hostile-node.sh: make a testbed node (tests/testbed) misbehave the way a
# broken or compromised lab machine would, for the hostile-node tier
# (issue 19): the node still runs every command provision sends, and adds
# output of its own.
#
#   hostile-node.sh TESTBED-DIR NODE MODE [BYTES]
#
# Run as root on the machine that runs the testbed.  On the node:
#   /etc/provision-hostile        MODE and BYTES
#   /usr/local/bin/provision-hostile
#                                 prints MODE's misbehaviour on its stdout;
#                                 nothing on a node that has no
#                                 /etc/provision-hostile.  A test role's step
#                                 calls it (every node runs the same step; only
#                                 the hostile one misbehaves)
#   /usr/bin/nvidia-smi           (modes smi-* and facts-*) a stand-in that
#                                 answers the facts script's query for one
#                                 RTX 3070, then misbehaves; facts.sh runs it
#                                 as on a GPU machine
# Modes:
#   smi-cr, smi-nel, smi-u2028, smi-esc, smi-nul
#                   the GPU name carries CR / NEL / U+2028 / escape
#                   sequences / a NUL, with a YAML mapping after it (what
#                   would become top-level Helm values in a comment)
#   facts-flood     nvidia-smi writes BYTES (default 1 GiB) of lines straight
#                   into the facts script's output (its parent's stdout)
#   facts-longline  the same, as one line without a newline
#   facts-endless   lines that never end (until the command timeout)
#   flood, longline, endless
#                   the same from provision-hostile, in a step
#   escapes         terminal escapes (OSC title, colours, screen clear, 8-bit
#                   CSI) and a CR that would redraw the line, in a step
#   lines FILE      FILE's lines verbatim, in a step (e.g. protocol lines that
#                   name other nodes: `::set NAME@node-3=...`); FILE is read
#                   on this machine and copied to the node
#   facts-lines FILE
#                   the same, written into the facts script's output
#   fail-escapes    a step's last line with terminal escapes (OSC title, screen
#                   clear, colours, an 8-bit CSI) and a byte that is not UTF-8,
#                   and provision-hostile exits 3 (the test role's step fails
#                   with it): what the summary, the record and diff show
#   sudo-escapes    /usr/local/bin/sudo (first on the login user's PATH) says
#                   that line on stderr and exits 1: sudo's error text
#   cert-escapes    /usr/local/bin/openssl says it on stderr and exits 1, and a
#                   kubelet client certificate is there: the certificate
#                   check's observed value (check, --junit, status)
# Every mode removes the sudo and openssl stand-ins of the others.
# The stand-ins are shell: nothing on the node is built.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TESTBED=$HERE/testbed.sh

die() {
	echo "hostile-node.sh: $*" >&2
	exit 1
}

[ $# -ge 3 ] || die "usage: hostile-node.sh TESTBED-DIR NODE MODE [BYTES|FILE]"
DIR=$1 NODE=$2 MODE=$3 ARG=${4:-}
[ "$(id -u)" = 0 ] || die "needs root"
tb() { "$TESTBED" exec "$DIR" "$NODE" "$@"; }

bytes=1073741824
case $MODE in
smi-cr | smi-nel | smi-u2028 | smi-esc | smi-nul | escapes | fail-escapes | sudo-escapes | \
	cert-escapes) ;;
facts-flood | facts-longline | facts-endless | flood | longline | endless)
	[ -z "$ARG" ] || bytes=$ARG ;;
lines | facts-lines)
	[ -f "$ARG" ] || die "$MODE needs a file"
	tb sh -c 'cat >/etc/provision-hostile.lines' <"$ARG" ;;
*) die "unknown mode '$MODE'" ;;
esac
printf '%s %s\n' "$MODE" "$bytes" | tb sh -c 'cat >/etc/provision-hostile'

# The printer: every mode's misbehaviour, chosen by /etc/provision-hostile.
tb sh -c 'cat >/usr/local/bin/provision-hostile && chmod 0755 /usr/local/bin/provision-hostile' <<'EOF'
#!/bin/sh
# provision-hostile (tests/testbed/hostile-node.sh): this node's misbehaviour
[ -r /etc/provision-hostile ] || exit 0
read -r mode bytes </etc/provision-hostile
line='hostile output hostile output hostile output hostile output hostile output'
case $mode in
flood | facts-flood) yes "$line" | head -c "$bytes" ;;
longline | facts-longline) yes "$line" | tr -d '\n' | head -c "$bytes" ;;
endless | facts-endless) yes "$line" ;;
escapes)
	printf 'title \033]0;pwned\007 red \033[31mRED\033[0m clear \033[2J 8bit \302\23331m end\n'
	printf 'honest line\rforged line\n' ;;
fail-escapes)
	echo "an honest line first"
	printf 'E: \033]0;pwned\007\033[2Jgone \302\23331m red \033[31mRED\033[0m \377 end\n'
	exit 3 ;;
lines | facts-lines) cat /etc/provision-hostile.lines ;;
esac
exit 0
EOF

# Stand-ins of earlier modes go; sudo-escapes and cert-escapes put theirs.
tb sh -c 'for f in /usr/local/bin/sudo /usr/local/bin/openssl; do
	if grep -qs hostile-node.sh "$f"; then rm -f "$f"; fi
done
if [ -f /var/lib/kubelet/pki/.hostile ]; then rm -rf /var/lib/kubelet/pki; fi'
case $MODE in
sudo-escapes | cert-escapes)
	tool=sudo
	if [ "$MODE" = cert-escapes ]; then
		tool=openssl
		tb sh -c 'mkdir -p /var/lib/kubelet/pki && touch /var/lib/kubelet/pki/.hostile &&
			echo "not a certificate" >/var/lib/kubelet/pki/kubelet-client-current.pem'
	fi
	tb sh -c "cat >/usr/local/bin/$tool && chmod 0755 /usr/local/bin/$tool" <<'EOF'
#!/bin/sh
# a stand-in of tests/testbed/hostile-node.sh: its error text drives a terminal
printf '%s: \033]0;pwned\007\033[2Jgone \302\23331m red \033[31mRED\033[0m \377 end\n' \
	"$(basename "$0")" >&2
exit 1
EOF
	;;
esac

case $MODE in
smi-* | facts-*) ;;
*)
	# an earlier mode's stand-in goes
	tb sh -c 'if grep -qs hostile-node.sh /usr/bin/nvidia-smi; then rm -f /usr/bin/nvidia-smi; fi'
	exit 0 ;;
esac
# The nvidia-smi stand-in: one RTX 3070, its name poisoned (smi-*), or a
# flood into the facts script's own output (facts-*: the $(...) around it
# would only fill a variable).
tb sh -c 'cat >/usr/bin/nvidia-smi && chmod 0755 /usr/bin/nvidia-smi' <<'EOF'
#!/bin/sh
# nvidia-smi stand-in of tests/testbed/hostile-node.sh
read -r mode bytes </etc/provision-hostile
tail='dcgmExporter:\n  repository: registry.evil.example\ntolerations:\n- operator: Exists\n#'
case $mode in
smi-cr) name="NVIDIA GeForce RTX 3070\r$(printf "$tail" | tr '\n' '\r')" ;;
smi-nel) name="NVIDIA GeForce RTX 3070\302\205dcgmExporter: {repository: registry.evil.example}" ;;
smi-u2028) name="NVIDIA GeForce RTX 3070\342\200\250dcgmExporter: {repository: registry.evil.example}" ;;
smi-esc) name="NVIDIA GeForce RTX 3070\033]0;pwned\007\033[31m" ;;
smi-nul) name="NVIDIA GeForce RTX 3070\000dcgmExporter:" ;;
facts-*)
	# once, at the query facts.sh makes first
	case " $* " in *" --query-gpu="*) provision-hostile >"/proc/$PPID/fd/1" ;; esac
	name="NVIDIA GeForce RTX 3070" ;;
esac
case " $* " in
*" --query-gpu="*) printf "$name, 8192 MiB, 550.107.02, GPU-5a6b7c8d-9e0f-1a2b-3c4d-5e6f7a8b9c0d\n" ;;
*) echo "| NVIDIA-SMI 550.107.02    Driver Version: 550.107.02    CUDA Version: 12.4 |" ;;
esac
EOF
