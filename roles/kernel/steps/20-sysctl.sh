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

# The check runs on every node on every run: one awk reads our file and
# the later ones (scan), values are read with the shell's own `read`, and
# in a container (cannot_set) systemd-detect-virt is the only other program.

# The awk function that reads one sysctl.d line into K and V (comments,
# blanks and lines without "=" give 0).
PARSE='function parse(line) {
	sub(/^[[:space:]]*-/, "", line)
	if (line ~ /^[[:space:]]*[#;]/ || line !~ /=/) return 0
	K = substr(line, 1, index(line, "=") - 1); V = substr(line, index(line, "=") + 1)
	gsub(/[ \t]/, "", K); gsub(/^[ \t]+|[ \t]+$/, "", V); gsub(/[ \t]+/, " ", V)
	gsub(/\//, ".", K); return 1
}'

# scan: want="key value" lines of $FILE; over="FILE KEY VALUE" lines: for
# each wanted key, the first file read at boot after ours (by name; the
# first folder holding a name wins) whose last setting of it differs.  One
# awk reads them all.
scan() {
	set --
	for d in /etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d; do
		for f in "$d"/*.conf; do
			[ -e "$f" ] && set -- "$@" "$f"
		done
	done
	out=$(awk -v mine="$NAME" "$PARSE"'
		BEGIN {
			# later_files: by name, the first folder holding a name wins
			for (j = 2; j < ARGC; j++) {
				b = ARGV[j]
				sub(/.*\//, "", b)
				if ((b in seen) || !(b > mine)) ARGV[j] = ""
				seen[b] = 1
			}
		}
		FILENAME == ARGV[1] { if (parse($0)) { print "W", K, V; want[K] = V; keys[++n] = K }; next }
		parse($0) && (K in want) { last[FILENAME, K] = V }
		END {
			for (i = 1; i <= n; i++)
				for (j = 2; j < ARGC; j++)
					if (ARGV[j] != "" && (ARGV[j], keys[i]) in last && last[ARGV[j], keys[i]] != want[keys[i]]) {
						print "O", ARGV[j], keys[i], last[ARGV[j], keys[i]]
						break
					}
		}' "$FILE" "$@")
	want='' over=''
	while IFS= read -r _l; do
		case $_l in
		"W "*) want=$want${_l#W }$_nl ;;
		"O "*) over=$over${_l#O }$_nl ;;
		esac
	done <<EOF
$out
EOF
	want=${want%"$_nl"} over=${over%"$_nl"}
}
_nl='
'

# keypath KEY: kp=the file under /proc/sys (net.ipv4.ip_forward -> net/ipv4/ip_forward).
keypath() {
	kp='' _r=$1
	while :; do
		case $_r in
		*.*) kp=$kp${_r%%.*}/ _r=${_r#*.} ;;
		*) break ;;
		esac
	done
	kp=$kp$_r
}

# current KEY: have=its value now, blanks squeezed to one space.
current() {
	keypath "$1"
	have=
	read -r have <"/proc/sys/$kp" || :
	set -f
	# shellcheck disable=SC2086 # split on blanks to squeeze them
	set -- $have
	set +f
	have=$*
}

compare() {
	rc=0
	while read -r key want_v; do
		[ -n "$key" ] || continue
		keypath "$key"
		if [ ! -e "/proc/sys/$kp" ]; then
			echo "$key: not in this kernel (yet)"
			rc=1
			continue
		fi
		current "$key"
		if [ "$have" = "$want_v" ]; then
			echo "$key = $have"
		else
			echo "$key = $have (want $want_v)"
			rc=1
		fi
	done <<EOF
$want
EOF
	while read -r f key other; do
		[ -n "$f" ] || continue
		keypath "$key"
		[ -e "/proc/sys/$kp" ] || continue
		real=$f
		[ -L "$f" ] && real=$(readlink -f "$f")
		echo "$f sets $key = $other, which overrides $FILE at boot"
		pv_hint "remove or change $key in $real (sysctl.d files are applied in name order; the last one wins)"
		return 2
	done <<EOF
$over
EOF
	return $rc
}

# Why the settings cannot be set here; nothing when they can.  The mount
# options of the deepest of /proc, /proc/sys and /proc/sys/net (the last
# one mounted when two are as deep), and the capabilities, read by the shell.
cannot_set() {
	pv_in_container || return 0
	opts='' best=0
	while read -r _a _b _c _d mp mo _rest; do
		case $mp in /proc | /proc/sys | /proc/sys/net) ;; *) continue ;; esac
		if [ ${#mp} -ge "$best" ]; then
			best=${#mp} opts=$mo
		fi
	done </proc/self/mountinfo
	case ,$opts, in
	*,ro,*)
		echo "/proc/sys is read-only in this container: its network sysctls can only be set by the container's host"
		return 0
		;;
	esac
	cap=
	while read -r _k _v; do
		[ "$_k" != CapEff: ] || cap=$_v
	done </proc/self/status
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
	scan
	if compare; then
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
