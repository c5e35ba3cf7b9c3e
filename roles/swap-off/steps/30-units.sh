# swap-off 30-units: nothing turns swap back on at boot.
#
# Besides /etc/fstab, systemd turns swap on from swap units: the ones its
# fstab generator writes (dev-sda2.swap, swapfile.swap...), unit files an
# admin wrote, swap partitions found by systemd-gpt-auto-generator, and
# zram devices from zram-generator.  All of them are pulled in by
# swap.target, so masking swap.target stops them all; every swap unit
# systemd knows of is masked too (the seed procedure masked swapfile.swap),
# so that nothing else can start one.  zram-tools' zramswap.service (and
# the older zram-config.service) run swapon themselves, outside swap.target:
# they are masked when present.  zram-generator gets a configuration
# without devices (it creates one zram device per [section]; the file in
# /etc wins over the packaged one in /usr/lib).
#
# `systemctl mask` refuses to replace a real unit file in /etc/systemd/system:
# such a file is kept in the backup folder, then removed and masked.
set -eu
ZRAM_CONF=/etc/systemd/zram-generator.conf

running_systemd() {
	[ -d /run/systemd/system ]
}

# Every unit that must be masked, one a line: swap.target, the swap unit
# files and zram services in systemd's unit folders (also the generated
# ones), and the swap units a running systemd has loaded.  (Globs rather
# than `systemctl list-unit-files`, which reads every unit file on disk.)
units() {
	echo swap.target
	for d in /etc/systemd/system /run/systemd/system /usr/local/lib/systemd/system \
		/usr/lib/systemd/system /lib/systemd/system /run/systemd/generator.early \
		/run/systemd/generator /run/systemd/generator.late; do
		for f in "$d"/*.swap "$d/zramswap.service" "$d/zram-config.service"; do
			if [ -e "$f" ] || [ -L "$f" ]; then
				echo "${f##*/}"
			fi
		done
	done
	if running_systemd; then
		systemctl list-units --type=swap --all --no-legend --plain 2>/dev/null |
			while read -r _u _rest; do printf '%s\n' "$_u"; done
	fi
}

# The lines of standard input without blanks and repeats, sorted (`sort -u`;
# run only when there are two or more: the check runs on every node on
# every run, and a node without swap units has swap.target alone).
sorted_units() {
	_all=
	while IFS= read -r _u; do
		[ -n "$_u" ] || continue
		case $_nl$_all in *"$_nl$_u$_nl"*) continue ;; esac
		_all=$_all$_u$_nl
	done
	case $_all in
	*"$_nl"?*) printf '%s' "$_all" | sort -u ;;
	*) printf '%s' "$_all" ;;
	esac
}
_nl='
'

# joined LINES: the lines, one blank between them (as `tr '\n' ' '` makes of
# lines without a last newline).
joined() {
	_j=
	while IFS= read -r _l; do
		_j=${_j:+$_j }$_l
	done <<EOF
$1
EOF
	printf '%s' "$_j"
}

zram_generator() {
	for g in /usr/lib/systemd/system-generators/zram-generator /lib/systemd/system-generators/zram-generator; do
		[ -x "$g" ] && return 0
	done
	return 1
}

# True when zram-generator is installed and could still create a device.
zram_generator_active() {
	zram_generator || return 1
	[ -f "$ZRAM_CONF" ] || return 0
	grep -q '^[[:space:]]*\[' "$ZRAM_CONF"
}

# The units of standard input that are not masked.  One `systemctl
# is-enabled` for all of them; it stops at the first unit without a unit
# file (a swap area swapon turned on), so when it answers fewer lines than
# it was asked, one call per unit.
unmasked() {
	set --
	while IFS= read -r u; do
		[ -n "$u" ] && set -- "$@" "$u"
	done <<-EOF
		$(sorted_units)
	EOF
	[ $# -gt 0 ] || return 0
	states=$(systemctl is-enabled "$@" 2>/dev/null) || :
	n=0
	while IFS= read -r _l; do n=$((n + 1)); done <<-EOF
		$states
	EOF
	[ -n "$states" ] || n=0
	if [ "$n" = $# ]; then
		for u; do
			s=${states%%"$_nl"*}
			states=${states#*"$_nl"}
			[ "$s" = masked ] || echo "$u"
		done
		return 0
	fi
	for u; do
		case $(systemctl is-enabled "$u" 2>/dev/null || true) in
		masked) ;;
		*) echo "$u" ;;
		esac
	done
}

case ${1:-} in
check)
	all=$(units | sorted_units)
	todo=$(printf '%s\n' "$all" | unmasked)
	rc=0
	if [ -n "$todo" ]; then
		echo "not masked: $(joined "$todo")"
		rc=1
	else
		echo "masked: $(joined "$all")"
	fi
	if zram_generator_active; then
		echo "zram-generator would create zram swap at boot ($ZRAM_CONF has a device section or is missing)"
		rc=1
	fi
	exit $rc
	;;
apply)
	units | unmasked | while IFS= read -r u; do
		f=/etc/systemd/system/$u
		if [ -f "$f" ] && [ ! -L "$f" ]; then
			echo "moving $f to $PROVISION_BACKUP_DIR$f so that it can be masked"
			pv_backup "$f"
			rm -f "$f"
		fi
		echo "systemctl mask $u"
		systemctl mask "$u"
		pv_note masked "$u"
	done
	if zram_generator_active; then
		printf '%s\n' "# No [zramN] section: zram-generator creates no zram swap device." \
			"# Written by provision (swap-off): Kubernetes nodes run without swap." |
			pv_write "$ZRAM_CONF" 0644
		echo "wrote $ZRAM_CONF without devices"
	fi
	if running_systemd; then
		systemctl daemon-reload
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
