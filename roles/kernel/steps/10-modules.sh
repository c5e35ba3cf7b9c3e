# kernel 10-modules: every module of /etc/modules-load.d/provision-k8s.conf
# is loaded (or built into the kernel).
#
# The list lives in one place, the file provision renders from
# templates/modules-load.conf.tmpl just before this step; systemd-modules-load
# reads the same file at boot.  Before the file exists (provision plan on a
# fresh node) the step reports that it would change.
set -eu
FILE=/etc/modules-load.d/provision-k8s.conf

modules() {
	sed -e 's/[#;].*//' -e 's/[[:space:]]//g' "$FILE" | grep -v '^$' || true
}

# A module is there when sysfs lists it or the running kernel has it built in.
present() {
	name=$(printf '%s' "$1" | tr - _)
	[ -d "/sys/module/$name" ] && return 0
	builtin=/lib/modules/$(uname -r)/modules.builtin
	[ -r "$builtin" ] && grep -Eq "/($1|$name)\.ko(\.[a-z]+)?\$" "$builtin"
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
