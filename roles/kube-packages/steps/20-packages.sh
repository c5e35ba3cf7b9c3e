# kube-packages 20-packages: kubeadm, kubelet and kubectl are installed at
# exactly the inventory's version and held.
#
# pkgs.k8s.io versions packages as VERSION-REVISION (1.30.4-1.1); any
# revision of the pinned version is "exactly" it.  The newest revision the
# repository offers is installed; apt-mark hold keeps apt from upgrading
# them (a kubelet must never move ahead of the control plane on its own).
# Only the Kubernetes list is refreshed (apt-get update of that one file):
# quick, and unaffected by other sources the node cannot reach.
set -eu
LIST=/etc/apt/sources.list.d/kubernetes.list
PACKAGES="kubeadm kubelet kubectl"
V=$PROVISION_K8S_VERSION

apt_opts() {
	echo "-q -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3"
}

apt_get() {
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		set -- -o "Acquire::http::Proxy=$PROVISION_HTTP_PROXY" \
			-o "Acquire::https::Proxy=$PROVISION_HTTP_PROXY" "$@"
	fi
	# shellcheck disable=SC2046 # fixed words
	DEBIAN_FRONTEND=noninteractive apt-get $(apt_opts) "$@"
}

installed() { # PACKAGE -> version, when installed
	v=$(dpkg-query -W -f='${db:Status-Abbrev}|${Version}' "$1" 2>/dev/null) || return 1
	case $v in ?i*) echo "${v#*|}" ;; *) return 1 ;; esac
}

# The newest revision of version V of PACKAGE in the configured repositories.
candidate() {
	apt-cache madison "$1" 2>/dev/null | awk -F'|' -v v="$V" '
		{ gsub(/[ \t]/, "", $2); if (index($2, v "-") == 1) print $2 }' | sort -V | tail -n 1
}

case ${1:-} in
check)
	rc=0
	held=$(apt-mark showhold 2>/dev/null || true)
	for p in $PACKAGES; do
		if ! have=$(installed "$p"); then
			echo "$p: not installed (want $V)"
			rc=1
			continue
		fi
		case $have in
		"$V"-*) ;;
		*)
			echo "$p: $have installed, want $V"
			rc=1
			continue
			;;
		esac
		if printf '%s\n' "$held" | grep -qx -e "$p"; then
			echo "$p: $have, held"
		else
			echo "$p: $have, not held"
			rc=1
		fi
	done
	exit $rc
	;;
apply)
	if [ ! -f "$LIST" ]; then
		echo "$LIST is missing (step 10-repository of this role)"
		exit 1
	fi
	if ! apt_get update -o Dir::Etc::sourcelist="$LIST" -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0; then
		pv_hint "apt cannot read the repository in $LIST; if its key changed, remove /etc/apt/keyrings/kubernetes-apt-keyring.asc and run provision again"
		exit 1
	fi
	set --
	for p in $PACKAGES; do
		c=$(candidate "$p")
		if [ -z "$c" ]; then
			echo "$p $V is not in the repository; it has: $(apt-cache madison "$p" 2>/dev/null | awk -F'|' '{ gsub(/[ \t]/, "", $2); print $2 }' | sort -V | tail -n 5 | paste -sd ' ')"
			pv_hint "check cluster.kubernetes_version in the inventory (a released version such as 1.30.4)"
			exit 1
		fi
		set -- "$@" "$p=$c"
	done
	echo "installing $*"
	pv_installing apt_get install -y --allow-downgrades --allow-change-held-packages \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
	# shellcheck disable=SC2086 # package names are single words
	apt-mark hold $PACKAGES
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
