# helm 10-install: /usr/local/bin/helm is the helm program of the pinned
# release archive (the same bytes), executable, and answers `helm version`.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ARCHIVE=/var/lib/provision/artifacts/helm-linux-amd64.tar.gz
MEMBER=linux-amd64/helm
BIN=/usr/local/bin/helm

want() {
	tar -xzOf "$ARCHIVE" "$MEMBER" | sha256sum | cut -c1-64
}

case ${1:-} in
check)
	if [ "$(uname -m)" != x86_64 ]; then
		echo "this node is $(uname -m); the pinned Helm archive is for x86_64 (linux-amd64)"
		pv_hint "add the archive for this architecture to roles/artifacts.yaml and name it in roles/helm/role.yaml"
		exit 2
	fi
	if [ ! -f "$ARCHIVE" ]; then
		echo "$ARCHIVE is not on the node yet"
		exit 1
	fi
	w=$(want) || {
		pv_hint "$ARCHIVE has no $MEMBER: is roles/artifacts.yaml's helm-linux-amd64 Helm's release archive?"
		exit 2
	}
	if [ ! -x "$BIN" ]; then
		echo "$BIN: missing"
		exit 1
	fi
	if [ "$(sha256sum <"$BIN" | cut -c1-64)" != "$w" ]; then
		echo "$BIN: $("$BIN" version --short 2>/dev/null || echo 'does not run'), not the pinned archive's"
		exit 1
	fi
	echo "$BIN: $("$BIN" version --short)"
	;;
apply)
	tmp=$(mktemp "$BIN.provision-XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	tar -xzOf "$ARCHIVE" "$MEMBER" >"$tmp"
	chmod 0755 "$tmp"
	if ! "$tmp" version --short; then
		pv_hint "the helm of $ARCHIVE does not run on $PROVISION_NODE"
		exit 1
	fi
	pv_backup "$BIN"
	mv -f "$tmp" "$BIN"
	pv_managed "$BIN"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
