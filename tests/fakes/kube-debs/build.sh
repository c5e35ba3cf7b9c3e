#!/bin/sh
# tests/fakes/kube-debs/build.sh: stand-ins for the Kubernetes packages of
# pkgs.k8s.io, in a signed apt repository with the same layout, for tests
# that install Kubernetes on testbed nodes; and a helm package.
#
#   build.sh OUT VERSION [VERSION...]      e.g. build.sh "$TEST_DIR/kube" 1.30.4 1.30.5
#
# Writes, for each minor version X.Y among the VERSIONs:
#   OUT/repo/core:/stable:/vX.Y/deb/          the repository, as on pkgs.k8s.io:
#       Release, InRelease, Release.gpg       (signed with a throwaway key)
#       Release.key                           (that key, ASCII-armoured)
#       Packages, Packages.gz, *.deb          kubeadm, kubelet, kubectl VERSION-1.1,
#                                             cri-tools and kubernetes-cni of that minor
# and, in OUT/repo/artifacts/, what roles/artifacts.yaml names, under the
# file names of the real URLs:
#   helm-vX.Y.Z-linux-amd64.tar.gz        Helm's release archive layout
#                                         (linux-amd64/helm, LICENSE, README.md)
#                                         with the fake helm of that version,
#                                         one per Helm of HELMS (4.3.0, 3.22.0:
#                                         roles/helm's Helms of 1.34-1.37; 4.2.4,
#                                         3.18.4: of 1.33, 3.18.4 also of 1.30-1.32)
#   NAME-VERSION.tgz                      each chart of ../charts/NAME (a chart
#                                         archive: NAME/Chart.yaml, values.yaml,
#                                         templates/), VERSION from its Chart.yaml;
#                                         and one per ../charts/NAME/versions/V/:
#                                         the chart with the files there in place
#                                         of its own (Chart.yaml, values.yaml)
# and OUT/gnupg (the throwaway key), OUT/key.fpr (its fingerprint, for the
# inventory's cluster.apt_key_fingerprint: like a lab mirror that signs with
# its own key).
# Serve OUT/repo over HTTP and give its URL as the inventory's
# cluster.apt_mirror: the roles then find MIRROR/core:/stable:/vX.Y/deb/;
# ../cluster-testbed.sh points a copy of roles/artifacts.yaml at
# MIRROR/artifacts/ (URL and SHA-256 of each file there).
#
# The programs are the fakes of ../kube (python3 + openssl; README.md there
# says what each copies from the real tool): each is fakekube.py followed by
# the tool, with FAKE_VERSION set, in one file; helm and the kubelet also
# carry the chart stand-ins ../kube/chart_*.py (between the two).
# The packages copy from the real ones (kubernetes/release, cmd/krel
# templates: kubeadm.spec, kubelet.spec, metadata.yaml):
#   kubeadm        /usr/bin/kubeadm, /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf;
#                  Depends cri-tools (>= X.Y.0) from 1.30 on, before 1.30 also kubelet,
#                  kubectl, kubernetes-cni
#   kubelet        /usr/bin/kubelet, /usr/lib/systemd/system/kubelet.service,
#                  /etc/default/kubelet (KUBELET_EXTRA_ARGS=, a conffile),
#                  /var/lib/kubelet and /etc/kubernetes/manifests; Depends kubernetes-cni;
#                  the service is not enabled (the kubeadm install guide enables it;
#                  kubeadm init/join start it); postinst reloads systemd
#   kubectl        /usr/bin/kubectl
#   cri-tools      /usr/bin/crictl
#   kubernetes-cni /opt/cni/bin/{bridge,host-local,loopback,portmap}
# and the versions VERSION-1.1, architecture, section, priority.  Added:
# every package Depends on python3 and openssl (what the fakes run on), and
# kubelet carries the fake control-plane "images" in
# /usr/lib/fake-kubernetes/images.  Not copied: the real Depends on
# iptables, conntrack, ethtool, socat, ebtables (testbed nodes reach no
# Debian mirror; the testbed rootfs has conntrack and iptables).
set -eu
[ $# -ge 2 ] || {
	sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
	exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../kube" && pwd)
# The real tools' flag tables, the project's own (../cli/*.flags, written by
# tests/tools/cli-flags.sh from the real helm and kubectl, kubeadm's by hand
# from its sources; tests/fakes/README.md, "Flags"), embedded in the
# stand-ins of helm, kubeadm and kubectl: helm's of the same major as the
# Helm built (each of HELMS; --program and --source build the first, or
# FAKE_HELM_VERSION), kubectl's of the minor built (else the nearest
# minor), kubeadm's one table.
HELMS="4.3.0 3.22.0 4.2.4 3.18.4"
HELM=${FAKE_HELM_VERSION:-${HELMS%% *}}
CLI=$(cd "$HERE/../cli" && pwd)
KUBERNETES_YAML=$HERE/../../../roles/kubernetes.yaml
FLAGS_PY=$HERE/../../tools/cli-flags.py
# table TOOL VERSION: the table build.sh embeds for TOOL of VERSION
table() {
	case $1 in
	kubeadm) echo "$CLI/kubeadm.flags" ;;
	helm) python3 "$FLAGS_PY" pick helm "$HELM" "$CLI" ;;
	kubectl) python3 "$FLAGS_PY" pick kubectl "$2" "$CLI" ;;
	esac
}
# source_of VERSION TOOL DEST: the fake TOOL of Kubernetes VERSION as one
# Python source (what program() compiles; tests/t0401-fakes.sh loads its
# functions).
source_of() {
	mkdir -p "$(dirname "$3")"
	{
		echo "FAKE_VERSION = \"$1\""
		[ "$2" != helm ] || echo "HELM_FAKE_VERSION = \"$HELM\""
		# kubeadm's etcd and CoreDNS images: its minor's row of roles/kubernetes.yaml
		if [ "$2" = kubeadm ]; then
			sed -n "/^  \"${1%.*}\":\$/,/^  \"/s/^    \(etcd\|coredns\)_image: *\([^ ]*\)\$/\1 \2/p" "$KUBERNETES_YAML" |
				while read -r _k _ref; do
					echo "KUBEADM_$(echo "$_k" | tr '[:lower:]' '[:upper:]')_IMAGE = \"$_ref\""
				done
		fi
		case $2 in
		helm | kubeadm | kubectl)
			_t=$(table "$2" "$1") || exit 1
			echo "# The real $2's flags per command: tests/fakes/cli/$(basename "$_t")"
			python3 "$FLAGS_PY" embed "$_t" || exit 1
			;;
		esac
		cat "$SRC/fakekube.py"
		echo
		case $2 in
		kubelet)
			# what the hub stand-in loads into Debian's JupyterHub (chart_jupyterhub.py)
			printf 'JHUB_FAKE_HUB_SOURCE = %s\n' "$(python3 -c 'import sys; print(repr(open(sys.argv[1], encoding="utf-8").read()))' "$SRC/jupyterhub_fake_hub.py")"
			;;
		esac
		case $2 in
		helm | kubelet)
			for f in "$SRC"/chart_*.py; do
				[ -f "$f" ] || continue
				cat "$f"
				echo
			done
			;;
		esac
		cat "$SRC/$2.py"
	} >"$3"
}

# program VERSION TOOL DEST: the fake TOOL of Kubernetes VERSION, in one file:
# tests/fakes/kube/fakekube.py, the charts' code (helm, kubelet) and TOOL.py
# after the real tool's flag table, compiled here.  DEST carries that
# bytecode (marshal, base85) and the source (zlib, base85): a node whose
# Python is this one's runs the bytecode, any other compiles the source.
# Python compiles a script's own code on every run and caches only
# imported modules' (__pycache__, which would be a file on the node no
# package owns): the ~3000 lines of kubectl cost ~20 ms of CPU per call,
# and a cluster test calls the stand-ins hundreds of times.
program() {
	source_of "$1" "$2" "$3.py"
	python3 - "$3.py" "$3" "$2" "$1" <<'PY' || {
import base64, importlib.util, marshal, sys, zlib
src_path, dest, tool, version = sys.argv[1:]
src = open(src_path, encoding="utf-8").read()
try:
    code = compile(src, tool, "exec")
except SyntaxError as e:
    sys.exit("build.sh: %s does not compile: %s (line %s of %s)" % (tool, e.msg, e.lineno, src_path))
b85 = lambda b: base64.b85encode(b).decode()
with open(dest, "w", encoding="utf-8") as f:
    f.write("#!/usr/bin/python3\n")
    f.write("# Fake %s (Kubernetes %s) for provision's tests: tests/fakes/kube/%s.py\n" % (tool, version, tool))
    f.write("# after tests/fakes/kube/fakekube.py; see tests/fakes/README.md.  Below: that\n")
    f.write("# code compiled by CPython (magic %s), and its source for any other\n" % importlib.util.MAGIC_NUMBER.hex())
    f.write("# Python (tests/fakes/kube-debs/build.sh, program()).\n")
    f.write("import sys\n")
    f.write("_MAGIC = %r\n" % importlib.util.MAGIC_NUMBER)
    f.write("_CODE = %r\n" % b85(marshal.dumps(code)))
    f.write("_SOURCE = %r\n" % b85(zlib.compress(src.encode(), 9)))
    f.write("def _code():\n"
            "    import base64, importlib.util\n"
            "    if importlib.util.MAGIC_NUMBER == _MAGIC:\n"
            "        import marshal\n"
            "        return marshal.loads(base64.b85decode(_CODE))\n"
            "    import zlib\n"
            "    return compile(zlib.decompress(base64.b85decode(_SOURCE)).decode(), %r, \"exec\")\n" % tool)
    f.write("exec(_code())\n")
PY
		rm -f "$3.py"
		exit 1
	}
	rm -f "$3.py"
	chmod 0755 "$3"
	python3 -m py_compile "$3" 2>/dev/null || {
		echo "build.sh: $2's launcher does not compile:" >&2
		python3 -m py_compile "$3"
		exit 1
	}
	rm -rf "$(dirname "$3")/__pycache__"
}

# build.sh --program TOOL VERSION DEST: only that one program (tests of the
# fakes themselves, tests/t0401-fakes.sh); --source: its Python source.
if [ "$1" = --program ] && [ $# = 4 ]; then
	program "$3" "$2" "$4"
	exit 0
fi
if [ "$1" = --source ] && [ $# = 4 ]; then
	source_of "$3" "$2" "$4"
	exit 0
fi
OUT=$1
shift
for c in dpkg-deb apt-ftparchive gpg gzip python3; do
	command -v "$c" >/dev/null || {
		echo "build.sh: $c is missing (Debian packages dpkg, apt-utils, gnupg, python3)" >&2
		exit 1
	}
done
ARCH=$(dpkg --print-architecture)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STAGE=$OUT/stage
rm -rf "$STAGE" "$OUT/repo"
mkdir -p "$STAGE" "$OUT/repo/artifacts"

# control DIR PACKAGE VERSION DEPENDS DESCRIPTION
control() {
	mkdir -p "$1/DEBIAN"
	{
		echo "Package: $2"
		echo "Version: $3"
		echo "Architecture: $ARCH"
		echo "Maintainer: provision tests <kube-debs@provision.invalid>"
		echo "Section: admin"
		echo "Priority: optional"
		[ -z "$4" ] || echo "Depends: $4"
		echo "Description: test fake of $2 (provision's tests, not Kubernetes)"
		echo " $5"
	} >"$1/DEBIAN/control"
}

postinst_reload() {
	cat >"$1/DEBIAN/postinst" <<-'EOF'
		#!/bin/sh
		set -e
		if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
	EOF
	chmod 0755 "$1/DEBIAN/postinst"
}

deb() { # DIR OUTFILE
	dpkg-deb --root-owner-group --build "$1" "$2" >/dev/null
}

cni_plugin() {
	cat <<-EOF
		#!/bin/sh
		# CNI plugin $1 (kubernetes-cni test stand-in, provision's tests/fakes):
		# answers CNI_COMMAND=VERSION like every CNI plugin; pod networking is
		# the fake kubelet's.
		if [ "\${CNI_COMMAND:-}" = VERSION ]; then
		  echo '{"cniVersion":"1.0.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0"]}'
		  exit 0
		fi
		echo '{"code":4,"msg":"the $1 stand-in only answers VERSION"}'
		exit 1
	EOF
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

built_minors=
for v in "$@"; do
	case $v in
	[0-9]*.[0-9]*.[0-9]*) ;;
	*)
		echo "build.sh: '$v' is not a version X.Y.Z" >&2
		exit 2
		;;
	esac
	minor=$(echo "$v" | cut -d . -f 1-2)
	mnum=$(echo "$v" | cut -d . -f 2)
	repo=$OUT/repo/core:/stable:/v$minor/deb
	mkdir -p "$repo"
	common="python3 (>= 3.9), openssl"

	d=$STAGE/kubeadm-$v
	program "$v" kubeadm "$d/usr/bin/kubeadm"
	mkdir -p "$d/usr/lib/systemd/system/kubelet.service.d"
	cp "$SRC/units/10-kubeadm.conf" "$d/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
	if [ "$mnum" -ge 30 ]; then
		deps="cri-tools (>= $minor.0), $common"
	else
		deps="kubelet (>= 1.19.0), kubectl (>= 1.19.0), kubernetes-cni (>= 1.2.0), cri-tools (>= $minor.0), $common"
	fi
	control "$d" kubeadm "$v-1.1" "$deps" "Sets up a fake control plane and joins nodes (kubeadm's commands, files, output)."
	postinst_reload "$d"
	deb "$d" "$repo/kubeadm_$v-1.1_$ARCH.deb"

	d=$STAGE/kubelet-$v
	program "$v" kubelet "$d/usr/bin/kubelet"
	for img in kube-apiserver kube-controller-manager kube-scheduler; do
		program "$v" "$img" "$d/usr/lib/fake-kubernetes/images/$img"
	done
	# the container toolkit image's containerd editor (chart_gpu_operator.py runs it)
	if [ -f "$HERE/../nvidia/toolkit_containerd.py" ]; then
		cp "$HERE/../nvidia/toolkit_containerd.py" "$d/usr/lib/fake-kubernetes/images/nvidia-toolkit-containerd"
	fi
	mkdir -p "$d/usr/lib/systemd/system" "$d/etc/default" "$d/var/lib/kubelet" "$d/etc/kubernetes/manifests"
	cp "$SRC/units/kubelet.service" "$d/usr/lib/systemd/system/kubelet.service"
	echo "KUBELET_EXTRA_ARGS=" >"$d/etc/default/kubelet"
	: >"$d/var/lib/kubelet/.kubelet-keep"
	: >"$d/etc/kubernetes/manifests/.kubelet-keep"
	control "$d" kubelet "$v-1.1" "kubernetes-cni (>= 1.2.0), iproute2, $common" \
		"The node agent as a systemd service; runs the fake control plane from static pods."
	echo /etc/default/kubelet >"$d/DEBIAN/conffiles"
	postinst_reload "$d"
	deb "$d" "$repo/kubelet_$v-1.1_$ARCH.deb"

	d=$STAGE/kubectl-$v
	program "$v" kubectl "$d/usr/bin/kubectl"
	control "$d" kubectl "$v-1.1" "$common" "The Kubernetes command-line tool against the fake API server."
	deb "$d" "$repo/kubectl_$v-1.1_$ARCH.deb"

	case " $built_minors " in
	*" $minor "*) ;;
	*)
		built_minors="$built_minors $minor"
		d=$STAGE/cri-tools-$minor
		program "$v" crictl "$d/usr/bin/crictl"
		control "$d" cri-tools "$minor.1-1.1" "$common" "crictl: the fake kubelet's containers in crictl's shapes."
		deb "$d" "$repo/cri-tools_$minor.1-1.1_$ARCH.deb"
		d=$STAGE/kubernetes-cni-$minor
		mkdir -p "$d/opt/cni/bin"
		for p in bridge host-local loopback portmap; do
			cni_plugin "$p" >"$d/opt/cni/bin/$p"
			chmod 0755 "$d/opt/cni/bin/$p"
		done
		control "$d" kubernetes-cni 1.4.0-1.1 "" "CNI plugins that answer VERSION."
		deb "$d" "$repo/kubernetes-cni_1.4.0-1.1_$ARCH.deb"
		;;
	esac
done

last=$(for v in "$@"; do echo "$v"; done | sort -V | tail -n 1)
for HELM in $HELMS; do
	rm -rf "$STAGE/helm"
	d=$STAGE/helm/linux-amd64
	program "$last" helm "$d/helm"
	echo "Apache License 2.0 (the real archive's LICENSE; this is provision's test fake of helm)" >"$d/LICENSE"
	echo "helm v$HELM: provision's test fake (tests/fakes/kube/helm.py)" >"$d/README.md"
	tar -C "$STAGE/helm" --owner=0 --group=0 --mtime=@0 --sort=name -czf "$OUT/repo/artifacts/helm-v$HELM-linux-amd64.tar.gz" linux-amd64
done
chart_version() {
	sed -n 's/^version: *"\{0,1\}\([^" ]*\)"\{0,1\}$/\1/p' "$1/Chart.yaml"
}
for c in "$HERE"/../charts/*/; do
	[ -f "$c/Chart.yaml" ] || continue
	name=$(basename "$c")
	ver=$(chart_version "$c")
	tar -C "$c/.." --owner=0 --group=0 --mtime=@0 --sort=name --exclude="$name/versions" \
		-czf "$OUT/repo/artifacts/$name-$ver.tgz" "$name"
	for v in "$c"versions/*/; do
		[ -f "$v/Chart.yaml" ] || continue
		rm -rf "$STAGE/chart"
		mkdir -p "$STAGE/chart"
		cp -R "$c" "$STAGE/chart/$name"
		rm -rf "$STAGE/chart/$name/versions"
		cp "$v"* "$STAGE/chart/$name/"
		tar -C "$STAGE/chart" --owner=0 --group=0 --mtime=@0 --sort=name \
			-czf "$OUT/repo/artifacts/$name-$(chart_version "$v").tgz" "$name"
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
gpg --batch --quiet --homedir "$key_home" --with-colons --fingerprint |
	awk -F: '$1 == "fpr" { print $10; exit }' >"$OUT/key.fpr"
rm -rf "$STAGE"
