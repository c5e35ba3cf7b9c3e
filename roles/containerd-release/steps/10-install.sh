# containerd-release 10-install: the binaries of the pushed release
# archives are the ones in /usr/local: containerd, its shims and ctr from
# containerd's archive (its bin/ folder, unpacked into /usr/local/bin) and
# runc (/usr/local/sbin/runc).  What was installed, with each file's
# SHA-256 and the archives' own, is kept in $PROVISION_STATE_DIR so that
# the check compares hashes instead of unpacking 40 MB each run.
set -eu
ARCHIVE=/var/lib/provision/artifacts/containerd-linux.tar.gz
RUNC=/var/lib/provision/artifacts/runc
RECORD=$PROVISION_STATE_DIR/containerd-release.sha256

archives() {
	sha256sum "$ARCHIVE" "$RUNC" | awk '{ print "# " $1 }'
}

case ${1:-} in
check)
	if [ ! -f "$RECORD" ]; then
		echo "containerd's release archive is not installed"
		exit 1
	fi
	if [ "$(grep '^# ' "$RECORD")" != "$(archives)" ]; then
		echo "the installed containerd and runc come from other archives than the pinned ones"
		exit 1
	fi
	if ! grep -v '^# ' "$RECORD" | sha256sum --quiet -c - 2>/dev/null; then
		echo "an installed binary differs from its release archive:"
		grep -v '^# ' "$RECORD" | sha256sum --quiet -c - 2>&1 | head -n 5 || true
		exit 1
	fi
	echo "containerd $(/usr/local/bin/containerd --version | awk '{ print $3 }'), runc $(/usr/local/sbin/runc --version | awk 'NR == 1 { print $3 }') from their release archives"
	exit 0
	;;
apply)
	members=$(tar -tzf "$ARCHIVE" | grep '^bin/[A-Za-z0-9._-][A-Za-z0-9._-]*$') || {
		pv_hint "the pinned containerd archive has no bin/ files: is roles/artifacts.yaml's containerd-linux-* a containerd release archive (containerd-X.Y.Z-linux-ARCH.tar.gz)?"
		echo "no bin/ member in $ARCHIVE"
		exit 2
	}
	tmp=$(mktemp -d /usr/local/.provision-containerd.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	# shellcheck disable=SC2086 # members: one path a word, checked above
	tar -xzf "$ARCHIVE" -C "$tmp" --no-same-owner --no-same-permissions $members
	mkdir -p /usr/local/bin /usr/local/sbin
	: >"$tmp/record"
	for m in $members; do
		install -m 0755 "$tmp/$m" "/usr/local/$m.provision-new"
		mv -f "/usr/local/$m.provision-new" "/usr/local/$m"
		sha256sum "/usr/local/$m" >>"$tmp/record"
	done
	install -m 0755 "$RUNC" /usr/local/sbin/runc.provision-new
	mv -f /usr/local/sbin/runc.provision-new /usr/local/sbin/runc
	sha256sum /usr/local/sbin/runc >>"$tmp/record"
	{
		archives
		cat "$tmp/record"
	} >"$RECORD.new"
	mv -f "$RECORD.new" "$RECORD"
	echo "installed from the release archives: $(echo "$members" | tr '\n' ' ')sbin/runc"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
