# containerd 10-install: containerd is installed, in a version this role can
# configure, and its major version is handed over as containerd_major for
# templates/config.toml.tmpl, with containerd_nvidia (pv_nvidia_runtime of
# roles/lib.sh: none, runtime or default): which NVIDIA runtimes the config
# carries and whether nvidia is the node's default runtime.
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

case ${1:-} in
check)
	if ! pv_containerd_info || ! command -v containerd >/dev/null 2>&1; then
		echo "containerd is not installed"
		exit 1
	fi
	pkg=$PV_CONTAINERD_PACKAGE v=$PV_CONTAINERD_VERSION
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
	pv_say_set containerd_nvidia "$(pv_nvidia_runtime)"
	exit 0
	;;
apply)
	if ! apt_get update; then
		pv_hint "apt-get update failed: fix the node's apt sources (or set cluster.http_proxy), then run provision again"
		exit 1
	fi
	if ! pv_installing apt_get install -y containerd; then
		pv_hint "apt-get install containerd failed on $PROVISION_NODE: apt's whole output is in 'provision logs $PROVISION_NODE'; 'apt-get install containerd' there shows it again; an interrupted dpkg is repaired with 'dpkg --configure -a' there"
		exit 1
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
