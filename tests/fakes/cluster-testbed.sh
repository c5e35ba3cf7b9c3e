# tests/fakes/cluster-testbed.sh: sourced by the cluster tests
# (tests/t04NN-*.sh) after tests/lib.sh.  POSIX sh.
#
#   cluster_testbed NODES K8S_VERSION [TESTBED-UP-ARGS...] || skip_all_cases "$CLUSTER_SKIP"
#   (CLUSTER_MORE_VERSIONS="1.31.2": the fake packages of those versions too,
#   e.g. the next minor for an upgrade; CLUSTER_ETCD=real: Debian's real etcd
#   of the nodes' release (../testbed/etcd-debs.sh) in every node's
#   /usr/local/bin, so that the kubelet runs the etcd static pod as that
#   etcd and the API servers keep their objects in it -- README.md, "etcd:
#   real in the cluster")
#
# starts NODES nspawn testbed nodes (node-1 the control plane, the others
# workers), builds the fake Kubernetes packages of K8S_VERSION
# (kube-debs/build.sh) and serves their repository on the testbed bridge
# for at most 30 minutes, and sets:
#   TESTBED  tests/testbed/testbed.sh       TB     the testbed directory
#   INV      inventory using the repository (cluster.apt_mirror)
#   INV_ADMIN  the same with user admin (sudo)
#   STATE    the state folder the tests give provision (--state)
#   ROLES    a copy of roles/ whose artifacts.yaml names the fakes' archives
#            (helm, charts) on that server, with their SHA-256: give it as
#            --roles; provision fetches, verifies and pushes them as it
#            does the real ones
#   CACHE    the artifact cache the tests give provision (PROVISION_CACHE
#            is exported with it)
#   REGISTRY the testbed's registry (tests/registry: Debian's docker-registry
#            on $TESTBED_HOST_ADDR:5000) holding a small image under every
#            name of `provision fetch --images --list` (the stand-in charts'
#            values, this version's kubeadm list, Flannel's): INV and
#            INV_ADMIN mirror each upstream registry of the list to it
#            (cluster.registries, upstream: false), so the pull phase
#            (roles images-init, images-addons) pulls for real, through the
#            nodes' containerd, and nothing reaches the internet
#   INV_BARE INV without those cluster.registries (a test that gives its
#            own); $TEST_DIR/images.list holds the list (--list lines);
#            CLUSTER_MORE_IMAGES: refs a test's own inventory adds (set
#            before cluster_testbed)
#   TESTBED_* from the testbed's testbed.env
# Cleanup (testbed down, HTTP server stopped) is registered with
# test_at_exit.  nspawn keeps /proc/sys read-only inside the nodes, so the
# kernel role's sysctl step skips there; net.ipv4.ip_forward=1 (what that
# step sets on a real node, and what kubeadm's preflight wants) is set in
# each node's network namespace from the host.
# shellcheck shell=sh disable=SC2034 # the variables are for the test that sources this

cluster_testbed() {
	CLUSTER_SKIP=
	if [ "$(id -u)" != 0 ]; then
		CLUSTER_SKIP="needs root (testbed nodes)"
		return 1
	fi
	for c in systemd-nspawn dpkg-deb apt-ftparchive gpg timeout python3 openssl ip; do
		if ! command -v "$c" >/dev/null 2>&1; then
			CLUSTER_SKIP="needs $c"
			return 1
		fi
	done
	TESTBED=$SRC_ROOT/tests/testbed/testbed.sh
	TB=$TEST_DIR/tb
	INV=$TEST_DIR/inventory.yaml
	INV_ADMIN=$TEST_DIR/inventory-admin.yaml
	STATE=$TEST_DIR/state
	_nodes=$1 _k8s=$2
	shift 2
	if ! "$TESTBED" up "$TB" --nspawn "$_nodes" --chroot 0 --kubernetes-version "$_k8s" "$@" >"$TEST_DIR/testbed.log" 2>&1; then
		tail -n 20 "$TEST_DIR/testbed.log" | sed 's/^/# /'
		CLUSTER_SKIP="the testbed did not start (see above)"
		return 1
	fi
	test_at_exit "'$TESTBED' down '$TB'"
	# shellcheck disable=SC1091
	. "$TB/testbed.env"
	if [ "${CLUSTER_ETCD:-}" = real ]; then
		cluster_etcd || return 1
	fi
	# shellcheck disable=SC2086 # CLUSTER_MORE_VERSIONS: versions, one word each
	if ! "$SRC_ROOT/tests/fakes/kube-debs/build.sh" "$TEST_DIR/kube" "$_k8s" ${CLUSTER_MORE_VERSIONS:-} >"$TEST_DIR/kube.log" 2>&1; then
		sed 's/^/# /' "$TEST_DIR/kube.log"
		CLUSTER_SKIP="the fake Kubernetes packages did not build (see above)"
		return 1
	fi
	cluster_serve "$TEST_DIR/kube/repo" "$TEST_DIR/http.log" || {
		sed 's/^/# /' "$TEST_DIR/http.log"
		CLUSTER_SKIP="the repository's HTTP server did not start"
		return 1
	}
	port=$CLUSTER_PORT
	for f in inventory inventory-admin; do
		sed -e "s|^  kubernetes_version: .*|&\n  apt_mirror: http://$TESTBED_HOST_ADDR:$port\n  apt_key_fingerprint: $(cat "$TEST_DIR/kube/key.fpr")|" "$TB/$f.yaml" >"$TEST_DIR/$f.yaml"
	done
	ROLES=$TEST_DIR/roles
	CACHE=$TEST_DIR/cache
	PROVISION_CACHE=$CACHE
	export PROVISION_CACHE
	test_roles "$ROLES" "http://$TESTBED_HOST_ADDR:$port/artifacts" "$TEST_DIR/kube/repo/artifacts" || {
		CLUSTER_SKIP="cannot write the test roles folder"
		return 1
	}
	awk '!/^#/ { print $5 }' "$TB/nodes.txt" | while read -r ns; do
		ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=1
	done
	cluster_registry || return 1
}

# cluster_serve DIR LOG: python's http.server serving DIR on
# $TESTBED_HOST_ADDR at a free port (CLUSTER_PORT), for at most 30 minutes
# and stopped at exit (test_at_exit), its output in LOG; 1 when it does
# not serve within 5 s.  Not in $(...): the exit handler would be the
# subshell's.
cluster_serve() {
	timeout 1800 python3 -u -m http.server --bind "$TESTBED_HOST_ADDR" --directory "$1" 0 >"$2" 2>&1 &
	test_at_exit "kill $!"
	_i=0
	until CLUSTER_PORT=$(sed -n 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p' "$2") && [ -n "$CLUSTER_PORT" ]; do
		_i=$((_i + 1))
		[ "$_i" -lt 50 ] || return 1
		sleep 0.1
	done
}

# cluster_etcd: etcd, etcdctl (and etcdutl) of Debian's etcd-server and
# etcd-client of the nodes' release into every node (CLUSTER_ETCD=real).
cluster_etcd() {
	_etcd=$(sh "$SRC_ROOT/tests/testbed/etcd-debs.sh" "${PROVISION_TESTBED_SUITE:-bookworm}" 2>"$TEST_DIR/etcd-debs.log") || {
		sed 's/^/# /' "$TEST_DIR/etcd-debs.log"
		CLUSTER_SKIP="cannot fetch Debian's etcd (see above)"
		return 1
	}
	for _n in $TESTBED_NODES; do
		for _b in etcd etcdctl etcdutl; do
			[ -x "$_etcd/bin/$_b" ] || continue
			"$TESTBED" exec "$TB" "$_n" sh -c "cat >/usr/local/bin/$_b && chmod 0755 /usr/local/bin/$_b" <"$_etcd/bin/$_b" || {
				CLUSTER_SKIP="cannot copy etcd into $_n"
				return 1
			}
		done
	done
}

# cluster_registry: the testbed's registry (see REGISTRY above), each image
# 4 KiB (registry_images shares the blobs, so the set costs one image).  The
# list is that of the most a test makes of the testbed's inventory: NFS
# storage, the hub enabled, every worker with a GPU (the GPU Operator's
# operands; not its driver container, for which no OS is known here and
# which a testbed's GPU node never runs: its fake driver answers), at
# K8S_VERSION and at each of CLUSTER_MORE_VERSIONS.
cluster_registry() {
	# shellcheck source=tests/registry/lib.sh
	. "$SRC_ROOT/tests/registry/lib.sh"
	if ! command -v docker-registry >/dev/null 2>&1; then
		CLUSTER_SKIP="needs docker-registry (make deps)"
		return 1
	fi
	if ! "$BUILD/provision" fetch -i "$INV" --roles "$ROLES" >"$TEST_DIR/fetch.log" 2>&1; then
		sed 's/^/# /' "$TEST_DIR/fetch.log"
		CLUSTER_SKIP="provision fetch failed (see above)"
		return 1
	fi
	: >"$TEST_DIR/images.list"
	for _v in "$_k8s" ${CLUSTER_MORE_VERSIONS:-}; do
		python3 - "$INV" "$TEST_DIR/inventory-images.yaml" "$_v" <<-'EOF'
			import re, sys
			src, dst, ver = sys.argv[1:]
			s = open(src).read()
			s = re.sub(r'(?m)^  kubernetes_version: .*$', '  kubernetes_version: "%s"' % ver, s)
			s = s.replace("jupyterhub:\n  enabled: false\n",
			              "storage:\n  nfs:\n    server: node-1\njupyterhub:\n  admin_users: [lab-admin]\n")
			s = re.sub(r"(  - name: node-1\n    address: \S+\n    roles: \[)control-plane\]", r"\1control-plane, nfs-server]", s)
			s = re.sub(r"(    roles: \[worker\])", r"\1\n    gpus: 1", s)
			open(dst, "w").write(s)
		EOF
		# its charts too (the NFS provisioner's, the hub's), for their values
		"$BUILD/provision" fetch -i "$TEST_DIR/inventory-images.yaml" --roles "$ROLES" >>"$TEST_DIR/fetch.log" 2>&1 || :
		"$BUILD/provision" fetch -i "$TEST_DIR/inventory-images.yaml" --roles "$ROLES" --state "$TEST_DIR/no-state" \
			--images --list >>"$TEST_DIR/images.list" 2>>"$TEST_DIR/fetch.log" || :
	done
	if ! [ -s "$TEST_DIR/images.list" ]; then
		sed 's/^/# /' "$TEST_DIR/fetch.log"
		CLUSTER_SKIP="provision fetch --images --list listed nothing (see above)"
		return 1
	fi
	# the images a test's own inventory adds (t0450's notebook image), as
	# fetch --images --list writes them: REF, then what it does not use
	for _ref in ${CLUSTER_MORE_IMAGES:-}; do
		printf '%s\tlinux/amd64\t(the test)\n' "$_ref" >>"$TEST_DIR/images.list"
	done
	# PATH:TAG=4k per ref: the ref without its registry host
	# shellcheck disable=SC2046 # one spec a word
	_root=$(registry_images $(cut -f 1 "$TEST_DIR/images.list" | sort -u | sed 's|^[^/]*/||; s|$|=4k|')) || {
		CLUSTER_SKIP="registry_images failed"
		return 1
	}
	registry_start lab "$TESTBED_HOST_ADDR:5000" --root "$_root" || {
		CLUSTER_SKIP="the testbed's registry did not start"
		return 1
	}
	REGISTRY=http://$TESTBED_HOST_ADDR:5000
	INV_BARE=$TEST_DIR/inventory-bare.yaml
	cp "$INV" "$INV_BARE"
	for f in inventory inventory-admin; do
		cut -f 1 "$TEST_DIR/images.list" | sed 's|/.*||' | sort -u | awk -v url="$REGISTRY" '
			BEGIN { print "  registries:" }
			{ printf "    %s:\n      mirrors: [{url: %s}]\n      upstream: false\n", $1, url }
		' >"$TEST_DIR/registries.yaml"
		sed -i "/^  kubernetes_version: /r $TEST_DIR/registries.yaml" "$TEST_DIR/$f.yaml"
	done
}

# test_roles DIR URL FILES: DIR becomes a copy of roles/ whose
# artifacts.yaml has, for every file of FILES named like the last part of
# an artifact's URL, URL/FILE and that file's SHA-256 instead.
test_roles() {
	rm -rf "$1"
	cp -R "$SRC_ROOT/roles" "$1" || return 1
	python3 - "$1/artifacts.yaml" "$2" "$3" <<-'EOF'
		import hashlib, os, re, sys
		path, url, files = sys.argv[1:]
		text = open(path).read()
		out, name = [], None
		for ln in text.split("\n"):
		    m = re.match(r"^  url: (\S+)$", ln)
		    if m and os.path.isfile(os.path.join(files, m.group(1).rsplit("/", 1)[-1])):
		        name = m.group(1).rsplit("/", 1)[-1]
		        ln = "  url: %s/%s" % (url, name)
		    elif name and re.match(r"^  sha256: ", ln):
		        ln = "  sha256: " + hashlib.sha256(open(os.path.join(files, name), "rb").read()).hexdigest()
		        name = None
		    out.append(ln)
		open(path, "w").write("\n".join(out))
	EOF
}

# knob NODE NAME [CONTENT]: write a test knob of the fakes on NODE
# (tests/fakes/README.md); without CONTENT an empty file.
knob() {
	printf '%s' "${3:-}" | "$TESTBED" exec "$TB" "$1" sh -c "mkdir -p /etc/fake-kubernetes/knobs && cat >/etc/fake-kubernetes/knobs/$2"
}

# unknob NODE NAME: remove it.
unknob() {
	"$TESTBED" exec "$TB" "$1" rm -f "/etc/fake-kubernetes/knobs/$2"
}

# secrets_collected OUT: the strings no file may hold, one a line: every
# bootstrap token the fake API server stored (knob record-tokens), their
# secret halves, and three base64 lines of each CA key and the
# service-account key of the control plane (node-1).
secrets_collected() {
	"$TESTBED" exec "$TB" node-1 cat /var/lib/fake-kubernetes/tokens.log >"$1.tokens"
	cut -d . -f 2 "$1.tokens" >"$1"
	cat "$1.tokens" >>"$1"
	rm -f "$1.tokens"
	for k in ca etcd/ca front-proxy-ca sa; do
		"$TESTBED" exec "$TB" node-1 sed -n '2p;5p;10p' "/etc/kubernetes/pki/$k.key" >>"$1"
	done
}

# files_written OUT: every file of this test's folder but the nodes' own
# disks (tb/nodes/*/upper), the package build and the lists of secrets:
# provision's state folder, outputs, node logs the test collected.
files_written() {
	(cd "$TEST_DIR" && find . \( -path ./kube -o -path './tb/nodes/*/upper' -o -path './tb/nodes/*/work' -o -path ./tb/layer \) -prune \
		-o -type f ! -name 'secrets.list*' -print) >"$1"
}

# collect_node_logs DIR: every node's kubelet journal and pod logs.
collect_node_logs() {
	mkdir -p "$1"
	for n in $TESTBED_NODES; do
		"$TESTBED" exec "$TB" "$n" journalctl --no-pager -u kubelet >"$1/$n.kubelet.journal" 2>&1 || true
		"$TESTBED" exec "$TB" "$n" sh -c 'cat /var/log/pods/*/*/*.log 2>/dev/null' >"$1/$n.pods.log" || true
	done
}

# logins NODE: how many SSH logins the node's sshd has accepted so far.
logins() {
	grep -c 'Accepted publickey' "$TB/nodes/$1/sshd.log" || true
}

# on_tty PASSWORD OUT ARGS...: provision ARGS on a terminal of its own
# (script(1)), each "sudo password for the nodes:" prompt answered with
# PASSWORD once provision waits for it; OUT gets what the terminal showed
# (without the carriage returns), OUT.prompts how many prompts it made.
# Returns provision's exit status.  ARGS hold no single quote.
on_tty() {
	_pw=$1 _out=$2
	shift 2
	_cmd="'$PROVISION'"
	for _a in "$@"; do _cmd="$_cmd '$_a'"; done
	rm -f "$_out.in" "$_out.tty"
	mkfifo "$_out.in"
	script -qfec "$_cmd" /dev/null <"$_out.in" >"$_out.tty" 2>&1 &
	_pid=$!
	exec 9>"$_out.in"
	_answered=0
	while kill -0 "$_pid" 2>/dev/null; do
		_n=$(grep -c 'sudo password for the nodes:' "$_out.tty" || true)
		if [ "$_n" -gt "$_answered" ]; then
			sleep 0.5 # the prompt is up; let it turn the echo off first
			printf '%s\n' "$_pw" >&9
			_answered=$((_answered + 1))
		fi
		sleep 0.1
	done
	exec 9>&-
	wait "$_pid"
	_rc=$?
	tr -d '\r' <"$_out.tty" >"$_out"
	grep -c 'sudo password for the nodes:' "$_out" >"$_out.prompts" || true
	rm -f "$_out.in" "$_out.tty"
	return "$_rc"
}
