#!/bin/sh
# t0270-containerd-releases: the releases tier (tests/releases/README.md).
# Debian's real containerd of three releases -- 1.6 (bookworm), 1.7
# (trixie), 2.1 (sid), each from its own suite in a cached root file system
# (tests/releases/rootfs.sh) -- reads the config.toml that roles/containerd
# renders, plus, on a GPU node, what the GPU Operator's toolkit writes into
# the file roles/gpu-operator's values name (CONTAINERD_CONFIG of
# toolkit.env; the pinned toolkit v1.20.0 writes its runtimes into the
# drop-in of RUNTIME_DROP_IN_CONFIG, default /etc/containerd/conf.d/99-nvidia.toml;
# what goes into it is written here by tests/fakes/nvidia/toolkit_containerd.py
# as toolkit v1.16.1 wrote it: the stand-in has not moved to v1.20.0, which
# starts the drop-in from the whole CRI section of `containerd config
# dump`).  Judged by the real tools only:
# `containerd config dump` must have runc with SystemdCgroup = true (and on
# the GPU node the nvidia runtime with SystemdCgroup = true and its binary
# under /usr/local/nvidia/toolkit), `ctr plugins ls` the CRI plugin(s) ok.
# One containerd start per release and node kind; the dump excerpts and
# the CRI plugin lines are printed as "# ..." lines (evidence).
#
# Templates are rendered by tests/tools/render (the code `provision up`
# renders them with) with the values a node has at that point of `provision
# up`: set.containerd_major from the tree's own `containerd --version` (as
# roles/containerd 10-install hands it over), set.containerd_nvidia "none"
# on the CPU node and "default" on the GPU node (roles/lib.sh
# pv_nvidia_runtime once the toolkit installed its runtime, which the GPU
# node's tree then has: stand-in binaries), and the facts of a recorded
# machine with this containerd version.
#
# Then, per release, the registry pulls (tests/releases/pulls.sh): the
# files roles/containerd writes for an inventory with cluster.http_proxy
# and a registry with a mirror that needs credentials (config.toml, and
# registry-files.tmpl put in place by the role's own step 15-registries,
# run in the node's tree with the credential provision would hand it), the
# daemon started with the proxy drop-in's environment, and the node's ctr
# (with pv_registry_env's environment and --hosts-dir, as a pull on a node
# runs it) pulls from the mirror, then, with the mirror stopped, from the
# upstream registry; the three servers' logs say which answered.
#
# Knob: PROVISION_TEST_RELEASES=0 skips the tier.  The ASan pass of .ci/run
# sets it: of provision's C code this script runs only the template renderer
# on the two templates t0200 and t0425 render under the sanitizers too; the
# rest is Debian's containerd, which the sanitizers do not look at.
# Cold cache: three debootstraps (tests/releases/README.md has the times).
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

[ "${PROVISION_TEST_RELEASES:-1}" != 0 ] || test_skip_all "PROVISION_TEST_RELEASES=0"
test_need_root
test_need_cmd debootstrap unshare timeout flock python3 ip chroot
RENDER=$BUILD/tests/tools/render
[ -x "$RENDER" ] || {
	echo "# $RENDER is missing: run make tests"
	exit 1
}
REL=$SRC_ROOT/tests/releases
TOOLKIT=$SRC_ROOT/tests/fakes/nvidia/toolkit_containerd.py
# the values.yaml of the chart version roles/artifacts.yaml pins
GPUOP=$(sed -n '/^gpu-operator-chart:/,/^$/s|^  url: .*/gpu-operator-\(v[0-9][0-9.]*\)\.tgz$|\1|p' "$SRC_ROOT/roles/artifacts.yaml")
UPSTREAM_VALUES=$UPSTREAM/gpu-operator-$GPUOP/values.yaml
SUITES=${PROVISION_RELEASES_SUITES:-bookworm trixie sid}
export REL TOOLKIT RENDER UPSTREAM_VALUES

# Evidence: FILE's lines as "# LABEL: ..." in the log, passing or not.
exec 3>&1
note() {
	awk -v l="$1" '{ print "# " l ": " $0 }' "$2" >&3
}

# The two nodes: a CPU control plane and a GPU worker.
cat >"$TEST_DIR/inventory.yaml" <<'EOF'
cluster:
  name: releases
  kubernetes_version: "1.30.4"
ssh:
  user: admin
jupyterhub:
  enabled: false
nodes:
  - name: cpu
    address: 10.0.0.1
    roles: [control-plane, worker]
  - name: gpu
    address: 10.0.0.2
    roles: [worker]
    gpus: 1
EOF

# facts KIND VERSION: a recorded machine of that kind with this containerd.
facts() {
	case $1 in
	gpu) f=$SRC_ROOT/tests/facts/rtx3070-ubuntu2404-joined.facts ;;
	*) f=$SRC_ROOT/tests/facts/debian12-host-nogpu.facts ;;
	esac
	grep -v '^containerd_version=' "$f"
	echo "containerd_version=$2"
}

# toolkit_env VALUES: the toolkit's settings in the GPU Operator's values,
# as NAME=VALUE lines: toolkit.env, then TOOLKIT_INSTALL_DIR
# (toolkit.installDir, the chart's default when the values leave it out)
# and RUNTIME_CLASS (operator.runtimeClass, which the operator writes over
# the env's CONTAINERD_RUNTIME_CLASS; the chart's default "nvidia").
toolkit_env() {
	awk '
	/^[a-zA-Z]/ { sect = $1 }
	sect == "toolkit:" && $1 == "-" && $2 == "name:" { name = $3; next }
	sect == "toolkit:" && name != "" && $1 == "value:" {
		v = $0; sub(/^[^:]*: */, "", v); gsub(/^"|"$/, "", v); print name "=" v; name = ""; next }
	sect == "toolkit:" && $1 == "installDir:" { v = $2; gsub(/"/, "", v); dir = v }
	sect == "operator:" && $1 == "runtimeClass:" { v = $2; gsub(/"/, "", v); class = v }
	END {
		if (dir != "") print "TOOLKIT_INSTALL_DIR=" dir
		if (class != "") print "RUNTIME_CLASS=" class
	}' "$1"
}

# node SUITE KIND: render, (GPU) run the toolkit, start the tree's containerd
# once; the results in $TEST_DIR/SUITE-KIND/.
node() {
	suite=$1 kind=$2 d=$TEST_DIR/$1-$2
	root=$(cat "$TEST_DIR/$suite.root")
	version=$(awk '{ print $3 }' "$root/.containerd-version" | sed 's/^v//; s/[~+-].*//')
	major=${version%%.*}
	rm -rf "$d"
	mkdir -p "$d/upper/etc/containerd"
	facts "$kind" "$version" >"$d/facts"
	if [ "$kind" = gpu ]; then nv=default; else nv=none; fi
	"$RENDER" template "$SRC_ROOT/roles" containerd config.toml.tmpl "$TEST_DIR/inventory.yaml" "$kind" \
		"$d/facts" "containerd_major=$major" "containerd_nvidia=$nv" >"$d/upper/etc/containerd/config.toml"
	: >"$d/prep.sh"
	if [ "$kind" = gpu ]; then
		"$RENDER" template "$SRC_ROOT/roles" gpu-operator values.yaml.tmpl "$TEST_DIR/inventory.yaml" \
			"$kind" "$d/facts" >"$d/values.yaml"
		toolkit_env "$d/values.yaml" >"$d/toolkit.env"
		grep -q '^TOOLKIT_INSTALL_DIR=' "$d/toolkit.env" || {
			[ -f "$UPSTREAM_VALUES" ] || {
				echo "no toolkit.installDir in the values and no $UPSTREAM_VALUES for the chart's default"
				return 1
			}
			toolkit_env "$UPSTREAM_VALUES" | grep '^TOOLKIT_INSTALL_DIR=' >>"$d/toolkit.env"
		}
		grep -q '^CONTAINERD_CONFIG=/' "$d/toolkit.env" || {
			echo "the values name no CONTAINERD_CONFIG for the toolkit:"
			cat "$d/values.yaml"
			return 1
		}
		python3 - "$d/toolkit.env" "$TOOLKIT" >"$d/prep.sh" <<'PY'
import shlex, sys
env = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if "=" in l)
rdir = env.pop("TOOLKIT_INSTALL_DIR").rstrip("/") + "/toolkit"
cls = env.pop("RUNTIME_CLASS", "nvidia")
env["CONTAINERD_RUNTIME_CLASS"] = cls
q = shlex.quote
print("# the GPU Operator's toolkit on this node (sh prep.sh ROOT)")
print("set -e")
print("# what its installer leaves: the runtime binaries (stand-ins)")
print("mkdir -p \"$1\"%s" % q(rdir))
for b in ("", ".cdi", ".legacy"):
    p = q(rdir + "/nvidia-container-runtime" + b)
    print("printf '#!/bin/sh\\nexec runc \"$@\"\\n' >\"$1\"%s; chmod 0755 \"$1\"%s" % (p, p))
print("# then `containerd setup %s`, its env from the values" % rdir)
parts = ["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
for k, v in sorted(env.items()):
    # the file is the node's: under its root as seen from here
    parts.append('CONTAINERD_CONFIG="$1"' + q(v) if k == "CONTAINERD_CONFIG" else q(k + "=" + v))
# v1.20.0 writes the runtimes into the drop-in (RUNTIME_DROP_IN_CONFIG, by
# default in containerd's conf.d), not into CONTAINERD_CONFIG
drop = env.get("RUNTIME_DROP_IN_CONFIG", "/etc/containerd/conf.d/99-nvidia.toml")
parts += [q(sys.executable), q(sys.argv[2]), "setup", "--config", '"$1"' + q(drop), q(rdir)]
print(" ".join(parts))
PY
	fi
	sh "$REL/node.sh" "$root" "$d" "$d/prep.sh" >"$d/node.out" 2>&1 || {
		cat "$d/node.out"
		return 1
	}
	# The evidence: the runtimes of the dump, the CRI plugin lines.
	python3 - "$d/dump.txt" >"$d/excerpt" <<'PY'
import re, sys
keep = re.compile(r"^\s*(imports|runtime_type|SystemdCgroup|BinaryName|default_runtime_name)\s*=")
inside = False
for line in open(sys.argv[1]):
    s = line.rstrip("\n")
    if s.lstrip().startswith("["):
        inside = ".runtimes." in s and not s.rstrip().endswith("]]")
        if inside:
            print(s.strip())
        continue
    if keep.match(s) and (inside or "default_runtime_name" in s or s.startswith("imports")):
        print("  " + s.strip())
PY
	grep -i 'cri' "$d/plugins.txt" >"$d/cri" || true
}

# check SUITE KIND: what containerd made of it (the dump, parsed as TOML;
# the plugin states); prints every problem.
check() {
	d=$TEST_DIR/$1-$2
	status=$(cat "$d/status")
	python3 - "$d" "$2" "$status" <<'PY'
import sys, tomllib
d, kind, status = sys.argv[1:4]
bad = []
try:
    dump = tomllib.load(open(d + "/dump.txt", "rb"))
except Exception as e:
    dump = {}
    bad.append("containerd config dump: %s (%s)" % (e, open(d + "/dump.err").read().strip()[-300:]))
plugins = dump.get("plugins", {})
cri = plugins.get("io.containerd.cri.v1.runtime") or plugins.get("io.containerd.grpc.v1.cri") or {}
ctrd = cri.get("containerd", {})
rts = ctrd.get("runtimes", {})
dflt = ctrd.get("default_runtime_name")
if dump and dflt not in rts:
    bad.append("default_runtime_name = %r has no runtime (runtimes: %s)" % (dflt, sorted(rts)))
want = ["runc"] + (["nvidia"] if kind == "gpu" else [])
for name in want:
    rt = rts.get(name)
    if rt is None:
        bad.append("no runtimes.%s in the dump (runtimes: %s)" % (name, sorted(rts) or "none"))
        continue
    opts = rt.get("options", {})
    if opts.get("SystemdCgroup") is not True:
        bad.append("runtimes.%s: SystemdCgroup = %r" % (name, opts.get("SystemdCgroup")))
    if name == "nvidia" and not str(opts.get("BinaryName", "")).startswith("/usr/local/nvidia/toolkit/"):
        bad.append("runtimes.nvidia: BinaryName = %r" % opts.get("BinaryName"))
reg = (plugins.get("io.containerd.cri.v1.images") or plugins.get("io.containerd.grpc.v1.cri") or {}).get("registry", {})
if dump and reg.get("config_path") != "/etc/containerd/certs.d":
    bad.append("registry config_path = %r, not /etc/containerd/certs.d" % reg.get("config_path"))
if status != "ok":
    bad.append("daemon: " + status)
else:
    rows = [l.split() for l in open(d + "/plugins.txt") if "cri" in l.split()[1:2] or l.split()[:1] == ["io.containerd.cri.v1"]]
    if not any(r[:2] == ["io.containerd.grpc.v1", "cri"] for r in rows):
        bad.append("ctr plugins ls: no io.containerd.grpc.v1 cri")
    for r in rows:
        if r[-1] != "ok":
            bad.append("ctr plugins ls: %s %s %s" % (r[0], r[1], r[-1]))
    log = open(d + "/containerd.log").read().splitlines()
    for l in log:
        if "failed to load plugin" in l and "cri" in l:
            bad.append("containerd.log: " + l[l.find("msg="):][:400])
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
}

# The toolkit stand-in against the facts of the toolkit it copies (v1.16.1,
# gpu-operator v24.6.1's; the pinned v26.7.0 runs v1.20.0): into a
# file that does not exist, `containerd setup` with the operator's env
# writes exactly the drop-in the facts record (its nvidia runtime; the
# stand-in adds nvidia-cdi and nvidia-legacy the same way, GetRuntimes);
# a version-3 file is refused as the real one refuses it.
SETUP_FACTS=$UPSTREAM/nvidia-container-toolkit-v1.16.1/containerd-setup.json
if test_have_upstream nvidia-container-toolkit-v1.16.1/containerd-setup.json; then
	export SETUP_FACTS
	test_case "toolkit stand-in: the drop-in toolkit v1.16.1 writes (facts), version 3 refused" '
		CONTAINERD_CONFIG=$PWD/d/t.toml CONTAINERD_SET_AS_DEFAULT=false CONTAINERD_RESTART_MODE=none \
			python3 "$TOOLKIT" setup /usr/local/nvidia/toolkit 2>setup.err
		python3 -c "
import json, sys, tomllib
want = json.load(open(sys.argv[1]))[\"drop_in_without_runc\"]
got = tomllib.load(open(sys.argv[2], \"rb\"))
rts = got[\"plugins\"][\"io.containerd.grpc.v1.cri\"][\"containerd\"][\"runtimes\"]
assert sorted(rts) == [\"nvidia\", \"nvidia-cdi\", \"nvidia-legacy\"], sorted(rts)
del rts[\"nvidia-cdi\"], rts[\"nvidia-legacy\"]
assert got == want, (got, want)
" "$SETUP_FACTS" d/t.toml
		printf "version = 3\n" >v3.toml
		expect_status 1 python3 "$TOOLKIT" setup --config v3.toml --restart-mode=none /usr/local/nvidia/toolkit 2>v3.err
		expect_grep "unsupported config version: 3" v3.err
	'
else
	test_skip "toolkit stand-in: the drop-in toolkit v1.16.1 writes (facts)" "$UPSTREAM_MISSING"
fi

# The pulls' inventory: the proxy, a registry with a mirror behind basic auth.
cat >"$TEST_DIR/pulls-inventory.yaml" <<EOF
cluster:
  name: releases
  kubernetes_version: "1.30.4"
  http_proxy: http://198.18.255.3:3128
  registries:
    198.18.255.1:5000:
      server: http://198.18.255.1:5000
      mirrors:
        - url: http://198.18.255.2:5000
          username: lab
          password_file: $TEST_DIR/mirror-password
ssh:
  user: admin
jupyterhub:
  enabled: false
nodes:
  - name: cpu
    address: 10.0.0.1
    roles: [control-plane, worker]
EOF
printf 'mirror-pass-%s\n' "$$" >"$TEST_DIR/mirror-password"

# pulls SUITE: the files roles/containerd writes, the node started with the
# proxy's environment, then tests/releases/pulls.sh; results in SUITE-pulls/.
pulls() {
	d=$TEST_DIR/$1-pulls
	root=$(cat "$TEST_DIR/$1.root")
	version=$(awk '{ print $3 }' "$root/.containerd-version" | sed 's/^v//; s/[~+-].*//')
	rm -rf "$d"
	mkdir -p "$d/upper/etc/containerd" "$d/upper/etc/provision/containerd"
	facts cpu "$version" >"$d/facts"
	"$RENDER" template "$SRC_ROOT/roles" containerd config.toml.tmpl "$TEST_DIR/pulls-inventory.yaml" cpu \
		"$d/facts" "containerd_major=${version%%.*}" containerd_nvidia=none >"$d/upper/etc/containerd/config.toml"
	"$RENDER" template "$SRC_ROOT/roles" containerd registry-files.tmpl "$TEST_DIR/pulls-inventory.yaml" cpu \
		"$d/facts" >"$d/upper/etc/provision/containerd/registry-files"
	# what provision hands the node for the mirror's password (registry 1, mirror 1)
	auth="Basic $(printf 'lab:%s' "$(cat "$TEST_DIR/mirror-password")" | base64 -w0)"
	{
		echo "REG_ROOT=$REG_ROOT"
		echo "SRC_ROOT=$SRC_ROOT"
		echo "MIRROR_PASSWORD=$TEST_DIR/mirror-password"
	} >"$d/pulls.env"
	# PREP: the role's step puts the files in place in the node's tree, then the
	# daemon's environment from the drop-in, ctr's from pv_registry_env
	cat >"$d/prep.sh" <<-EOF
		set -e
		# the handed secret as provision leaves it for the step: a 0600 file (roles/README.md)
		mkdir -p -m 0700 "\$1/run/provision/secrets/t0270"
		(umask 077 && printf '%s' '$auth' >"\$1/run/provision/secrets/t0270/registry_auth_1_1")
		{ cat "$SRC_ROOT/roles/lib.sh"; echo 'set -- apply'; cat "$SRC_ROOT/roles/containerd/steps/15-registries.sh"; } |
			chroot "\$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin PROVISION_STATE_DIR=/var/lib/provision \
			PROVISION_SECRETS=/run/provision/secrets/t0270 sh -s >"$d/step.out" 2>&1
		rm -rf "\$1/run/provision/secrets/t0270"
		sed -n 's/^Environment=//p' "\$1/etc/systemd/system/containerd.service.d/http-proxy.conf" | tr -d '"' | tr ' ' '\n' |
			grep -E '^(HTTP_PROXY|HTTPS_PROXY|NO_PROXY)=' >"$d/containerd.env"
		(
			. "$SRC_ROOT/roles/lib.sh"
			PROVISION_HTTP_PROXY=\$(sed -n 's/^HTTP_PROXY=//p' "$d/containerd.env")
			PROVISION_CONTAINERD_NO_PROXY=\$(sed -n 's/^NO_PROXY=//p' "$d/containerd.env")
			pv_registry_env
			env | grep -Ei '^(https?|no)_proxy=' | sort
		) >"$d/ctr.env"
	EOF
	sh "$REL/node.sh" "$root" "$d" "$d/prep.sh" "$REL/pulls.sh" >"$d/node.out" 2>&1 || {
		cat "$d/node.out"
		return 1
	}
}

# pulls_check SUITE: what the servers saw; prints every problem.
pulls_check() {
	d=$TEST_DIR/$1-pulls
	bad=0
	[ "$(cat "$d/status")" = ok ] || { echo "daemon: $(cat "$d/status")"; bad=1; }
	grep -q "^wrote /etc/containerd/certs.d/198.18.255.1:5000/hosts.toml" "$d/step.out" ||
		{ echo "15-registries: $(cat "$d/step.out")"; bad=1; }
	[ "$(stat -c %a "$d/upper/etc/containerd/certs.d/198.18.255.1:5000/hosts.toml")" = 600 ] ||
		{ echo "hosts.toml with a credential is not 0600"; bad=1; }
	[ ! -s "$d/then.out" ] || { echo "pulls.sh: $(tail -n 5 "$d/then.out")"; bad=1; }
	for t in 1 2; do
		[ "$(cut -d ' ' -f 1 "$d/pull-$t.status" 2>/dev/null)" = 0 ] ||
			{ echo "pull $t failed: $(tail -n 3 "$d/pull-$t.out" 2>/dev/null)"; bad=1; }
		grep -q "198.18.255.1:5000/provision-test/small:$t " "$d/images.txt" ||
			{ echo "image small:$t not in ctr images ls"; bad=1; }
	done
	# 1: the mirror answered containerd, with the credential; the upstream saw only the mirror
	grep -E '"(HEAD|GET) /v2/provision-test/small/manifests/1[?" ].*" 200 .*"containerd/' "$d/mirror.log" >"$d/mirror.hits" ||
		{ echo "the mirror did not serve small:1 to containerd"; bad=1; }
	if grep -E '"(HEAD|GET) /v2/provision-test/small/manifests/1[?" ].*"containerd/' "$d/upstream.log"; then
		echo "containerd asked the upstream for small:1 (the mirror was up)"
		bad=1
	fi
	grep -E 'auth.user.name="?lab.*http.request.uri="?/v2/provision-test/small/manifests/1' "$d/mirror.log" >/dev/null ||
		{ echo "the mirror's log names no user lab for small:1 (the credential was not sent)"; bad=1; }
	# 2: the mirror down, the upstream answered containerd
	grep -E '"(HEAD|GET) /v2/provision-test/small/manifests/2[?" ].*" 200 .*"containerd/' "$d/upstream.log" >"$d/upstream.hits" ||
		{ echo "the upstream did not serve small:2 to containerd"; bad=1; }
	# every request of containerd went through the proxy
	grep -E ' (HEAD|GET) http://198.18.255.2:5000/v2/provision-test/small/manifests/1[? ]' "$d/proxy.log" >"$d/proxy.hits" ||
		{ echo "no request for small:1 in the proxy's log"; bad=1; }
	grep -E ' (HEAD|GET) http://198.18.255.1:5000/v2/provision-test/small/manifests/2[? ]' "$d/proxy.log" >>"$d/proxy.hits" ||
		{ echo "no request for small:2 in the proxy's log"; bad=1; }
	return $bad
}

REG_ROOT=
if command -v docker-registry >/dev/null 2>&1 && command -v squid >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then
	# shellcheck source=tests/registry/lib.sh
	. "$SRC_ROOT/tests/registry/lib.sh"
	REG_ROOT=$(registry_images "provision-test/small:1=64k,index" "provision-test/small:2=64k+8k")
fi
export REG_ROOT

for suite in $SUITES; do
	export suite
	test_case "$suite: the cached tree with $suite's own containerd (tests/releases/rootfs.sh)" '
		start=$(date +%s)
		sh "$REL/rootfs.sh" "$suite" >"$TEST_DIR/$suite.root" 2>rootfs.err || { cat rootfs.err; exit 1; }
		root=$(cat "$TEST_DIR/$suite.root")
		echo "$(cat "$root/.containerd-version") ($(($(date +%s) - start)) s)" >"$TEST_DIR/$suite.version"
		cat rootfs.err >>"$TEST_DIR/$suite.version"
		grep -q " $suite main" "$root/etc/apt/sources.list"
	'
	[ -f "$TEST_DIR/$suite.version" ] && note "$suite" "$TEST_DIR/$suite.version"
	for kind in cpu gpu; do
		export kind
		test_case "$suite: $kind node: containerd config dump has runc SystemdCgroup = true$([ $kind = gpu ] && echo ' and the nvidia runtime'); ctr plugins ls: CRI ok" '
			[ -s "$TEST_DIR/$suite.root" ]
			node "$suite" "$kind"
			check "$suite" "$kind"
		'
		d=$TEST_DIR/$suite-$kind
		[ -f "$d/excerpt" ] && note "$suite $kind dump" "$d/excerpt"
		[ -f "$d/cri" ] && note "$suite $kind ctr plugins ls | grep cri" "$d/cri"
	done
	if [ -z "$REG_ROOT" ]; then
		test_skip "$suite: ctr pulls through hosts.toml and proxy" "needs docker-registry, squid and curl (make deps)"
		continue
	fi
	test_case "$suite: ctr pulls through provision's hosts.toml and proxy: from the mirror (with its credential), then, the mirror down, from the upstream" '
		[ -s "$TEST_DIR/$suite.root" ]
		pulls "$suite"
		pulls_check "$suite"
	'
	d=$TEST_DIR/$suite-pulls
	for t in 1 2; do
		if [ -f "$d/pull-$t.status" ]; then
			echo "pull small:$t: exit $(cut -d " " -f 1 "$d/pull-$t.status"), $(cut -d " " -f 2 "$d/pull-$t.status") ms" >"$d/pull-$t.note"
			note "$suite pull" "$d/pull-$t.note"
		fi
	done
	[ -f "$d/mirror.hits" ] && note "$suite mirror log" "$d/mirror.hits"
	[ -f "$d/upstream.hits" ] && note "$suite upstream log" "$d/upstream.hits"
	[ -f "$d/proxy.hits" ] && note "$suite proxy log" "$d/proxy.hits"
done
test_done
