# kube-packages 10-repository: the Kubernetes apt repository of the pinned
# minor version (pkgs.k8s.io or the inventory's mirror) is configured, with
# its signing key.
#
# Like the kubeadm install guide, with two differences: the key is kept
# ASCII-armoured as .asc (apt >= 1.4 reads that directly, see apt-key(8)),
# so no gpg is needed on the node; and it is fetched with apt's own
# downloader (apt-helper), so no curl is needed and apt's proxy settings
# apply.  The key is installed only when its fingerprint is the pinned one
# (roles/kubernetes.yaml's apt_key_fingerprint: pkgs.k8s.io's key; or the
# inventory's cluster.apt_key_fingerprint, for a mirror that signs with its
# own): a mirror over plain http, or whoever sits between it and the node,
# cannot hand the node a key of its own and then any package it likes.
set -eu
KEYRING=/etc/apt/keyrings/kubernetes-apt-keyring.asc
LIST=/etc/apt/sources.list.d/kubernetes.list
MINOR=$(printf '%s' "$PROVISION_K8S_VERSION" | cut -d . -f 1-2)
BASE=${PROVISION_APT_MIRROR:-https://pkgs.k8s.io}
BASE=${BASE%/}
REPO=$BASE/core:/stable:/v$MINOR/deb/
PIN=$(printf '%s' "${PROVISION_APT_KEY_FINGERPRINT:-${PROVISION_KUBE_APT_KEY_FINGERPRINT:-}}" | tr -d ' ' | tr a-f A-F)
if [ -z "$PIN" ]; then
	echo "no signing-key fingerprint for the Kubernetes $MINOR repository"
	pv_hint "roles/kubernetes.yaml gives each minor's apt_key_fingerprint; cluster.apt_key_fingerprint names a mirror's own key"
	exit 2
fi

desired_list() {
	echo "# Kubernetes $MINOR packages; written by provision (roles/kube-packages)."
	echo "deb [signed-by=$KEYRING] $REPO /"
}

# Other apt sources for the same repository (a list from the install guide
# with another signed-by makes apt refuse every command).
other_sources() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		if [ ! -f "$f" ] || [ "$f" = "$LIST" ]; then
			continue
		fi
		if grep -v '^[[:space:]]*#' "$f" | grep -qF -e "$REPO"; then
			echo "$f"
		fi
	done
}

helper_proxy() {
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		printf '%s\n' "-oAcquire::http::Proxy=$PROVISION_HTTP_PROXY" "-oAcquire::https::Proxy=$PROVISION_HTTP_PROXY"
	fi
}

case ${1:-} in
check)
	others=$(other_sources)
	if [ -n "$others" ]; then
		echo "$REPO is also configured in: $(printf '%s' "$others" | tr '\n' ' ')"
		pv_hint "remove those entries (provision keeps the repository in $LIST); apt refuses sources that name one repository with different keys"
		exit 2
	fi
	rc=0
	if [ "$(cat "$LIST" 2>/dev/null || true)" != "$(desired_list)" ]; then
		echo "$LIST: want: deb [signed-by=$KEYRING] $REPO /"
		rc=1
	fi
	if ! grep -q 'BEGIN PGP PUBLIC KEY BLOCK' "$KEYRING" 2>/dev/null; then
		echo "$KEYRING: missing"
		rc=1
	else
		have=$(pv_pgp_fingerprint "$KEYRING" || echo 'no OpenPGP key')
		if [ "$have" != "$PIN" ]; then
			echo "$KEYRING: want the key $PIN, have $have"
			rc=1
		fi
	fi
	[ "$rc" = 1 ] || echo "$LIST: $REPO, key $KEYRING ($PIN)"
	exit $rc
	;;
apply)
	# Debian 12 and Ubuntu 22.04 have the folder; older releases do not.
	[ -d /etc/apt/keyrings ] || mkdir -m 0755 /etc/apt/keyrings
	key=$(mktemp)
	trap 'rm -f "$key"' EXIT
	echo "fetching ${REPO}Release.key"
	# shellcheck disable=SC2046 # zero or two options
	if ! /usr/lib/apt/apt-helper $(helper_proxy) download-file "${REPO}Release.key" "$key"; then
		pv_hint "the node cannot fetch ${REPO}Release.key: check its network${PROVISION_HTTP_PROXY:+ and the proxy $PROVISION_HTTP_PROXY}, or set cluster.apt_mirror / cluster.http_proxy in the inventory"
		exit 1
	fi
	if ! grep -q 'BEGIN PGP PUBLIC KEY BLOCK' "$key"; then
		echo "${REPO}Release.key is not an OpenPGP public key:"
		head -n 3 "$key"
		pv_hint "is $BASE a mirror of pkgs.k8s.io with the same layout (core:/stable:/v$MINOR/deb/Release.key)?"
		exit 1
	fi
	got=$(pv_pgp_fingerprint "$key" || echo 'not a readable OpenPGP v4 key')
	if [ "$got" != "$PIN" ]; then
		echo "${REPO}Release.key is not the repository's signing key: it is $got, the pinned key is $PIN"
		if [ -n "${PROVISION_APT_KEY_FINGERPRINT:-}" ]; then
			pv_hint "cluster.apt_key_fingerprint names the key $PIN: check that $BASE signs with it, or correct the inventory"
		else
			pv_hint "pkgs.k8s.io signs with $PIN; a mirror that signs with its own key needs cluster.apt_key_fingerprint in the inventory; otherwise something between this node and $BASE serves another key"
		fi
		exit 1
	fi
	echo "key $got: the pinned one"
	pv_write "$KEYRING" 0644 <"$key"
	desired_list | pv_write "$LIST" 0644
	cat "$LIST"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
