#!/bin/sh
# tests/fakes/kube-debs/build.sh: stand-ins for the kubeadm, kubelet and
# kubectl packages of pkgs.k8s.io, in a signed apt repository with the same
# layout, for tests that install Kubernetes packages on testbed nodes.
#
#   build.sh OUT VERSION [VERSION...]      e.g. build.sh "$TEST_DIR/kube" 1.30.4 1.30.5
#
# Writes, for each minor version X.Y among the VERSIONs:
#   OUT/repo/core:/stable:/vX.Y/deb/          the repository, as on pkgs.k8s.io:
#       Release, InRelease, Release.gpg       (signed with a throwaway key)
#       Release.key                           (that key, ASCII-armoured)
#       Packages, Packages.gz, *.deb          (kubeadm/kubelet/kubectl VERSION-1.1)
# and OUT/gnupg, the throwaway key's home (never used for anything else).
# Serve OUT/repo over HTTP and give its URL as the inventory's
# cluster.apt_mirror: the roles then find MIRROR/core:/stable:/vX.Y/deb/.
#
# What the packages copy from the real ones (kubernetes.io install guide,
# pkgs.k8s.io): names, versions VERSION-1.1, architecture, the binaries in
# /usr/bin; and from the real binaries:
#   kubeadm version -o short        -> vVERSION
#   kubeadm version                 -> kubeadm version: &version.Info{Major:"1", Minor:"30", GitVersion:"v1.30.4", ...}
#                                      (the fields the fake cannot know -- GitCommit, BuildDate,
#                                      GoVersion -- are left out)
#   kubelet --version               -> Kubernetes vVERSION
#   kubectl version --client        -> Client Version: vVERSION
#                                      Kustomize Version: v5.0.4-0.20230601165947-6ce0bf390ce3 (1.30.x only:
#                                      the kustomize kubectl 1.30 embeds; other minors print the first line)
# Not copied yet (a later issue brings the full fakes): everything else the
# binaries do; the packages' Depends (cri-tools, kubernetes-cni, and for
# kubelet iptables, conntrack, ...: testbed nodes reach no Debian mirror),
# kubelet's systemd unit and kubeadm's drop-in.  Any other command prints
# what is missing and exits 1.
set -eu
[ $# -ge 2 ] || {
	sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
	exit 2
}
OUT=$1
shift
for c in dpkg-deb apt-ftparchive gpg gzip; do
	command -v "$c" >/dev/null || {
		echo "build.sh: $c is missing (Debian packages dpkg, apt-utils, gnupg)" >&2
		exit 1
	}
done
ARCH=$(dpkg --print-architecture)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STAGE=$OUT/stage
rm -rf "$STAGE" "$OUT/repo"
mkdir -p "$STAGE" "$OUT/repo"

# fake_binary NAME VERSION: the script that stands in for /usr/bin/NAME.
fake_binary() {
	v=$2
	minor=$(echo "$v" | cut -d . -f 2)
	echo '#!/bin/sh'
	echo "# Fake $1 $v for provision's tests (tests/fakes/kube-debs/build.sh says what it copies)."
	case $1 in
	kubeadm)
		cat <<-EOF
			if [ "\${1:-}" = version ]; then
			  case "\${2:-} \${3:-}" in
			  "-o short" | "--output short" | "-o=short " | "--output=short ") echo "v$v"; exit 0 ;;
			  " ") echo 'kubeadm version: &version.Info{Major:"1", Minor:"$minor", GitVersion:"v$v", GitTreeState:"clean", Compiler:"gc", Platform:"linux/$ARCH"}'; exit 0 ;;
			  esac
			fi
		EOF
		;;
	kubelet)
		cat <<-EOF
			if [ "\${1:-}" = --version ]; then echo "Kubernetes v$v"; exit 0; fi
		EOF
		;;
	kubectl)
		kustomize=
		[ "$minor" = 30 ] && kustomize='echo "Kustomize Version: v5.0.4-0.20230601165947-6ce0bf390ce3"'
		cat <<-EOF
			if [ "\${1:-} \${2:-}" = "version --client" ]; then
			  echo "Client Version: v$v"
			  $kustomize
			  exit 0
			fi
		EOF
		;;
	esac
	echo "echo \"fake $1 $v: '\$*' is not implemented in this test fake\" >&2"
	echo 'exit 1'
}

key_home=$OUT/gnupg
if [ ! -f "$key_home/.ready" ]; then
	rm -rf "$key_home"
	mkdir -m 0700 "$key_home"
	gpg --batch --quiet --homedir "$key_home" --passphrase '' \
		--quick-generate-key 'provision test repository (throwaway) <kube-debs@provision.invalid>' ed25519 sign never
	touch "$key_home/.ready"
fi
trap 'gpgconf --homedir "$key_home" --kill gpg-agent 2>/dev/null || true' EXIT

for v in "$@"; do
	case $v in
	[0-9]*.[0-9]*.[0-9]*) ;;
	*)
		echo "build.sh: '$v' is not a version X.Y.Z" >&2
		exit 2
		;;
	esac
	minor=$(echo "$v" | cut -d . -f 1-2)
	repo=$OUT/repo/core:/stable:/v$minor/deb
	mkdir -p "$repo"
	for p in kubeadm kubelet kubectl; do
		d=$STAGE/$p-$v
		mkdir -p "$d/DEBIAN" "$d/usr/bin"
		fake_binary "$p" "$v" >"$d/usr/bin/$p"
		chmod 0755 "$d/usr/bin/$p"
		cat >"$d/DEBIAN/control" <<-EOF
			Package: $p
			Version: $v-1.1
			Architecture: $ARCH
			Maintainer: provision tests <kube-debs@provision.invalid>
			Section: admin
			Priority: optional
			Description: test fake of $p $v (provision's tests, not Kubernetes)
			 Answers a few version queries like the real $p; nothing else.
		EOF
		dpkg-deb --root-owner-group --build "$d" "$repo/${p}_$v-1.1_$ARCH.deb" >/dev/null
	done
done

for repo in "$OUT"/repo/core:/stable:/*/deb; do
	(
		cd "$repo"
		apt-ftparchive packages . >Packages
		gzip -9 -k -f Packages
		apt-ftparchive -o APT::FTPArchive::Release::Origin=provision-tests \
			-o APT::FTPArchive::Release::Label=kube-debs release . >Release.new
		mv Release.new Release
		rm -f InRelease Release.gpg
		gpg --batch --quiet --homedir "$key_home" --clearsign -o InRelease Release
		gpg --batch --quiet --homedir "$key_home" --armor --detach-sign -o Release.gpg Release
		gpg --batch --quiet --homedir "$key_home" --armor --export >Release.key
	)
	echo "$repo"
done
rm -rf "$STAGE"
