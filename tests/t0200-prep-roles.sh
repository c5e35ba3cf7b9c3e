#!/bin/sh
# run.sh: beside others (tests/run.sh: a chroot testbed of its own; nothing here times itself tightly)
# run.sh: about 26 s in CI (beside another; tests/run.sh starts the longest first)
# t0200-prep-roles: `provision up --phases prep,kube-packages,nfs` on
# testbed nodes, judged by the nodes' real state (read with testbed.sh exec,
# not from provision's report): swap entries commented in /etc/fstab with
# the original kept, swap units masked, modules-load and sysctl files in
# place and the network sysctls applied in each node's own network
# namespace, containerd's config with SystemdCgroup and the conf.d imports
# and the service running it, kubeadm/kubelet/kubectl at exactly the pinned
# version and held (fake packages from a signed repository served on the
# testbed bridge, tests/fakes/kube-debs).  Then: a second up changes
# nothing; plan lists exactly a manual change; plan leaves every node's
# files byte-identical.
#
# Nodes: node-1 nspawn (systemd as PID 1; control plane and NFS server),
# node-2..4 chroot.  One nspawn node only: nspawn nodes currently see the
# host's /sys/class/net, so two of them would share the host's MAC address
# and fail preflight.  What this tier cannot do is skipped by the roles and
# asserted as such: NFS (no nfsd or NFS client in the host kernel), the
# containerd service on chroot nodes (no systemd), network sysctls on the
# nspawn node (its /proc/sys is read-only).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

# ---- the roles themselves, without nodes (no root needed)

# Built by `make tests` with the same flags as everything else (sanitizers included).
RENDER=$BUILD/tests/tools/render
[ -x "$RENDER" ] || { echo "# $RENDER is missing: run make tests"; exit 1; }
ROLES_INV=$SRC_ROOT/inventory/lab-a.yaml

test_case "every role loads: role.yaml keys, steps, templates, vars" "
	'$RENDER' check '$SRC_ROOT/roles' >roles.out
	for r in swap-off kernel containerd nvidia kube-packages nfs-server nfs-client; do
		expect_grep \"^\$r \" roles.out
	done
"

if command -v shellcheck >/dev/null 2>&1; then
	test_case "every step passes shellcheck -s sh -x" "
		shellcheck -s sh -x '$SRC_ROOT'/roles/*/steps/*.sh
	"
else
	test_skip "every step passes shellcheck -s sh -x" "no shellcheck"
fi

# containerd_config MAJOR|-: the rendered config.toml, parsed as TOML, as
# "version imports SystemdCgroup-table-path SystemdCgroup runtime_type".
containerd_config() {
	if [ "$1" = - ]; then set --; else set -- "containerd_major=$1"; fi
	"$RENDER" template "$SRC_ROOT/roles" containerd config.toml.tmpl "$ROLES_INV" a-2 - "$@" >config.toml &&
		python3 -c '
import sys, tomllib
d = tomllib.load(open("config.toml", "rb"))
cri = d["plugins"].get("io.containerd.cri.v1.runtime") or d["plugins"]["io.containerd.grpc.v1.cri"]
runc = cri["containerd"]["runtimes"]["runc"]
name = "io.containerd.cri.v1.runtime" if "io.containerd.cri.v1.runtime" in d["plugins"] else "io.containerd.grpc.v1.cri"
print(d["version"], ",".join(d["imports"]), name, runc["options"]["SystemdCgroup"], runc["runtime_type"])'
}

test_case "containerd config: schema 2 for containerd 1.x, 3 for 2.x, valid TOML" "
	expect_eq '2 /etc/containerd/conf.d/*.toml io.containerd.grpc.v1.cri True io.containerd.runc.v2' \"\$(containerd_config 1)\" 'containerd 1.x'
	expect_eq '3 /etc/containerd/conf.d/*.toml io.containerd.cri.v1.runtime True io.containerd.runc.v2' \"\$(containerd_config 2)\" 'containerd 2.x'
	expect_eq '2 /etc/containerd/conf.d/*.toml io.containerd.grpc.v1.cri True io.containerd.runc.v2' \"\$(containerd_config -)\" 'version unknown (plan before install)'
"

test_case "kernel templates: the modules and sysctls" "
	'$RENDER' template '$SRC_ROOT/roles' kernel modules-load.conf.tmpl '$ROLES_INV' a-2 - >mods
	expect_eq 'overlay
br_netfilter' \"\$(grep -v '^#' mods)\" modules
	'$RENDER' template '$SRC_ROOT/roles' kernel sysctl.conf.tmpl '$ROLES_INV' a-2 - >sysctl
	expect_eq 'net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
net.ipv4.ip_forward = 1' \"\$(grep -v '^#' sysctl)\" sysctls
"

# ---- on testbed nodes (root)

skip_nodes() {
	for c in "plan on fresh nodes" "up" "swap-off: fstab" "swap-off: units" "kernel" "containerd" \
		"kube-packages" "second up" "plan after manual changes" "up puts the changed nodes back" "nvidia"; do
		test_skip "$c" "$1"
	done
	test_done
	exit $?
}
[ "$(id -u)" = 0 ] || skip_nodes "needs root (testbed nodes)"
for c in systemd-nspawn dpkg-deb apt-ftparchive gpg timeout; do
	command -v "$c" >/dev/null 2>&1 || skip_nodes "needs $c"
done
TESTBED=$SRC_ROOT/tests/testbed/testbed.sh
TB=$TEST_DIR/tb
INV=$TEST_DIR/inventory.yaml
UP="$PROVISION up -i $INV --roles $SRC_ROOT/roles --phases prep,kube-packages,nfs --no-tui"
PLAN="$PROVISION plan -i $INV --roles $SRC_ROOT/roles --phases prep,kube-packages,nfs --no-tui"
K8S=1.30.4

tb() { "$TESTBED" exec "$TB" "$@"; }

if ! "$TESTBED" up "$TB" --nspawn 1 --chroot 3 --kubernetes-version "$K8S" >"$TEST_DIR/testbed.log" 2>&1; then
	tail -n 20 "$TEST_DIR/testbed.log" | sed 's/^/# /'
	skip_nodes "the testbed did not start (see above)"
fi
test_at_exit "'$TESTBED' down '$TB'"
# shellcheck disable=SC1091
. "$TB/testbed.env"

# The fake Kubernetes repository, served on the testbed bridge only, for at
# most 15 minutes whatever happens to this script.
"$SRC_ROOT/tests/fakes/kube-debs/build.sh" "$TEST_DIR/kube" "$K8S" 1.30.5 >"$TEST_DIR/kube.log" 2>&1 || {
	sed 's/^/# /' "$TEST_DIR/kube.log"
	exit 1
}
timeout 900 python3 -u -m http.server --bind "$TESTBED_HOST_ADDR" --directory "$TEST_DIR/kube/repo" 0 \
	>"$TEST_DIR/http.log" 2>&1 &
http_pid=$!
test_at_exit "kill $http_pid"
i=0
until port=$(sed -n 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p' "$TEST_DIR/http.log") && [ -n "$port" ]; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || {
		echo "# the HTTP server did not start:"
		sed 's/^/# /' "$TEST_DIR/http.log"
		exit 1
	}
	sleep 0.1
done
MIRROR=http://$TESTBED_HOST_ADDR:$port

# The testbed's inventory, plus the mirror (which signs with its own key,
# named by apt_key_fingerprint) and NFS on node-1.  INV_NOPIN: the same
# without the fingerprint (what a mirror or a man in the middle handing out
# a key of its own looks like to roles pinned to pkgs.k8s.io's key).
sed -e "s|^  kubernetes_version: .*|&\n  apt_mirror: $MIRROR|" \
	-e 's/roles: \[control-plane\]/roles: [control-plane, nfs-server]/' "$TB/inventory.yaml" >"$INV.nopin"
printf 'storage:\n  nfs:\n    server: node-1\n    path: /srv/nfs\n' >>"$INV.nopin"
sed -e "s|^  apt_mirror: .*|&\n  apt_key_fingerprint: $(cat "$TEST_DIR/kube/key.fpr")|" "$INV.nopin" >"$INV"

# What the nodes hold before: swap in fstab (by type; the word elsewhere
# must stay), an admin's swap unit file, a containerd drop-in.
FSTAB='# test fstab
UUID=0a1b /               ext4    errors=remount-ro 0 1
/swapfile none swap sw 0 0
UUID=1234-swap	none	swap	sw,pri=5	0	0
LABEL=swapdisk /mnt/swap ext4 defaults 0 2
# /dev/sdb2 none swap sw 0 0'
for n in node-1 node-2; do
	printf '%s\n' "$FSTAB" | tb "$n" sh -c 'cat >/etc/fstab'
done
tb node-1 sh -c 'printf "[Swap]\nWhat=/swapfile2\n" >/etc/systemd/system/swapfile2.swap; systemctl daemon-reload'
tb node-1 sh -c 'mkdir -p /etc/containerd/conf.d && echo "# an admin drop-in: provision must keep it" >/etc/containerd/conf.d/keep.toml'
host_forward=$(cat /proc/sys/net/ipv4/ip_forward)

# snapshot NODE: every file provision or its roles could touch, hashed.
snapshot() {
	# shellcheck disable=SC2016 # expanded by the node's shell
	tb "$1" sh -c '{ find /etc /var/lib/provision /var/lib/dpkg /var/lib/apt/extended_states /srv /usr/local /root -xdev -type l -printf "%p -> %l\\n"
		find /etc /var/lib/provision /var/lib/dpkg /var/lib/apt/extended_states /srv /usr/local /root -xdev -type f -print0 | xargs -0 -r sha256sum; } 2>/dev/null | LC_ALL=C sort'
}
snapshot_all() { # DIR
	mkdir -p "$1"
	for n in $TESTBED_NODES; do snapshot "$n" >"$1/$n"; done
}

test_case "plan on fresh nodes: lists the work and changes no file" "
	snapshot_all before
	$PLAN >plan.out 2>&1 || { cat plan.out; false; }
	snapshot_all after
	for n in $TESTBED_NODES; do
		diff -u before/\$n after/\$n || { echo \"plan changed files on \$n\"; false; }
	done
	expect_grep '^node-2: [0-9]* changes' plan.out
	expect_grep '~ swap-off › 20-fstab' plan.out
	expect_grep '~ kernel › /etc/sysctl.d/99-provision-k8s.conf' plan.out
	expect_grep '~ kube-packages › 20-packages' plan.out
"

test_case "a mirror whose key is not the pinned one: kube-packages refuses it, names both keys, installs nothing" "
	expect_status 1 $PROVISION up -i $INV.nopin --roles $SRC_ROOT/roles --phases kube-packages --no-tui >nopin.out 2>&1
	expect_grep \"\\[node-2\\] kube-packages › 10-repository … failed\" nopin.out
	expect_grep \"Release.key is not the repository's signing key: it is \$(cat kube/key.fpr), the pinned key is DE15B14486CD377B9E876E1A234654DA9A296436\" nopin.out
	expect_grep 'hint: pkgs.k8s.io signs with DE15B14486CD377B9E876E1A234654DA9A296436; a mirror that signs with its own key needs cluster.apt_key_fingerprint' nopin.out
	for n in $TESTBED_NODES; do
		tb \$n test ! -e /etc/apt/keyrings/kubernetes-apt-keyring.asc
		tb \$n test ! -e /etc/apt/sources.list.d/kubernetes.list
	done
"

test_case "up: exit 0, every node done, and the skips say why" "
	$UP >up1.out 2>&1 || { cat up1.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *[0-9]* changed .* 0 failed\" up1.out; done
	expect_grep '\\[node-1\\] nfs-server › 30-export … skipped .*: no nfsd in this kernel' up1.out
	expect_grep '\\[node-2\\] nfs-client › 20-trial-mount … skipped .*: no NFS client in this kernel' up1.out
	expect_grep '\\[node-3\\] containerd › 20-service … skipped .*: systemd is not running on this node' up1.out
	expect_grep '\\[node-1\\] kernel › 20-sysctl … skipped .*read-only in this container' up1.out
	expect_grep '\\[node-1\\] containerd › 20-service … changed' up1.out
"

test_case "swap-off: fstab swap entries commented by type, the original kept" "
	for n in node-1 node-2; do
		tb \$n cat /etc/fstab >fstab.\$n
		tb \$n cat /var/lib/provision/backup/etc/fstab >backup.\$n
		expect_eq \"\$FSTAB\" \"\$(cat backup.\$n)\" \"\$n: backup of the original fstab\"
		expect_eq '# swap off for Kubernetes (provision swap-off): /swapfile none swap sw 0 0' \"\$(grep swapfile fstab.\$n)\" \"\$n: /swapfile entry\"
		expect_grep '^# swap off for Kubernetes (provision swap-off): UUID=1234-swap	none	swap' fstab.\$n
		expect_grep '^LABEL=swapdisk /mnt/swap ext4 defaults 0 2\$' fstab.\$n
		expect_grep '^UUID=0a1b /  ' fstab.\$n
		expect_grep '^# /dev/sdb2 none swap sw 0 0\$' fstab.\$n
		expect_eq 6 \"\$(wc -l <fstab.\$n | tr -d ' ')\" \"\$n: fstab lines\"
		expect_eq '' \"\$(awk '\$0 !~ /^#/ && \$3 == \"swap\"' fstab.\$n)\" \"\$n: active swap entries\"
	done
"

test_case "swap-off: swap.target and swap units masked; the admin's unit file kept" "
	for n in $TESTBED_NODES; do
		expect_eq /dev/null \"\$(tb \$n readlink /etc/systemd/system/swap.target)\" \"\$n: swap.target\"
	done
	expect_eq /dev/null \"\$(tb node-1 readlink /etc/systemd/system/swapfile2.swap)\" 'node-1: swapfile2.swap'
	expect_eq masked \"\$(tb node-1 systemctl is-enabled swapfile2.swap)\" 'node-1: systemctl is-enabled swapfile2.swap'
	tb node-1 cat /var/lib/provision/backup/etc/systemd/system/swapfile2.swap >unit
	expect_grep '^What=/swapfile2' unit
	expect_eq '' \"\$(tb node-1 sh -c 'tail -n +2 /proc/swaps')\" 'active swap on node-1'
"

test_case "kernel: modules-load and sysctl files; sysctls applied in each chroot node's own netns" "
	for n in $TESTBED_NODES; do
		tb \$n cat /etc/modules-load.d/provision-k8s.conf >mods
		expect_eq 'overlay
br_netfilter' \"\$(grep -v '^#' mods)\" \"\$n: modules-load.d\"
		tb \$n cat /etc/sysctl.d/99-provision-k8s.conf >sysctl
		expect_grep '^net.ipv4.ip_forward = 1\$' sysctl
		expect_grep '^net.bridge.bridge-nf-call-iptables = 1\$' sysctl
		expect_grep '^net.bridge.bridge-nf-call-ip6tables = 1\$' sysctl
	done
	for n in node-2 node-3 node-4; do
		expect_eq '1 1 1' \"\$(tb \$n cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/bridge/bridge-nf-call-iptables /proc/sys/net/bridge/bridge-nf-call-ip6tables | paste -sd ' ')\" \"\$n: sysctls\"
	done
	expect_eq '$host_forward' \"\$(cat /proc/sys/net/ipv4/ip_forward)\" 'the host s own ip_forward'
"

test_case "containerd: config with SystemdCgroup and imports; node-1 runs it; conf.d kept" "
	for n in $TESTBED_NODES; do
		tb \$n cat /etc/containerd/config.toml >config
		expect_grep '^version = 2\$' config
		expect_grep '^imports = \\[\"/etc/containerd/conf.d/\\*.toml\"\\]\$' config
		expect_grep '^    SystemdCgroup = true\$' config
		tb \$n test -f /var/lib/provision/backup/etc/containerd/config.toml
	done
	expect_eq active \"\$(tb node-1 systemctl is-active containerd)\" 'containerd on node-1'
	tb node-1 containerd config dump >dump
	expect_grep 'SystemdCgroup = true' dump
	expect_grep 'runtime_type = \"io.containerd.runc.v2\"' dump
	tb node-1 test -f /etc/containerd/conf.d/keep.toml
	tb node-1 ctr version >ctr
	expect_grep '^Server:' ctr
"

test_case "kube-packages: kubeadm, kubelet, kubectl exactly $K8S and held, from the mirror" "
	for n in $TESTBED_NODES; do
		expect_eq '$K8S-1.1 $K8S-1.1 $K8S-1.1' \"\$(tb \$n dpkg-query -W -f='\${Version} ' kubeadm kubelet kubectl | sed 's/ \$//')\" \"\$n: versions\"
		expect_eq 'kubeadm
kubectl
kubelet' \"\$(tb \$n apt-mark showhold)\" \"\$n: held\"
		expect_eq v$K8S \"\$(tb \$n kubeadm version -o short)\" \"\$n: kubeadm version\"
		expect_eq 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.asc] $MIRROR/core:/stable:/v1.30/deb/ /' \"\$(tb \$n grep ^deb /etc/apt/sources.list.d/kubernetes.list)\" \"\$n: apt source\"
		tb \$n grep -q 'BEGIN PGP PUBLIC KEY BLOCK' /etc/apt/keyrings/kubernetes-apt-keyring.asc
	done
"

test_case "a second up changes nothing" "
	$UP >up2.out 2>&1 || { cat up2.out; false; }
	for n in $TESTBED_NODES; do expect_grep \"^\$n  *done  *0 changed .* 0 failed\" up2.out; done
	expect_no_grep ' changed [0-9]' up2.out
"

test_case "plan after manual changes lists exactly them, and changes no file" "
	tb node-2 sh -c 'echo \"/swap2 none swap sw 0 0\" >>/etc/fstab'
	tb node-3 sh -c 'echo \"# a local note\" >>/etc/sysctl.d/99-provision-k8s.conf'
	snapshot_all before2
	$PLAN >plan2.out 2>&1 || { cat plan2.out; false; }
	snapshot_all after2
	for n in $TESTBED_NODES; do
		diff -u before2/\$n after2/\$n || { echo \"plan changed files on \$n\"; false; }
	done
	expect_eq '  ~ swap-off › 20-fstab
  ~ kernel › /etc/sysctl.d/99-provision-k8s.conf' \"\$(grep '^  ~ ' plan2.out)\" 'the changes plan lists'
	expect_grep '^node-2: 1 change' plan2.out
	expect_grep '^node-3: 1 change' plan2.out
	expect_grep '^      -# a local note' plan2.out
	expect_grep '^node-1: no changes' plan2.out
	expect_grep '^node-4: no changes' plan2.out
"

test_case "up puts the changed nodes back" "
	$UP >up3.out 2>&1 || { cat up3.out; false; }
	expect_grep '\\[node-2\\] swap-off › 20-fstab … changed' up3.out
	expect_grep '\\[node-3\\] kernel › /etc/sysctl.d/99-provision-k8s.conf … changed' up3.out
	tb node-2 cat /etc/fstab >f2
	expect_grep '^# swap off for Kubernetes (provision swap-off): /swap2 none swap sw 0 0\$' f2
	expect_eq \"\$FSTAB\" \"\$(tb node-2 cat /var/lib/provision/backup/etc/fstab)\" 'the backup stays the first original'
	$UP >up4.out 2>&1
	expect_no_grep ' changed [0-9]' up4.out
"

# What the no-change checks look at, changed after runs that changed
# nothing: containerd's 20-service skips `containerd config dump` while the
# binary, config.toml, the conf.d drop-ins and the runtimes wanted are what
# its last passing dump saw (its record), so a drop-in added since must
# bring the dump back; 30-units asks systemd once for every unit's state.
cri_dropin() { # the CRI section of a drop-in that replaces config.toml's (containerd 1.x)
	printf '%s\n' 'version = 2' '[plugins."io.containerd.grpc.v1.cri".containerd]' '  default_runtime_name = "crun"' |
		tb node-1 sh -c 'cat >/etc/containerd/conf.d/cri.toml'
}
test_case "drift after no-change runs: an unmasked swap.target is masked again; a drop-in replacing the CRI section fails 20-service" "
	tb node-1 rm /etc/systemd/system/swap.target
	$UP >drift1.out 2>&1 || { cat drift1.out; false; }
	expect_grep '\\[node-1\\] swap-off › 30-units … changed' drift1.out
	expect_eq /dev/null \"\$(tb node-1 readlink /etc/systemd/system/swap.target)\" 'node-1: swap.target masked again'
	tb node-1 test -s /var/lib/provision/containerd-config.dumped
	cri_dropin
	$UP >drift2.out 2>&1 && echo 0 >drift2.rc || echo \$? >drift2.rc
	expect_eq 1 \"\$(cat drift2.rc)\" 'up with the CRI drop-in: exit status' || { cat drift2.out; false; }
	expect_grep '\\[node-1\\] containerd › 20-service … failed .*: containerd config dump: node without a GPU whose default runtime is crun, not runc' drift2.out
	tb node-1 rm /etc/containerd/conf.d/cri.toml
	$UP >drift3.out 2>&1 || { cat drift3.out; false; }
	expect_no_grep ' changed [0-9]' drift3.out
	expect_grep '\\[node-1\\] done: 0 changed' drift3.out
"

# The nvidia role's steps on a node without a GPU, called like provision
# calls them (tests/roles/steps.sh): nvidia-smi stand-ins in /usr/local/bin
# print what the real one prints in each situation (--query-gpu CSV; the
# NVML error after a library upgrade), and two empty packages carry the
# Ubuntu driver package names.
nv_step() { # STEP ACTION -> output in nv.out, exit status of the step
	"$SRC_ROOT/tests/roles/steps.sh" step "$TB" node-2 nvidia "$1" "$2" >nv.out 2>&1
}
fake_smi() { # SHELL-LINES
	printf '#!/bin/sh\n%s\n' "$1" | tb node-2 sh -c 'cat >/usr/local/bin/nvidia-smi && chmod 0755 /usr/local/bin/nvidia-smi'
}
test_case "nvidia: a missing, failing or old driver fails with a hint; driver packages get held" "
	expect_status 2 nv_step 10-driver check
	expect_grep '^::hint install the NVIDIA driver' nv.out
	fake_smi 'echo \"Failed to initialize NVML: Driver/library version mismatch\"; exit 18'
	expect_status 2 nv_step 10-driver check
	expect_grep '^::hint the nvidia kernel module is not loaded' nv.out
	fake_smi 'echo \"0, NVIDIA GeForce GTX 1080 Ti, 470.256.02\"'
	expect_status 2 nv_step 10-driver check
	expect_grep 'driver 470.256.02 is older than 525.60.13, the minimum for CUDA 12.x' nv.out
	fake_smi 'echo \"0, NVIDIA GeForce RTX 3070, 535.183.01\"'
	expect_status 2 nv_step 10-driver check
	expect_grep 'nvidia-smi lists 1 GPU(s), the PCI bus has 0 NVIDIA GPU(s)' nv.out
	tb node-2 rm -f /usr/local/bin/nvidia-smi
	expect_status 0 nv_step 20-hold check
	expect_grep 'no NVIDIA driver package installed' nv.out
	for p in nvidia-driver-535 libnvidia-compute-535; do
		mkdir -p deb-\$p/DEBIAN
		printf 'Package: %s\\nVersion: 535.183.01-0ubuntu1\\nArchitecture: all\\nMaintainer: tests <t@provision.invalid>\\nDescription: empty stand-in\\n' \$p >deb-\$p/DEBIAN/control
		dpkg-deb --root-owner-group --build deb-\$p \$p.deb >/dev/null
		tb node-2 sh -c 'cat >/tmp/p.deb && dpkg -i /tmp/p.deb >/dev/null && rm /tmp/p.deb' <\$p.deb
	done
	expect_status 1 nv_step 20-hold check
	expect_grep '^not held: libnvidia-compute-535 nvidia-driver-535' nv.out
	expect_status 0 nv_step 20-hold apply
	expect_status 0 nv_step 20-hold check
	expect_eq 'kubeadm
kubectl
kubelet
libnvidia-compute-535
nvidia-driver-535' \"\$(tb node-2 apt-mark showhold)\" 'held on node-2'
"

test_done
