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

candidate() {
	apt-cache madison "$1" 2>/dev/null | awk -F'|' -v v="$V" '
		{ gsub(/[ \t]/, "", $2); if (index($2, v "-") == 1) print $2 }' | sort -V | tail -n 1
}

case ${1:-} in
check)
	# One dpkg-query for the three: a held package's selection is "hold",
	# the first letter of its status ("hi"), which is what `apt-mark hold`
	# sets (apt-mark showhold reads the whole apt cache: ~1 s on a node with
	# package lists, every run).
	rc=0
	# shellcheck disable=SC2086 # one package per word
	st=$(dpkg-query -W -f='${Package}|${db:Status-Abbrev}|${Version}\n' $PACKAGES 2>/dev/null) || :
	for p in $PACKAGES; do
		status='' have=''
		while IFS='|' read -r name s v; do
			if [ "$name" = "$p" ]; then
				status=$s have=$v
			fi
		done <<EOF
$st
EOF
		case $status in
		?i*) ;;
		*)
			echo "$p: not installed (want $V)"
			rc=1
			continue
			;;
		esac
		case $have in
		"$V"-*) ;;
		*)
			echo "$p: $have installed, want $V"
			rc=1
			continue
			;;
		esac
		case $status in
		h*) echo "$p: $have, held" ;;
		*)
			echo "$p: $have, not held"
			rc=1
			;;
		esac
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
