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
		systemctl list-units --type=swap --all --no-legend --plain 2>/dev/null | awk '{ print $1 }'
	fi
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

# The units of standard input that are not masked.
unmasked() {
	sort -u | while IFS= read -r u; do
		[ -n "$u" ] || continue
		case $(systemctl is-enabled "$u" 2>/dev/null || true) in
		masked) ;;
		*) echo "$u" ;;
		esac
	done
}

case ${1:-} in
check)
	all=$(units | sort -u)
	todo=$(printf '%s\n' "$all" | unmasked)
	rc=0
	if [ -n "$todo" ]; then
		echo "not masked: $(printf '%s' "$todo" | tr '\n' ' ')"
		rc=1
	else
		echo "masked: $(printf '%s' "$all" | tr '\n' ' ')"
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
