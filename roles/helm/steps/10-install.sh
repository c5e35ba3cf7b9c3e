# helm 10-install: /usr/local/bin/helm is the helm program of the pinned
# release archive (the same bytes), executable, and answers `helm version`.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ARCHIVE=/var/lib/provision/artifacts/helm-linux.tar.gz
BIN=/usr/local/bin/helm
# The archive pushed is the one of the node's inventory arch (role.yaml);
# its member is named after the architecture.
case $(uname -m) in
x86_64) MEMBER=linux-amd64/helm ;;
aarch64) MEMBER=linux-arm64/helm ;;
*) MEMBER= ;;
esac

want() {
	tar -xzOf "$ARCHIVE" "$MEMBER" | sha256sum | cut -c1-64
}

case ${1:-} in
check)
	if [ -z "$MEMBER" ]; then
		echo "this node is $(uname -m); Helm archives are pinned for x86_64 and aarch64"
		pv_hint "add the archive for this architecture to roles/artifacts.yaml and name it in roles/helm/role.yaml"
		exit 2
	fi
	if [ ! -f "$ARCHIVE" ]; then
		echo "$ARCHIVE is not on the node yet"
		exit 1
	fi
	w=$(want) || {
		pv_hint "$ARCHIVE has no $MEMBER: is roles/artifacts.yaml's helm-linux-* archive for this node's arch Helm's release archive?"
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
