# kernel 20-sysctl: the settings of /etc/sysctl.d/99-provision-k8s.conf are
# in force now, and no file read after it at boot sets them differently.
#
# Applied with `sysctl -p FILE`: only this file, never `sysctl --system`,
# which would re-apply every sysctl file of the node (and, in a container,
# try to write host-wide keys).  At boot systemd-sysctl reads the files of
# /etc/sysctl.d, /run/sysctl.d, /usr/local/lib/sysctl.d and /usr/lib/sysctl.d
# in the order of their names, later ones winning; /etc/sysctl.conf comes in
# as 99-sysctl.conf, after this file.  A later file that sets one of these
# keys to another value would undo it at the next boot: the check reports
# it, and the admin decides (it is not this role's file to change).
set -eu
FILE=/etc/sysctl.d/99-provision-k8s.conf
NAME=${FILE##*/}

# "key value" lines of a sysctl.d file (comments and blanks dropped).
settings() {
	sed -e 's/^[[:space:]]*-//' -e '/^[[:space:]]*[#;]/d' -e '/=/!d' "$1" |
		awk -F= '{ k = $1; v = substr($0, index($0, "=") + 1)
			gsub(/[ \t]/, "", k); gsub(/^[ \t]+|[ \t]+$/, "", v); gsub(/[ \t]+/, " ", v)
			gsub(/\//, ".", k); print k, v }'
}

current() {
	tr '\t' ' ' <"/proc/sys/$(printf '%s' "$1" | tr . /)" | sed 's/  */ /g'
}

# Files read at boot after ours (by name; the first folder holding a name wins).
later_files() {
	for d in /etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d; do
		for f in "$d"/*.conf; do
			[ -e "$f" ] && printf '%s %s\n' "${f##*/}" "$f"
		done
	done | awk -v mine="$NAME" '!seen[$1]++ && $1 > mine { print $2 }'
}

# Compare each "key value" line on standard input with the kernel and with
# the files read after ours at boot.  Exit 0 all in force, 1 some differ,
# 2 a later file overrides one of them.
compare() {
	rc=0
	while read -r key want; do
		if [ ! -e "/proc/sys/$(printf '%s' "$key" | tr . /)" ]; then
			echo "$key: not in this kernel (yet)"
			rc=1
			continue
		fi
		have=$(current "$key")
		if [ "$have" = "$want" ]; then
			echo "$key = $have"
		else
			echo "$key = $have (want $want)"
			rc=1
		fi
		for f in $(later_files); do
			other=$(settings "$f" | awk -v k="$key" '$1 == k { $1 = ""; sub(/^ /, ""); v = $0 } END { if (v != "") print v }')
			if [ -n "$other" ] && [ "$other" != "$want" ]; then
				real=$f
				[ -L "$f" ] && real=$(readlink -f "$f")
				echo "$f sets $key = $other, which overrides $FILE at boot"
				pv_hint "remove or change $key in $real (sysctl.d files are applied in name order; the last one wins)"
				return 2
			fi
		done
	done
	return $rc
}

# Why this node cannot set its network sysctls; nothing when it can.  In a
# container the network sysctls are the container's own (per network
# namespace), but the container manager may mount /proc/sys read-only or
# withhold CAP_NET_ADMIN: then only its host can set them.
cannot_set() {
	pv_in_container || return 0
	opts=$(awk '$5 == "/proc" || $5 == "/proc/sys" || $5 == "/proc/sys/net" { print length($5), $6 }' \
		/proc/self/mountinfo | sort -s -n -k 1,1 | tail -n 1 | cut -d ' ' -f 2)
	case ,$opts, in
	*,ro,*)
		echo "/proc/sys is read-only in this container: its network sysctls can only be set by the container's host"
		return 0
		;;
	esac
	cap=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
	# CAP_NET_ADMIN is capability 12.
	if [ $((0x$cap >> 12 & 1)) = 0 ]; then
		echo "this container has no CAP_NET_ADMIN: its network sysctls can only be set by the container's host"
	fi
}

case ${1:-} in
check)
	if [ ! -f "$FILE" ]; then
		echo "$FILE not written yet"
		exit 1
	fi
	if settings "$FILE" | compare; then
		exit 0
	else
		rc=$?
	fi
	if [ "$rc" = 1 ]; then
		why=$(cannot_set)
		[ -z "$why" ] || pv_skip "$why"
	fi
	exit $rc
	;;
apply)
	[ -f "$FILE" ] || {
		echo "$FILE is missing: provision uploads it before this step"
		exit 1
	}
	if ! sysctl -p "$FILE"; then
		pv_hint "net.bridge.* keys exist only once br_netfilter is loaded (step 10-modules of this role)"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
