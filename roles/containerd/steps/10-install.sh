# containerd 10-install: containerd is installed, in a version this role can
# configure, and its major version is handed over as containerd_major for
# templates/config.toml.tmpl.
#
# Installed means either the distribution's `containerd` package or
# Docker's `containerd.io` (the seed's choice; kept when present).  When
# neither is, the distribution's package is installed: Debian 12 ships
# 1.6, Ubuntu 20.04/22.04/24.04 ship 1.7 in their updates.  Kubernetes 1.26
# and later talk CRI v1 only, which needs containerd 1.6 or later.
set -eu

apt_get() {
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		set -- -o "Acquire::http::Proxy=$PROVISION_HTTP_PROXY" \
			-o "Acquire::https::Proxy=$PROVISION_HTTP_PROXY" "$@"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"
}

package() {
	for p in containerd containerd.io; do
		case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true) in
		?i*)
			echo "$p"
			return 0
			;;
		esac
	done
	return 1
}

# "containerd github.com/containerd/containerd 1.6.20~ds1 ..." -> 1.6.20~ds1
# The version the binary reports, from its package when the package's binary
# is the one on PATH (starting the 50 MB binary costs more than this whole
# check): the upstream version without epoch and Debian revision
# ("1.6.20~ds1-1+deb12u3" -> "1.6.20~ds1", containerd.io "1.7.22-1" -> "1.7.22").
version() {
	if [ "$(command -v containerd)" = /usr/bin/containerd ]; then
		v=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || v=
		v=${v#*:}
		if [ -n "$v" ]; then
			echo "${v%-*}"
			return 0
		fi
	fi
	containerd --version 2>/dev/null | awk '{ print $3 }' | sed 's/^v//'
}

case ${1:-} in
check)
	if ! pkg=$(package) || ! command -v containerd >/dev/null 2>&1; then
		echo "containerd is not installed"
		exit 1
	fi
	v=$(version "$pkg")
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	echo "$pkg: containerd $v"
	case $major.$minor in
	1.[6-9] | 2.*) ;;
	*)
		pv_hint "upgrade containerd to 1.6 or later (apt-get install $pkg); Kubernetes 1.26+ needs CRI v1"
		echo "containerd $v: this role configures containerd 1.6, 1.7 and 2.x"
		exit 2
		;;
	esac
	pv_say_set containerd_major "$major"
	exit 0
	;;
apply)
	if ! apt_get update; then
		pv_hint "apt-get update failed: fix the node's apt sources (or set cluster.http_proxy), then run provision again"
		exit 1
	fi
	if ! pv_installing apt_get install -y containerd; then
		pv_hint "apt-get install containerd failed: see the lines above (is dpkg interrupted? run dpkg --configure -a on the node)"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
