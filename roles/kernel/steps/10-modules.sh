# kernel 10-modules: every module of /etc/modules-load.d/provision-k8s.conf
# is loaded (or built into the kernel).
#
# The list lives in one place, the file provision renders from
# templates/modules-load.conf.tmpl just before this step; systemd-modules-load
# reads the same file at boot.  Before the file exists (provision plan on a
# fresh node) the step reports that it would change.
set -eu
FILE=/etc/modules-load.d/provision-k8s.conf

# The module names of $FILE, one per line (comments and blanks dropped), read
# by the shell itself: the check runs on every node on every run.
modules() {
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%%[#;]*}
		set -f
		# shellcheck disable=SC2086 # split on blanks, dropped as sed 's/[[:space:]]//g' would
		set -- $line
		set +f
		m=
		for w; do m=$m$w; done
		[ -z "$m" ] || echo "$m"
	done <"$FILE"
}

present() {
	name=$1 dashed=$1
	while :; do # the kernel's name uses "_" where the file may say "-"
		case $name in
		*-*) name=${name%%-*}_${name#*-} ;;
		*) break ;;
		esac
	done
	[ -d "/sys/module/$name" ] && return 0
	release=
	read -r release </proc/sys/kernel/osrelease || release=$(uname -r)
	builtin=/lib/modules/$release/modules.builtin
	[ -r "$builtin" ] && grep -Eq "/($dashed|$name)\.ko(\.[a-z]+)?\$" "$builtin"
}

case ${1:-} in
check)
	if [ ! -f "$FILE" ]; then
		echo "$FILE not written yet"
		exit 1
	fi
	rc=0
	for m in $(modules); do
		if present "$m"; then
			echo "$m: loaded"
		else
			echo "$m: not loaded"
			rc=1
		fi
	done
	exit $rc
	;;
apply)
	[ -f "$FILE" ] || {
		echo "$FILE is missing: provision uploads it before this step"
		exit 1
	}
	for m in $(modules); do
		present "$m" && continue
		echo "modprobe $m"
		if ! modprobe "$m"; then
			pv_hint "module $m is not available for the running kernel $(uname -r): on Ubuntu install linux-modules-extra-$(uname -r), or boot a kernel that has it"
			exit 1
		fi
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
