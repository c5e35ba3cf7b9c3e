# kubelet (fake) for provision's tests: the node agent, run by systemd as
# kubelet.service with kubeadm's drop-in, on nspawn testbed nodes.
#
# What it copies (kubernetes.io: "kubelet" command reference, "Kubelet
# Configuration (v1beta1)", "Configuring each kubelet in your cluster using
# kubeadm", "TLS bootstrapping", "Create static Pods", "Nodes" (conditions,
# heartbeats, addresses, capacity), "Pod Lifecycle" (phases, conditions,
# container states, CrashLoopBackOff back-off 10 s doubling to 5 min),
# "Network Plugins" (a node is not Ready until a CNI config exists),
# "Logging Architecture" (/var/log/pods/NS_POD_UID/CONTAINER/N.log)):
#   - flags --config, --kubeconfig, --bootstrap-kubeconfig,
#     --container-runtime-endpoint, --pod-infra-container-image,
#     --hostname-override, --node-ip, --node-labels, --v; `--version`.
#   - exits 1 with the real message when /var/lib/kubelet/config.yaml is
#     missing (systemd restarts it every 10 s: the crash loop of a node
#     before kubeadm init/join), and when swap is on while failSwapOn is
#     true (the default).
#   - from 1.35, exits 1 on a cgroup v1 host (/sys/fs/cgroup not cgroup2fs)
#     with the real "kubelet is configured to not run on a host using
#     cgroup v1" unless the config sets failCgroupV1: false (KEP 5573;
#     kubernetes/node-problem-detector#1161 quotes the message).
#   - healthz on 127.0.0.1:10248.
#   - static pods from staticPodPath, started as soon as the kubelet runs,
#     with mirror pods in the API once it answers; TLS bootstrap with
#     bootstrap-kubelet.conf (a CSR for system:node:NAME in system:nodes,
#     signed by the controller manager, kubelet.conf pointing to
#     /var/lib/kubelet/pki/kubelet-client-current.pem); Node registration
#     with the well-known labels, addresses, capacity/allocatable
#     (capacity less the config's kubeReserved and systemReserved and the
#     default 100Mi hard eviction, as "Reserve Compute Resources for
#     System Daemons" describes), nodeInfo and conditions;
#     status every few seconds; Ready only when the runtime answers and a
#     CNI config exists in /etc/cni/net.d, otherwise NotReady with the real
#     "NetworkPluginNotReady ... cni plugin not initialized" message.
#   - pods bound to the node: pods without hostNetwork wait for a CNI config
#     (ContainerCreating); init containers first, in order; $(VAR)
#     expansion and fieldRef env (metadata.name/namespace, spec.nodeName,
#     status.hostIP, status.podIP); hostPath and configMap volumes;
#     persistentVolumeClaim volumes: the pod waits (ContainerCreating) until
#     the claim is Bound, then its volume's folder (nfs or hostPath); a
#     placeholder container logs what its NFS volumes hold when it starts.
#   - a cgroup driver that differs from containerd's (cgroupDriver in the
#     config against SystemdCgroup in `containerd config dump`): the
#     kubelet runs, but every container it starts is killed a few seconds
#     later ("Pod sandbox changed, it will be killed and re-created") and
#     restarted with the CrashLoopBackOff back-off: the control plane
#     answers, then flaps.  (Kubernetes 1.30 with containerd does not
#     detect the mismatch; dockershim used to stop with "misconfiguration:
#     kubelet cgroup driver ... is different from docker cgroup driver".)
#
# Containers: there is no container runtime that works inside a test node,
# so the fake acts out the images it knows (its "image store" is
# /usr/lib/fake-kubernetes/images):
#   kube-apiserver, kube-controller-manager, kube-scheduler: the fake
#     programs of that name, each a transient systemd unit
#     fake-ctr-POD-CONTAINER.service in kubepods.slice (so that, like real
#     containers, they outlive a kubelet restart);
#   Flannel's images, under both of their names: docker.io/flannel/* in
#     Flannel's manifests up to v0.26.3, ghcr.io/flannel-io/* from v0.26.4:
#   flannel running /opt/bin/flanneld: flanneld's start-up (the
#     interface from --iface (a name or an address), else the default
#     route's; the node's podCIDR; /run/flannel/subnet.env; the node's
#     flannel annotations), failing like flanneld when no interface matches
#     or the node has no podCIDR;
#   flannel running /opt/bin/install-conf SRC DEST (the image has it from
#     v0.28.6; older ones fail to start the container like containerd does
#     for a missing executable): the copy of SRC to DEST, as cp below,
#     "usage: ..." unless given exactly two paths;
#   any container whose command is `cp`: the copy, from the image's files
#     (flannel-cni-plugin's /flannel) or a mounted volume to a mounted
#     hostPath: this is how Flannel's install-cni container wrote
#     /etc/cni/net.d/10-flannel.conflist from its ConfigMap before v0.28.6;
#   the images of add-on charts (GPU Operator, NFS provisioner, ...): the
#     image acts of tests/fakes/kube/chart_*.py (fakekube.py, "charts"),
#     which may add extended resources to the node (a device plugin's
#     registration: state "extended", reported in capacity and
#     allocatable) and return a function the kubelet calls about once a
#     second while the container runs (a controller's loop);
#   etcd: the node's REAL etcd when it has one (fakekube.etcd_binary():
#     Debian's etcd-server 3.4/3.5), with the static pod's command, a
#     transient unit like the process images; started (and Ready) once its
#     startupProbe's httpGet answers (kubeadm's /health on 2381); the flags
#     an etcd 3.6 manifest has and 3.4/3.5 lack translated (etcd_args;
#     tests/fakes/README.md, "etcd: real in the cluster"); without one, a
#     placeholder as below;
#   anything else (coredns, kube-proxy, ...): a placeholder that
#     "runs" (state kept by the kubelet).
#
# The container runtime (CRI) as the node's REAL containerd configures it
# (Debian's containerd 1.6 in the test nodes), read once per containerd
# (re)start: `containerd config dump` (the runtimes table, options.BinaryName,
# default_runtime_name, of the version-2 grpc.v1.cri or version-3
# cri.v1.runtime plugin) and `ctr plugins ls` (the CRI plugin ok or error):
#   - a CRI plugin that did not load (e.g. a merged config with no runtime
#     for default_runtime_name): the kubelet exits at start-up like the real
#     one ("validate service connection: validate CRI v1 runtime API ...
#     unknown service runtime.v1.RuntimeService"); while it runs, the node
#     turns NotReady ("container runtime is down") and no container starts;
#   - a pod's runtime handler is its runtimeClassName's RuntimeClass handler
#     (the API server rejects a pod naming a missing RuntimeClass), else ""
#     (containerd's default_runtime_name); a handler containerd has no
#     runtime for, or whose options.BinaryName does not exist, fails the pod
#     sandbox with containerd's messages (ContainerCreating);
#   - extended resources come from device plugins (state "devices": the
#     nvidia.com/gpu UUIDs, "UUID::i" for time-slicing replicas): a
#     container's nvidia.com/gpu limit is allocated from the free ones and
#     handed to it as NVIDIA_VISIBLE_DEVICES, the GPUs' UUIDs (the device
#     plugin's envvar strategy); the GPUs are really in the container
#     (state "injected") only when it runs under a runtime whose BinaryName
#     is an nvidia-container-runtime: runc ignores the variable.  That
#     runtime reads the variable from the container's whole environment,
#     the image's included: a CUDA image's NVIDIA_VISIBLE_DEVICES=all
#     (image_env) gives a container without a GPU limit every GPU of the
#     node, "void"/"none" none;
#   - restartPolicy Never/OnFailure: a container that exits stays terminated
#     (with the terminationMessagePath file's content as its message) and
#     the pod ends Succeeded or Failed.
#
# Test knob: /etc/fake-kubernetes/knobs/crashloop, lines "CONTAINER UP
# DOWN": that container is killed UP seconds after each start and started
# again DOWN seconds later (a crash loop with a fixed period).
# Test knob: kubelet-version, TEXT: the Node's status.nodeInfo.kubeletVersion
# is TEXT (line breaks and all) in place of the kubelet's own version (a
# hostile node: a kubelet's credentials may write its own Node's status).
#
# Image pulls through the node's REAL containerd (knob real-pulls, Puller
# below): before a container (or a pod's sandbox) starts, its image is
# pulled by the node's containerd with `ctr -n k8s.io` through the hosts
# directory roles/containerd writes (/etc/containerd/certs.d, config_path)
# and containerd's service environment (its proxy: ctr of containerd 1.x
# pulls in its own process, so it is given the unit's Environment), one
# image at a time (the kubelet's serializeImagePulls, true by default);
# pull time, bytes and errors are containerd's own.  What the kubelet does
# around it copies pkg/kubelet/images/image_manager.go and
# pkg/kubelet/kuberuntime/kuberuntime_image.go (tests/fakes/README.md,
# "Image pulls"): IfNotPresent (an image whose content is complete in
# containerd, `ctr images check`, is not pulled again), the "Pulling image" / "Successfully pulled image" / "Failed to
# pull image" log lines, the container Waiting in ContainerCreating while
# it pulls, ErrImagePull with the CRI's message when it fails, then
# ImagePullBackOff ("Back-off pulling image ...") for 10 s doubling to
# 300 s per pod and image before it pulls again.  Without the knob the
# images come from the stand-in's image store as they always did.

import copy
import http.client
import http.server
import signal
import threading
import tomllib


# ---------------------------------------------------------------- the node's network, as the real components leave it
# What `kubeadm reset` says it does not clean (kubernetes.io, "kubeadm
# reset"): interfaces, iptables rules, CNI state.  The fakes make them as
# the real ones do, so that provision reset has them to remove:
#   - flanneld (vxlan backend, flannel v0.25 pkg/backend/vxlan and
#     pkg/trafficmngr/iptables): the VXLAN device flannel.1 (VNI 1, UDP
#     8472, on the chosen interface, the subnet's .0/32 address), chains
#     FLANNEL-POSTRTG in nat (jumped to from POSTROUTING, comment "flanneld
#     masq") and FLANNEL-FWD in filter (from FORWARD, "flanneld forward");
#   - the bridge CNI plugin that Flannel's CNI config delegates to: the
#     bridge cni0 with the subnet's gateway .1, and host-local IPAM's
#     allocation files /var/lib/cni/networks/cbr0/IP;
#   - kube-proxy (iptables mode): chains KUBE-SERVICES, KUBE-POSTROUTING,
#     KUBE-FORWARD, KUBE-NODEPORTS... jumped to from the built-in chains
#     with kube-proxy's comments (pkg/proxy/iptables/proxier.go).
# Failures are ignored (a node without iptables simply has no rules).


def _ip(*args):
    return subprocess.run(["ip"] + list(args), capture_output=True, text=True, check=False)


def _ipt(*args):
    return subprocess.run(["iptables", "-w", "5"] + list(args), capture_output=True, text=True, check=False)


def _chain_with_jump(table, chain, parent, comment, position=1):
    _ipt("-t", table, "-N", chain)  # "Chain already exists." the second time
    rule = ["-m", "comment", "--comment", comment, "-j", chain]
    if _ipt("-t", table, "-C", parent, *rule).returncode != 0:
        _ipt("-t", table, "-I", parent, str(position), *rule)


def act_flannel_network(chosen, first, network):
    if _ip("link", "show", "dev", "flannel.1").returncode != 0:
        _ip("link", "add", "flannel.1", "type", "vxlan", "id", "1", "local", chosen[1], "dev", chosen[0],
            "dstport", "8472", "nolearning")
        _ip("link", "set", "flannel.1", "mtu", "1450")
        _ip("addr", "add", first.rsplit(".", 1)[0] + ".0/32", "dev", "flannel.1")
        _ip("link", "set", "flannel.1", "up")
    _chain_with_jump("nat", "FLANNEL-POSTRTG", "POSTROUTING", "flanneld masq")
    _chain_with_jump("filter", "FLANNEL-FWD", "FORWARD", "flanneld forward")
    if _ipt("-t", "filter", "-C", "FLANNEL-FWD", "-s", network, "-j", "ACCEPT").returncode != 0:
        _ipt("-t", "filter", "-A", "FLANNEL-FWD", "-s", network, "-m", "comment", "--comment", "flanneld forward",
             "-j", "ACCEPT")


def act_cni_bridge(gateway_cidr, ip, key):
    if _ip("link", "show", "dev", "cni0").returncode != 0:
        _ip("link", "add", "cni0", "type", "bridge")
        _ip("addr", "add", gateway_cidr, "dev", "cni0")
        _ip("link", "set", "cni0", "up")
    write_file("/var/lib/cni/networks/cbr0/" + ip, "%s\neth0" % key, 0o644)
    write_file("/var/lib/cni/networks/cbr0/last_reserved_ip.0", ip, 0o644)


def act_kube_proxy_rules():
    _chain_with_jump("filter", "KUBE-FIREWALL", "INPUT", "kubernetes firewall for dropping marked packets")
    _chain_with_jump("filter", "KUBE-SERVICES", "OUTPUT", "kubernetes service portals")
    _chain_with_jump("filter", "KUBE-FORWARD", "FORWARD", "kubernetes forwarding rules")
    _chain_with_jump("nat", "KUBE-SERVICES", "PREROUTING", "kubernetes service portals")
    _chain_with_jump("nat", "KUBE-POSTROUTING", "POSTROUTING", "kubernetes postrouting rules")
    _ipt("-t", "nat", "-N", "KUBE-NODEPORTS")
    if _ipt("-t", "nat", "-C", "KUBE-SERVICES", "-j", "KUBE-NODEPORTS").returncode != 0:
        _ipt("-t", "nat", "-A", "KUBE-SERVICES", "-m", "comment", "--comment",
             "kubernetes service nodeports; NOTE: this must be the last rule in this chain", "-j", "KUBE-NODEPORTS")

CONFIG_DEFAULT = "/var/lib/kubelet/config.yaml"
STATE = "/run/fake-kubelet/state.json"
IMAGES = "/usr/lib/fake-kubernetes/images"
CNI_DIR = "/etc/cni/net.d"
PROCESS_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
MISMATCH_KILL_AFTER = 6.0
STATUS_EVERY = 4.0
# mirror pods of static pods: posted this long after the Node registered (the
# real kubelet: once its informer has the Node, then its 10 s status batches)
MIRROR_DELAY = 10.0

# Files inside images that `cp` containers copy out (image -> path -> content).
FLANNEL_PLUGIN = ("#!/bin/sh\n# flannel CNI plugin (test stand-in from provision's tests/fakes): answers\n"
                  "# CNI_COMMAND=VERSION like every CNI plugin; the fake kubelet does the networking.\n"
                  'if [ "${CNI_COMMAND:-}" = VERSION ]; then\n'
                  '  echo \'{"cniVersion":"1.0.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0"]}\'\n'
                  "  exit 0\nfi\necho '{\"code\":4,\"msg\":\"the flannel stand-in only answers VERSION\"}'\nexit 1\n")
IMAGE_FILES = {"flannel/flannel-cni-plugin": {"/flannel": FLANNEL_PLUGIN},
               "flannel-io/flannel-cni-plugin": {"/flannel": FLANNEL_PLUGIN}}
# Flannel's flanneld image under its old and its new name.
FLANNEL_IMAGES = ("flannel/flannel", "flannel-io/flannel")

# The environment images set (their Dockerfiles' ENV), where it matters:
# NVIDIA's CUDA images and the Jupyter docker-stacks CUDA notebooks
# (images/pytorch-notebook/cuda12/Dockerfile: NVIDIA_VISIBLE_DEVICES="all",
# NVIDIA_DRIVER_CAPABILITIES="compute,utility") ask the NVIDIA runtime for
# every GPU of the node.  A pod's own env overrides them.
CUDA_ENV = {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}


def image_env(image):
    """The environment image sets (a copy)."""
    base, tag = image_base(image), image.split("@")[0].rsplit("/", 1)[-1].partition(":")[2]
    if base in ("nvidia/cuda", "nvidia/k8s/cuda-sample") or (base.startswith("jupyter/") and tag.startswith("cuda")):
        return dict(CUDA_ENV)
    return {}


def image_base(image):
    """registry.k8s.io/kube-apiserver:v1.30.4 -> kube-apiserver;
    docker.io/flannel/flannel:v0.25.6 -> flannel/flannel."""
    name = image.split("@")[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    parts = name.split("/")
    if "." in parts[0] or ":" in parts[0] or parts[0] == "localhost":
        parts = parts[1:]
    return "/".join(parts)


def short_base(image):
    return image_base(image).rsplit("/", 1)[-1]



def http_probe(probe):
    """A probe's httpGet (scheme HTTP): 200-399 within timeoutSeconds."""
    g = probe.get("httpGet") or {}
    if not g or (g.get("scheme") or "HTTP").upper() != "HTTP":
        return True  # the fake acts out no other probe
    try:
        conn = http.client.HTTPConnection(g.get("host") or "127.0.0.1", int(g.get("port", 80)),
                                          timeout=min(float(probe.get("timeoutSeconds", 1)), 2.0))
        conn.request("GET", g.get("path") or "/")
        code = conn.getresponse().status
        conn.close()
        return 200 <= code < 400
    except (OSError, http.client.HTTPException, ValueError):
        return False


ETCD_VERSIONS = {}


def etcd_version(binary):
    """(major, minor) of the node's etcd (`etcd --version`), (0, 0) unknown."""
    if binary not in ETCD_VERSIONS:
        try:
            out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        m = re.search(r"etcd Version: (\d+)\.(\d+)", out)
        ETCD_VERSIONS[binary] = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    return ETCD_VERSIONS[binary]


# etcd 3.6's feature gates that 3.4 and 3.5 take as experimental flags
# (what kubeadm writes for an etcd 3.6 image; Debian has 3.4 and 3.5)
ETCD_GATES = {"InitialCorruptCheck": "experimental-initial-corrupt-check"}
# etcd 3.6 flags whose 3.4/3.5 name has the experimental- prefix
ETCD_UNPREFIXED = ("watch-progress-notify-interval",)


def etcd_args(argv, version):
    """The static pod's etcd flags for an etcd 3.4 or 3.5: only what that
    etcd cannot take is translated (tests/fakes/README.md); anything else,
    a gate without an old flag included, is left for etcd to refuse."""
    if version >= (3, 6) or version == (0, 0):
        return list(argv)
    out = []
    for a in argv:
        k, eq, v = a.partition("=")
        if k == "--feature-gates" and eq:
            rest = []
            for g in v.split(","):
                name, _, val = g.partition("=")
                if name.strip() in ETCD_GATES:
                    out.append("--%s=%s" % (ETCD_GATES[name.strip()], val.strip() or "true"))
                elif g:
                    rest.append(g)
            if rest:
                out.append("--feature-gates=" + ",".join(rest))
        elif k.lstrip("-") in ETCD_UNPREFIXED:
            out.append("--experimental-" + k.lstrip("-") + eq + v)
        else:
            out.append(a)
    return out


def cpu_milli(q):
    """A CPU quantity ("500m", "1", "0.5") in millicores."""
    return int(float(q[:-1])) if q.endswith("m") else int(float(q) * 1000)


def mem_kib_of(q):
    """A memory quantity ("1Gi", "512Mi", "100M", bytes) in KiB."""
    for suffix, f in (("Ki", 1), ("Mi", 1024), ("Gi", 1024 ** 2), ("Ti", 1024 ** 3), ("k", 1000 / 1024),
                      ("M", 1e6 / 1024), ("G", 1e9 / 1024)):
        if q.endswith(suffix):
            return int(float(q[:-len(suffix)]) * f)
    return int(float(q) / 1024)

class ContainerFailed(Exception):
    def __init__(self, msg, code=1):
        super().__init__(msg)
        self.code = code


class ContainerExited(Exception):
    """An acted container's process ended with exit status code (0 too);
    message: what it wrote to its terminationMessagePath."""
    def __init__(self, code, message=""):
        super().__init__("exit status %d" % code)
        self.code = code
        self.message = message


CRI_DEAD_START = ('failed to run Kubelet: validate service connection: validate CRI v1 runtime API for endpoint '
                  '"unix:///var/run/containerd/containerd.sock": rpc error: code = Unimplemented desc = unknown service '
                  'runtime.v1.RuntimeService')


def proc_start(pid):
    """The start time (clock ticks after boot) of process pid, None when it
    is gone or a zombie."""
    f = read_file("/proc/%s/stat" % pid, "").rsplit(")", 1)[-1].split()
    return f[19] if len(f) > 19 and f[0] != "Z" else None


def containerd_view():
    """What the running containerd's CRI offers: {"cri": ok|error|None,
    "default": name, "runtimes": {name: BinaryName or ""}}, or None when it
    cannot be read (no containerd: no runtime checks)."""
    try:
        dump = subprocess.run(["containerd", "config", "dump"], capture_output=True, text=True, check=False, timeout=20)
        plug = subprocess.run(["ctr", "plugins", "ls"], capture_output=True, text=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if dump.returncode != 0:
        return None
    try:
        tree = tomllib.loads(dump.stdout)
    except tomllib.TOMLDecodeError:
        return None
    plugins = tree.get("plugins") or {}
    cri = plugins.get("io.containerd.grpc.v1.cri")
    ctd = (cri or {}).get("containerd") if cri is not None else (plugins.get("io.containerd.cri.v1.runtime") or {}).get("containerd")
    ctd = ctd or {}
    runtimes = {}
    for name, rt in (ctd.get("runtimes") or {}).items():
        runtimes[name] = str(((rt or {}).get("options") or {}).get("BinaryName") or "")
    status = None
    if plug.returncode == 0:
        for ln in plug.stdout.splitlines():
            f = ln.split()
            if len(f) >= 4 and ((f[0] == "io.containerd.grpc.v1" and f[1] == "cri")
                                or (f[0] == "io.containerd.cri.v1" and f[1] == "runtime")):
                status = f[-1]
    else:
        return None  # containerd is (re)starting: look again
    return {"cri": status, "default": ctd.get("default_runtime_name", "runc"), "runtimes": runtimes}


# ---------------------------------------------------------------- image pulls through the node's containerd

HOSTS_DIR = "/etc/containerd/certs.d"
PULL_BACKOFF, PULL_BACKOFF_MAX = 10, 300  # kubelet.go: imageBackOff = NewBackOff(backOffPeriod, MaxContainerBackOff)


def normalize_ref(image):
    """The reference containerd's CRI pulls for IMAGE (docker's
    reference.ParseDockerRef, as the CRI plugin normalises): no registry
    host -> docker.io, docker.io's one-element names under library/, no tag
    or digest -> :latest."""
    name, at, digest = image.partition("@")
    first, slash, rest = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        host, path = "docker.io", name
    else:
        host, path = first, rest
    if host == "docker.io" and "/" not in path:
        path = "library/" + path
    if not at and ":" not in path.rsplit("/", 1)[-1]:
        path += ":latest"
    return "%s/%s%s%s" % (host, path, at, digest)


def pull_error_text(ref, err):
    """containerd's CRI error for a failed PullImage as the kubelet gets it
    over gRPC: the CRI plugin wraps the client's error in "failed to pull
    and unpack image %q: %w" (pkg/cri/server/image_pull.go), and
    errdefs.ToGRPC gives code NotFound to a not-found error (the resolver's
    "REF: not found"), Unknown to the rest."""
    code = "NotFound" if err.rstrip().endswith(": not found") else "Unknown"
    return 'rpc error: code = %s desc = failed to pull and unpack image "%s": %s' % (code, ref, err)


class Puller:
    """One image at a time through containerd (serializeImagePulls), in a
    thread of its own so that the kubelet's sync loop goes on meanwhile.
    The pull: `ctr -n k8s.io images pull --hosts-dir HOSTS_DIR REF` with
    containerd's unit environment; where containerd cannot unpack (no
    mounts in a node without CAP_SYS_ADMIN: tests/fakes/README.md), the
    content is fetched all the same (`ctr content fetch`, the same
    resolver, hosts and transfer) and the image counts as pulled."""

    def __init__(self):
        self.lock = threading.Lock()
        self.queue = []
        self.cond = threading.Condition(self.lock)
        self.results = {}   # ref -> ("ok", seconds, bytes) or ("err", message)
        self.pending = set()
        self.listed, self.listed_at = set(), 0
        threading.Thread(target=self.loop, daemon=True).start()

    @staticmethod
    def env():
        """containerd's service environment (systemctl show -p Environment),
        what its own pulls get: the proxy of roles/containerd's drop-in."""
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
        r = subprocess.run(["systemctl", "show", "-p", "Environment", "--value", "containerd.service"],
                           capture_output=True, text=True, check=False)
        for word in r.stdout.split():
            k, eq, v = word.partition("=")
            if eq:
                env[k] = v
        return env

    def present(self, ref):
        """ref's content is all in containerd's store (IfNotPresent)."""
        with self.lock:
            if ref in self.listed and now() - self.listed_at < 60:
                return True
        # present = its content complete (`images check`: "complete (N/N)"), unpacked
        # or not: what provision's pull phase fetches (content fetch) counts too
        r = subprocess.run(["ctr", "-n", "k8s.io", "images", "check"], capture_output=True, text=True,
                           check=False, timeout=30)
        done = set()
        for ln in r.stdout.splitlines()[1:]:
            f = ln.split()
            if len(f) >= 4 and f[3] == "complete":
                done.add(f[0])
        with self.lock:
            self.listed, self.listed_at = done, now()
            return ref in self.listed

    def request(self, ref):
        with self.lock:
            if ref in self.pending or ref in self.results:
                return
            self.pending.add(ref)
            self.queue.append(ref)
            self.cond.notify()

    def take(self, ref):
        """The result of the last pull of ref (once), None while it pulls,
        ("again",) when another container took the result."""
        with self.lock:
            if ref in self.pending:
                return None
            return self.results.pop(ref, ("again",))

    def loop(self):
        while True:
            with self.lock:
                while not self.queue:
                    self.cond.wait()
                ref = self.queue.pop(0)
            res = self.pull(ref)
            with self.lock:
                self.pending.discard(ref)
                self.results[ref] = res
                if res[0] == "ok":
                    self.listed.add(ref)

    def pull(self, ref):
        t0 = now()
        env = self.env()
        base = ["ctr", "-n", "k8s.io"]
        r = subprocess.run(base + ["images", "pull", "--hosts-dir", HOSTS_DIR, ref], capture_output=True, text=True,
                           check=False, env=env, timeout=3600)
        err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        if r.returncode != 0 and re.search(r"unpack|mount|snapshot", err) and "failed to resolve" not in err:
            # the bytes are in the content store; only the unpack failed
            r = subprocess.run(base + ["content", "fetch", "--hosts-dir", HOSTS_DIR, ref], capture_output=True,
                               text=True, check=False, env=env, timeout=3600)
            err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        if r.returncode != 0:
            err = re.sub(r"^ctr: ", "", err) or "ctr exited %d" % r.returncode
            return ("err", pull_error_text(ref, err))
        size = 0
        ls = subprocess.run(base + ["images", "ls", "name==" + ref], capture_output=True, text=True, check=False)
        for ln in ls.stdout.splitlines()[1:]:
            f = ln.split()
            if len(f) >= 5:
                try:
                    size = int(float(f[3]) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}.get(f[4], 1))
                except ValueError:
                    pass
        return ("ok", now() - t0, size)


class Kubelet:
    def __init__(self, flags):
        self.flags = flags
        self.config_path = flags.get("config", CONFIG_DEFAULT)
        self.lock = threading.RLock()
        self.state = {"containers": {}}
        try:
            self.state = json.loads(read_file(STATE))
        except (OSError, ValueError):
            pass
        # the back-off of crashed containers is the kubelet's memory, not the
        # runtime's: a restarted kubelet starts them again at once
        for st in self.state.get("containers", {}).values():
            st.pop("next", None)
            st.pop("delay", None)
            st.pop("pull_asked", None)  # a pull of the kubelet that ran before is no one's now
        self.state.pop("sandbox_pull", None)
        self.client = None
        self.node_name = (flags.get("hostname-override") or socket.gethostname()).lower()
        self.node_ip = flags.get("node-ip") or self.default_ip()
        self.last_status = 0
        self.registered = False
        self.mirror_done = {}
        self.api_pods = {}
        self.pod_status_sent = {}
        self.ticks = {}  # container key -> the loop of an image act
        self.cfg = {}
        self.mismatch = None
        self.sandbox_image = None
        self.registered_at = None
        self.driver_checked = now()
        self.driver_key = None  # the containerd (ctr_key) whose config check_cgroup_driver read
        self.active_now = None  # units_active() during a tick
        self.crv, self.crv_key = None, None  # containerd's version, of that containerd (ctr_key)
        self.ctr_key = None   # (containerd's MainPID, its start time): the view below is of that process
        self.ctr = None
        self.ctr_checked = 0
        self.manifests = {}  # static pod file -> (its text, the pod made of it)
        self.unit_procs = {}  # unit -> (its MainPID, that process's start time)
        self.saved = None    # the state as last written to STATE
        self.puller = None    # Puller, once the knob real-pulls is seen

    # ---- image pulls (knob real-pulls; Puller above)

    def image_ready(self, image, st, who, pod_name):
        """None when image is in containerd, else the container's waiting
        state: ContainerCreating while it pulls, ErrImagePull when the pull
        failed, ImagePullBackOff during the back-off that follows (st: the
        container's state, which keeps the back-off; who: its name)."""
        if knob("real-pulls") is None or not image:
            return None
        if self.puller is None:
            self.puller = Puller()
        ref = normalize_ref(image)
        # a pull this container asked for is taken first: once it is done the
        # image is present too, and its "Successfully pulled image" is due
        if not st.get("pull_asked") and self.puller.present(ref):
            return None
        t = now()
        if t < st.get("pull_next", 0):
            return {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "%s"' % image}}
        res = self.puller.take(ref) if st.get("pull_asked") else None
        if res == ("again",):
            st.pop("pull_asked", None)
            if self.puller.present(ref):
                return None
            res = None
        if res is None:
            if not st.get("pull_asked"):
                st["pull_asked"] = t
                klog("I", "Pulling image", image=image, pod=pod_name)
                self.puller.request(ref)
            return {"waiting": {"reason": "ContainerCreating"}}
        st.pop("pull_asked", None)
        if res[0] == "ok":
            klog("I", "Successfully pulled image", image=image, duration="%.3fs" % res[1], size=res[2], pod=pod_name)
            st.pop("pull_delay", None)
            return None
        msg = res[1]
        klog("E", "Failed to pull image", err=msg, image=image)
        klog("E", "Error syncing pod, skipping", err='failed to "StartContainer" for "%s" with ErrImagePull: "%s"'
             % (who, msg.replace('"', '\\"')), pod=pod_name)
        delay = min(st.get("pull_delay", PULL_BACKOFF / 2) * 2, PULL_BACKOFF_MAX)
        st["pull_delay"], st["pull_next"] = delay, t + delay
        return {"waiting": {"reason": "ErrImagePull", "message": msg}}

    # ---- set-up

    @staticmethod
    def default_ip():
        r = subprocess.run(["ip", "-o", "route", "get", "1.1.1.1"], capture_output=True, text=True, check=False)
        m = re.search(r"\bsrc ([0-9.]+)", r.stdout)
        if m:
            return m.group(1)
        r = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"], capture_output=True, text=True, check=False)
        m = re.search(r"inet ([0-9.]+)/", r.stdout)
        return m.group(1) if m else "127.0.0.1"

    def load_config(self):
        path = self.config_path
        try:
            text = read_file(path)
        except OSError:
            klog("E", "command failed", err='failed to load kubelet config file, path: %s, error: failed to load Kubelet config '
                 'file %s, error failed to read kubelet config file "%s", error: open %s: no such file or directory'
                 % (path, path, path, path))
            sys.exit(1)
        try:
            self.cfg = yaml_load(text) or {}
        except YAMLError as e:
            klog("E", "command failed", err="failed to load kubelet config file, path: %s, error: %s" % (path, e))
            sys.exit(1)

    def check_swap(self):
        swaps = proc_swaps().strip().splitlines()
        if self.cfg.get("failSwapOn", True) and len(swaps) > 1:
            klog("E", "command failed", err="failed to run Kubelet: running with swap on is not supported, please disable swap! "
                 "or set --fail-swap-on flag to false. /proc/swaps contained: [%s]" % " ".join(swaps))
            sys.exit(1)

    def check_cgroup_v1(self):
        """1.35 and later: failCgroupV1 defaults to true, and on a cgroup v1 host
        (/sys/fs/cgroup not cgroup2fs) the kubelet's configuration fails to
        validate (KEP 5573, "cgroup v1 unsupported")."""
        if FAKE_MINOR < 35 or cgroup2_unified():
            return
        if self.cfg.get("failCgroupV1", True):
            klog("E", "command failed", err="failed to validate kubelet configuration, error: kubelet is configured to not "
                 "run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release, "
                 "path: &TypeMeta{Kind:,APIVersion:,}")
            sys.exit(1)
        klog("W", "cgroup v1 support is unsupported and will be removed in a future release")

    def check_cgroup_driver(self):
        want = self.cfg.get("cgroupDriver", "cgroupfs")
        r = subprocess.run(["containerd", "config", "dump"], capture_output=True, text=True, check=False)
        self.sandbox_image = sandbox_image_of(r.stdout)
        m = re.search(r"SystemdCgroup\s*=\s*(true|false)", r.stdout)
        runtime = "systemd" if m and m.group(1) == "true" else "cgroupfs"
        was = self.mismatch
        self.mismatch = None if want == runtime else (want, runtime)
        if self.mismatch and self.mismatch != was:
            klog("W", "cgroup driver of the kubelet differs from the container runtime's; containers will be killed and re-created",
                 kubeletCgroupDriver=want, runtimeCgroupDriver=runtime)

    def containerd(self):
        """The running containerd's CRI view (containerd_view()), read again
        only when containerd was (re)started since; None when not known."""
        if now() - self.ctr_checked < 2 and self.ctr_key is not None:
            return self.ctr
        self.ctr_checked = now()
        if self.ctr_key is not None and self.ctr_key[1] and self.ctr is not None:
            # the process of the last look still runs (the same PID and start
            # time, not a zombie): it is still containerd.service's main
            # process (systemd starts another only once it is gone)
            if proc_start(self.ctr_key[0]) == self.ctr_key[1]:
                return self.ctr
        pid = self.systemctl("show", "-p", "MainPID", "--value", "containerd.service")
        stat = read_file("/proc/%s/stat" % pid, "") if pid.isdigit() and pid != "0" else ""
        key = (pid, stat.rsplit(")", 1)[-1].split()[19] if stat else "")
        if not stat:
            self.ctr_key, self.ctr = key, {"cri": "down", "default": "", "runtimes": {}}
            return self.ctr
        if key != self.ctr_key or self.ctr is None:
            view = containerd_view()
            if view is None:
                self.ctr_key = None
                return None
            self.ctr_key, self.ctr = key, view
            klog("I", "container runtime", cri=view["cri"], defaultRuntime=view["default"],
                 runtimes=",".join(sorted(view["runtimes"])))
        return self.ctr

    def containerd_changed(self, seen):
        """True when the running containerd is not the process `seen` (a
        ctr_key of an earlier look) or cannot be told."""
        self.containerd()
        return self.ctr_key is None or self.ctr_key != seen

    def cri_dead(self):
        v = self.containerd()
        return v is not None and v["cri"] in ("error", "down")

    def sandbox_runtime(self, pod):
        """(handler, binary) the pod's sandbox runs with; raises
        ContainerFailed(msg, 0) (ContainerCreating) when containerd cannot
        create it."""
        spec = pod.get("spec") or {}
        handler = ""
        rc = spec.get("runtimeClassName")
        if rc:
            obj = None
            if self.client is not None:
                try:
                    obj = self.client.get(R("runtimeclasses").path(None, rc))
                except APIError:
                    obj = None
                except ConnError:
                    raise ContainerFailed('failed to lookup RuntimeClass %s: the API server is not reachable' % rc, 0)
            if obj is None:
                raise ContainerFailed('CreatePodSandbox for pod failed: failed to get sandbox runtime handler: '
                                      'failed to lookup RuntimeClass %s: runtimeclass.node.k8s.io "%s" not found' % (rc, rc), 0)
            handler = obj.get("handler", "")
        v = self.containerd()
        if v is None:
            return handler, ""
        name = handler or v["default"]
        if name not in v["runtimes"]:
            raise ContainerFailed('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox '
                                  'runtime: no runtime for "%s" is configured' % name, 0)
        binary = v["runtimes"][name]
        if binary and not os.access(binary, os.X_OK):
            raise ContainerFailed('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd '
                                  'task: failed to create shim task: OCI runtime create failed: unable to retrieve OCI runtime '
                                  'error: exec: "%s": stat %s: no such file or directory: unknown' % (binary, binary), 0)
        return name, binary

    def allocate_devices(self, key, c):
        """The nvidia.com/gpu UUIDs allocated to container key (a device
        plugin's Allocate), [] when it asks for none."""
        want = int(str(((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu", "0")) or 0)
        alloc = self.state.setdefault("alloc", {})
        if want <= 0:
            alloc.pop(key, None)
            return []
        if len(alloc.get(key) or []) == want:
            return alloc[key]
        devs = (self.state.get("devices") or {}).get("nvidia.com/gpu") or []
        used = {u for k, us in alloc.items() if k != key for u in us}
        free = [u for u in devs if u not in used]
        if len(free) < want:
            raise ContainerFailed("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
                                  "Requested: %d, Available: %d, which is unexpected" % (want, len(free)))
        alloc[key] = free[:want]
        return alloc[key]

    def visible_gpus(self, value):
        """The node's GPU UUIDs an NVIDIA_VISIBLE_DEVICES value names."""
        # the GPUs, not the time-slicing replicas the plugin advertises ("UUID::N")
        devs = list(dict.fromkeys(d.split("::")[0] for d in (self.state.get("devices") or {}).get("nvidia.com/gpu") or []))
        if value is None or value.strip() in ("", "void", "none"):
            return []
        if value.strip() == "all":
            return list(devs)
        out = []
        for w in value.split(","):
            w = w.strip()
            if w in devs:
                out.append(w)
            elif w.isdigit() and int(w) < len(devs):
                out.append(devs[int(w)])
        return out

    def container_gpus(self, pod, c):
        """The GPU UUIDs really present in container c (the nvidia runtime
        injected them), [] otherwise."""
        md = pod["metadata"]
        key = "%s/%s/%s/%s" % (md.get("namespace", "default"), md["name"], md.get("uid", "static"), c["name"])
        return (self.state.get("injected") or {}).get(key) or []

    def save(self):
        text = json.dumps(self.state)
        if text == self.saved and os.path.exists(STATE):
            return  # written already
        os.makedirs(os.path.dirname(STATE), exist_ok=True)
        write_file(STATE, text, 0o600)
        self.saved = text

    # ---- API credentials

    def connect(self):
        kc = self.flags.get("kubeconfig")
        if kc and os.path.exists(kc):
            if self.client is None:
                try:
                    self.client = Client.from_kubeconfig(kc, timeout=5, keepalive=True)
                except (KubeconfigError, OSError, ssl.SSLError) as e:
                    klog("E", "Unable to load the kubeconfig", err=str(e))
                    return None
            return self.client
        boot = self.flags.get("bootstrap-kubeconfig")
        if kc and boot and os.path.exists(boot):
            self.tls_bootstrap(boot, kc)
        return None

    def tls_bootstrap(self, boot, kc):
        pki = "/var/lib/kubelet/pki"
        os.makedirs(pki, exist_ok=True)
        key = pki + "/kubelet-client.key.tmp"
        if not os.path.exists(key):
            gen_key(key)
        try:
            c = Client.from_kubeconfig(boot, timeout=5)
            name = self.state.get("csr")
            csr = None
            if name:
                try:
                    csr = c.get(R("csr").path(None, name))
                except APIError as e:
                    if e.code != 404:
                        raise
            if csr is None:
                req = make_csr(key, "system:node:" + self.node_name, ["system:nodes"])
                csr = c.post(R("csr").path(), {
                    "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                    "metadata": {"generateName": "node-csr-"},
                    "spec": {"request": b64(req), "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                             "usages": ["digital signature", "client auth"]}})
                self.state["csr"] = csr["metadata"]["name"]
                self.save()
                klog("I", "Waiting for client certificate to be issued", csr=csr["metadata"]["name"])
            cert = (csr.get("status") or {}).get("certificate")
            if not cert:
                return
            pem = base64.b64decode(cert).decode() + read_file(key)
            path = "%s/kubelet-client-%s.pem" % (pki, time.strftime("%Y-%m-%d-%H-%M-%S"))
            write_file(path, pem, 0o600)
            cur = pki + "/kubelet-client-current.pem"
            if os.path.lexists(cur):
                os.unlink(cur)
            os.symlink(path, cur)
            os.unlink(key)
            b = load_kubeconfig(boot)
            user = "system:node:" + self.node_name
            cluster = b.get("cluster") or "kubernetes"
            text = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: %s\n  name: %s\n"
                    "contexts:\n- context:\n    cluster: %s\n    user: %s\n  name: default-context\n"
                    "current-context: default-context\nkind: Config\npreferences: {}\nusers:\n- name: %s\n  user:\n"
                    "    client-certificate: %s\n    client-key: %s\n"
                    % (b64(b["ca"]), b["server"], cluster, cluster, user, user, cur, cur))
            write_file(kc, text, 0o600)
            self.state.pop("csr", None)
            self.save()
            klog("I", "Certificate rotation detected, shutting down client connections to start using new credentials")
        except (APIError, ConnError, KubeconfigError) as e:
            klog("E", "Failed while requesting a signed certificate from the control plane", err=str(e))

    # ---- containers

    def cstate(self, key):
        return self.state["containers"].setdefault(key, {"restarts": 0})

    @staticmethod
    def unit_name(ns, pod, cname, attempt):
        # one unit per attempt: a unit that is slow to go away (systemd may
        # fail to kill a cgroup inside a container) never blocks the next
        return "fake-ctr-%s-%s-%s-%d" % (ns, pod, cname, attempt)

    @staticmethod
    def systemctl(*args):
        try:
            return subprocess.run(["systemctl"] + list(args), capture_output=True, text=True, check=False,
                                  timeout=20).stdout.strip()
        except subprocess.TimeoutExpired:
            klog("E", "systemctl timed out", args=" ".join(args))
            return ""

    ACTIVE = ("active", "activating", "reloading")

    def units_active(self):
        """{unit: ActiveState} of the units of this node's containers.  While
        the main process systemd named for each of them still runs (the same
        PID and start time, not a zombie: a service is active as long as its
        main process), they are active and systemd is not asked; otherwise
        one systemctl for every fake-ctr-* unit (not one per container), and
        the MainPID of each active one not known yet."""
        mine = {st["unit"] for st in self.state["containers"].values() if st.get("unit")}
        self.unit_procs = {u: k for u, k in self.unit_procs.items() if u in mine}
        if not mine:
            return {}
        if all(u in self.unit_procs and proc_start(self.unit_procs[u][0]) == self.unit_procs[u][1] for u in mine):
            return dict.fromkeys(mine, "active")
        out = self.systemctl("list-units", "--all", "--full", "--plain", "--no-legend", "fake-ctr-*")
        units = {}
        for ln in out.splitlines():
            f = ln.split()
            if len(f) >= 3 and f[0].endswith(".service"):
                units[f[0][:-len(".service")]] = f[2]
        for u in mine:
            k = self.unit_procs.pop(u, None)
            if units.get(u) not in self.ACTIVE:
                continue
            if k is None or proc_start(k[0]) != k[1]:
                pid = self.systemctl("show", "-p", "MainPID", "--value", u + ".service")
                k = (pid, proc_start(pid)) if pid.isdigit() and pid != "0" else None
            if k and k[1]:
                self.unit_procs[u] = k
        return units

    def unit_active(self, unit):
        # a unit the tick's list shows active is; one it does not show (just
        # started, or gone) is asked about alone
        if self.active_now is not None and self.active_now.get(unit) in self.ACTIVE:
            return True
        return self.systemctl("is-active", unit + ".service") in self.ACTIVE

    def unit_kill(self, unit):
        """SIGKILL to the unit's main process, then a stop that does not
        wait (the container's processes die with their main one)."""
        pid = self.systemctl("show", "-p", "MainPID", "--value", unit + ".service")
        if pid.isdigit() and int(pid) > 0:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        self.systemctl("stop", "--no-block", unit + ".service")

    @staticmethod
    def log_path(ns, pod, uid, cname, restarts):
        d = "/var/log/pods/%s_%s_%s/%s" % (ns, pod, uid, cname)
        os.makedirs(d, exist_ok=True)
        return "%s/%d.log" % (d, restarts)

    def container_log(self, path, line, stream="stdout"):
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s %s F %s\n" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                                       stream, line))

    def start_container(self, pod, c, kind, st, env, mounts):
        """Start (or act out) container c; raises ContainerFailed."""
        md = pod["metadata"]
        ns, name, uid = md.get("namespace", "default"), md["name"], md.get("uid", "static")
        log = self.log_path(ns, name, uid, c["name"], st["restarts"])
        base = image_base(c.get("image", ""))
        cmd = [self.expand(x, env) for x in (c.get("command") or []) + (c.get("args") or [])]
        if self.cri_dead():
            raise ContainerFailed("rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService", 0)
        _handler, binary = self.sandbox_runtime(pod)
        ckey = "%s/%s/%s/%s" % (ns, name, uid, c["name"])
        gpus = self.allocate_devices(ckey, c)
        if gpus:
            # a time-sliced device's ID is "UUID::REPLICA": the plugin hands
            # the GPU's UUID, once however many replicas of it were allocated
            env["NVIDIA_VISIBLE_DEVICES"] = ",".join(dict.fromkeys(g.split("::")[0] for g in gpus))
        # What the NVIDIA runtime hands the container: NVIDIA_VISIBLE_DEVICES
        # of its final environment (the image's, then the pod's, then the
        # device plugin's), read by the runtime whatever the scheduler gave
        # it: "all" is every GPU of the node, "void", "none" or empty none
        # (nvidia-container-toolkit's documented values); runc reads nothing.
        visible = self.visible_gpus({**image_env(c.get("image", "")), **env}.get("NVIDIA_VISIBLE_DEVICES"))
        inj = self.state.setdefault("injected", {})
        if visible and os.path.basename(binary).startswith("nvidia-container-runtime"):
            inj[ckey] = visible
        else:
            inj.pop(ckey, None)
        st["id"] = secrets.token_hex(32)
        st.pop("real", None)
        st.pop("probed", None)
        sb = short_base(c.get("image", ""))
        if sb in PROCESS_IMAGES and kind != "init":
            argv = cmd[1:] if cmd and os.path.basename(cmd[0]) == sb else cmd
            self.run_unit(pod, c, st, ["/usr/bin/python3", os.path.join(IMAGES, sb)] + argv,
                          list(env.items()) + [("FAKE_IMAGE", c["image"])], log)
            return
        etcd = etcd_binary() if sb == "etcd" and kind != "init" else None
        if etcd:
            # the node's real etcd, with the static pod's command
            argv = cmd[1:] if cmd and os.path.basename(cmd[0]) == "etcd" else cmd
            self.run_unit(pod, c, st, [etcd] + etcd_args(argv, etcd_version(etcd)), list(env.items()), log)
            st["real"] = True
            return
        if cmd and os.path.basename(cmd[0]) == "cp":
            self.act_cp(cmd[1:], c, pod, mounts, log)
            return
        if base in FLANNEL_IMAGES and cmd and cmd[0] == "/opt/bin/install-conf":
            self.act_install_conf(cmd[1:], c, pod, mounts, log)
            return
        if base in FLANNEL_IMAGES and cmd and cmd[0].endswith("flanneld"):
            self.act_flanneld(cmd[1:], pod, mounts, log)
            return
        if base == "kube-proxy":
            act_kube_proxy_rules()
        act = IMAGE_ACTS.get(base)
        if act is not None:
            tick = act(self, pod, c, cmd, env, mounts, log)
            key = "%s/%s/%s/%s" % (ns, name, uid, c["name"])
            if callable(tick):
                self.ticks[key] = tick
            else:
                self.ticks.pop(key, None)
            return
        self.container_log(log, "fake container for image %s: running as a placeholder" % c.get("image"))
        # what its NFS volumes hold when it starts (a user's home on a claim)
        for mpath, vol in sorted(mounts.items()):
            if vol[0] == "nfs" and vol[1]:
                try:
                    names = sorted(n for n in os.listdir(vol[1]) if not n.startswith("."))
                except OSError:
                    names = []
                self.container_log(log, "%s is %s on this node, holding: %s"
                                   % (mpath, vol[1], " ".join(names[:20]) if names else "(nothing)"))

    def run_unit(self, pod, c, st, argv, env, log):
        """argv as the container's process: a transient unit in
        kubepods.slice, its output appended to the container's log."""
        md = pod["metadata"]
        unit = self.unit_name(md.get("namespace", "default"), md["name"], c["name"], st["restarts"])
        if st.get("unit") and st["unit"] != unit:
            self.unit_kill(st["unit"])
        self.unit_kill(unit)
        self.systemctl("reset-failed", unit + ".service")
        envargs = []
        for k, v in env:
            envargs += ["-E", "%s=%s" % (k, v)]
        try:
            r = subprocess.run(["systemd-run", "--unit=" + unit, "--slice=kubepods.slice", "--collect", "--quiet",
                                "-p", "StandardOutput=append:" + log, "-p", "StandardError=append:" + log] + envargs +
                               argv, capture_output=True, text=True, check=False, timeout=30)
        except subprocess.TimeoutExpired as e:
            raise ContainerFailed("failed to start container: systemd-run timed out", 128) from e
        if r.returncode != 0:
            raise ContainerFailed("failed to start container: %s" % r.stderr.strip(), 128)
        st["unit"] = unit

    def resolve_source(self, path, c, mounts):
        """The bytes behind path inside container c, or None."""
        for mpath, vol in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
            mp = mpath.rstrip("/")
            if path == mp or path.startswith(mp + "/"):
                rel = path[len(mp):].lstrip("/")
                if vol[0] == "hostPath":
                    try:
                        with open(os.path.join(vol[1], rel), "rb") as f:
                            return f.read()
                    except OSError:
                        return None
                if vol[0] == "configMap":
                    data = vol[1] or {}
                    if rel in data:
                        return data[rel].encode()
                    return None
        files = IMAGE_FILES.get(image_base(c.get("image", "")), {})
        if path in files:
            return files[path].encode()
        return None

    @staticmethod
    def host_target(path, mounts):
        for mpath, vol in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
            mp = mpath.rstrip("/")
            if (path == mp or path.startswith(mp + "/")) and vol[0] == "hostPath":
                return os.path.join(vol[1], path[len(mp):].lstrip("/"))
        return None

    def act_cp(self, args, c, pod, mounts, log):
        files = [a for a in args if not a.startswith("-")]
        if len(files) != 2:
            self.container_log(log, "cp: missing file operand", "stderr")
            raise ContainerFailed("cp: missing file operand")
        src, dst = files
        data = self.resolve_source(src, c, mounts)
        if data is None:
            self.container_log(log, "cp: can't stat '%s': No such file or directory" % src, "stderr")
            raise ContainerFailed("cp: can't stat '%s': No such file or directory" % src)
        target = self.host_target(dst, mounts)
        if target is None:
            # a path only inside the container: copied into nothing that lasts
            return
        write_file(target, data, 0o755 if "/bin/" in target else 0o644)

    def act_install_conf(self, args, c, pod, mounts, log):
        tag = c.get("image", "").split("@")[0].rsplit("/", 1)[-1].partition(":")[2]
        m = re.match(r"^v(\d+)\.(\d+)\.(\d+)", tag)
        if m and tuple(int(x) for x in m.groups()) < (0, 28, 6):
            raise ContainerFailed('failed to create containerd task: failed to create shim task: OCI runtime create failed: '
                                  'runc create failed: unable to start container process: exec: "/opt/bin/install-conf": '
                                  'stat /opt/bin/install-conf: no such file or directory: unknown', 128)
        if len(args) != 2:
            self.container_log(log, "usage: /opt/bin/install-conf <src> <dest>", "stderr")
            raise ContainerFailed("usage: /opt/bin/install-conf <src> <dest>")
        data = self.resolve_source(args[0], c, mounts)
        if data is None:
            msg = 'error installing "%s": open %s: no such file or directory' % (args[0], args[0])
            self.container_log(log, msg, "stderr")
            raise ContainerFailed(msg)
        target = self.host_target(args[1], mounts)
        if target is not None:
            write_file(target, data, 0o644)

    def act_flanneld(self, args, pod, mounts, log):
        def fail(msg):
            self.container_log(log, "E%s main.go] %s" % (time.strftime("%m%d %H:%M:%S"), msg), "stderr")
            raise ContainerFailed(msg)

        ifaces = [a.split("=", 1)[1] for a in args if a.startswith("--iface=")]
        conf = self.resolve_source("/etc/kube-flannel/net-conf.json", {}, mounts)
        if conf is None:
            fail("Failed to create SubnetManager: error reading net-conf.json: open /etc/kube-flannel/net-conf.json: no such file or directory")
        try:
            net = json.loads(conf)
        except ValueError as e:
            fail("Failed to create SubnetManager: error parsing subnet config: %s" % e)
        network = net.get("Network")
        if not network:
            fail("Failed to create SubnetManager: error parsing subnet config: Network is required")
        addrs = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout
        links = {}
        for ln in addrs.splitlines():
            m = re.match(r"^\d+:\s+(\S+)\s+inet\s+([0-9.]+)/", ln)
            if m:
                links.setdefault(m.group(1), m.group(2))
        chosen = None
        if ifaces:
            for want in ifaces:
                if re.match(r"^\d+\.\d+\.\d+\.\d+$", want):
                    for name, ip in links.items():
                        if ip == want:
                            chosen = (name, ip)
                            break
                elif want in links:
                    chosen = (want, links[want])
                if chosen:
                    break
            if not chosen:
                fail("Failed to find interface to use that matches the interfaces and/or regexes provided")
        else:
            r = subprocess.run(["ip", "-o", "route", "show", "default"], capture_output=True, text=True, check=False).stdout
            m = re.search(r"\bdev (\S+)", r)
            if not m or m.group(1) not in links:
                fail("Failed to find any valid interface to use: failed to get default interface: unable to find default route")
            chosen = (m.group(1), links[m.group(1)])
        self.container_log(log, "I%s main.go] Using interface with name %s and address %s" % (time.strftime("%m%d %H:%M:%S"), chosen[0], chosen[1]))
        c = self.client
        if c is None:
            fail("Failed to create SubnetManager: unable to initialize inclusterconfig: open /var/run/secrets/kubernetes.io/serviceaccount/token: no such file or directory")
        try:
            node = c.get(R("nodes").path(None, self.node_name))
        except (APIError, ConnError) as e:
            fail("Failed to create SubnetManager: error retrieving pod spec for '%s': %s" % (pod["metadata"]["name"], e))
        cidr = (node.get("spec") or {}).get("podCIDR")
        if not cidr:
            fail('Error registering network: failed to acquire lease: node "%s" pod cidr not assigned' % self.node_name)
        first = cidr.split("/")[0].rsplit(".", 1)[0] + ".1/" + cidr.split("/")[1]
        target = self.host_target("/run/flannel/subnet.env", mounts)
        if target:
            write_file(target, "FLANNEL_NETWORK=%s\nFLANNEL_SUBNET=%s\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=%s\n"
                       % (network, first, "true" if "--ip-masq" in args else "false"), 0o644)
        mac = "02:%02x:%02x:%02x:%02x:%02x" % tuple(secrets.randbits(8) for _ in range(5))
        ann = {"flannel.alpha.coreos.com/backend-data": json.dumps({"VNI": 1, "VtepMAC": mac}, separators=(",", ":")),
               "flannel.alpha.coreos.com/backend-type": (net.get("Backend") or {}).get("Type", "vxlan"),
               "flannel.alpha.coreos.com/kube-subnet-manager": "true",
               "flannel.alpha.coreos.com/public-ip": chosen[1]}
        try:
            c.patch(R("nodes").path(None, self.node_name), {"metadata": {"annotations": ann}})
        except (APIError, ConnError) as e:
            fail("failed to set the node's flannel annotations: %s" % e)
        self.container_log(log, "I%s main.go] Wrote subnet file to /run/flannel/subnet.env" % time.strftime("%m%d %H:%M:%S"))
        act_flannel_network(chosen, first, network)
        self.container_log(log, "I%s main.go] Running backend." % time.strftime("%m%d %H:%M:%S"))

    @staticmethod
    def expand(s, env):
        return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), str(s))

    def container_env(self, pod, c, host_ip, pod_ip):
        env = {}
        md = pod["metadata"]
        fields = {"metadata.name": md["name"], "metadata.namespace": md.get("namespace", "default"),
                  "spec.nodeName": self.node_name, "status.hostIP": host_ip, "status.podIP": pod_ip,
                  "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", "default")}
        for e in c.get("env") or []:
            if "value" in e:
                env[e["name"]] = self.expand(e["value"], env)
            elif (e.get("valueFrom") or {}).get("fieldRef"):
                env[e["name"]] = fields.get(e["valueFrom"]["fieldRef"].get("fieldPath"), "")
        return env

    def mounts_for(self, pod, c):
        vols = {v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or []}
        out_ = {}
        for m in c.get("volumeMounts") or []:
            v = vols.get(m["name"])
            if not v:
                continue
            if "hostPath" in v:
                hp = v["hostPath"]["path"]
                if v["hostPath"].get("type") in ("DirectoryOrCreate",):
                    os.makedirs(hp, exist_ok=True)
                elif v["hostPath"].get("type") == "FileOrCreate" and not os.path.exists(hp):
                    os.makedirs(os.path.dirname(hp), exist_ok=True)
                    open(hp, "a", encoding="utf-8").close()
                out_[m["mountPath"]] = ("hostPath", hp)
            elif "configMap" in v:
                data = None
                if self.client:
                    try:
                        cm = self.client.get(R("configmaps").path(pod["metadata"].get("namespace", "default"), v["configMap"]["name"]))
                        data = cm.get("data") or {}
                        if v["configMap"].get("items"):
                            data = {i["path"]: data.get(i["key"], "") for i in v["configMap"]["items"]}
                    except (APIError, ConnError):
                        data = None
                if data is None:
                    raise ContainerFailed('MountVolume.SetUp failed for volume "%s" : configmap "%s" not found'
                                          % (m["name"], v["configMap"]["name"]), 0)
                out_[m["mountPath"]] = ("configMap", data)
            elif "nfs" in v:
                out_[m["mountPath"]] = ("nfs", self.nfs_dir(v["nfs"]))
            elif "persistentVolumeClaim" in v:
                out_[m["mountPath"]] = self.claim_mount(pod, m["name"], v["persistentVolumeClaim"]["claimName"],
                                                        m.get("subPath"))
            else:
                out_[m["mountPath"]] = ("other", None)
        return out_

    def claim_mount(self, pod, volume, claim, sub_path=None):
        """A persistentVolumeClaim volume: the container waits (as the real
        kubelet does, ContainerCreating) until the claim exists and is Bound;
        then its PersistentVolume's nfs (nfs_dir) or hostPath folder, and
        subPath within it."""
        ns = pod["metadata"].get("namespace", "default")
        wait = 'Unable to attach or mount volumes: unmounted volumes=[%s]: ' % volume
        if self.client is None:
            raise ContainerFailed(wait + "no API", 0)
        try:
            pvc = self.client.get(R("persistentvolumeclaims").path(ns, claim))
            name = (pvc.get("spec") or {}).get("volumeName")
            if (pvc.get("status") or {}).get("phase") != "Bound" or not name:
                raise ContainerFailed(wait + 'persistentvolumeclaim "%s" is not bound' % claim, 0)
            pv = self.client.get(R("persistentvolumes").path(None, name)).get("spec") or {}
        except APIError as e:
            raise ContainerFailed(wait + 'persistentvolumeclaim "%s": %s' % (claim, e), 0) from e
        except ConnError as e:
            raise ContainerFailed(wait + str(e), 0) from e
        if "nfs" in pv:
            kind, d = "nfs", self.nfs_dir(pv["nfs"])
        elif "hostPath" in pv:
            kind, d = "hostPath", pv["hostPath"]["path"]
        else:
            return ("other", None)
        if sub_path:
            d = os.path.join(d, sub_path)
            os.makedirs(d, exist_ok=True)
        return (kind, d)

    def nfs_dir(self, nfs):
        """Where an nfs volume's files are on this node.  Test nodes are
        containers: they can neither mount NFS nor serve it (the nfs-server
        and nfs-client roles skip there).  When the node is the server
        itself (the volume's server is one of its addresses) the export's
        own folder stands for the mount, as a mount of a local export shows
        it; otherwise a folder per export,
        /var/lib/fake-kubernetes/nfs/SERVER/PATH, that only this node sees."""
        server, path = nfs.get("server", ""), nfs.get("path", "/")
        mine = {self.node_ip, self.node_name, "127.0.0.1", "localhost"}
        r = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False)
        mine |= set(re.findall(r"inet ([0-9.]+)/", r.stdout))
        d = path if server in mine else os.path.join("/var/lib/fake-kubernetes/nfs", server, path.lstrip("/"))
        os.makedirs(d, exist_ok=True)
        return d

    # ---- pods

    def cni_ready(self):
        try:
            return any(f.endswith((".conf", ".conflist", ".json")) for f in os.listdir(CNI_DIR))
        except OSError:
            return False

    def runtime_ready(self):
        if self.cri_dead():
            return False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect("/run/containerd/containerd.sock")
            return True
        except OSError:
            return False
        finally:
            s.close()

    def crash_knob(self, cname):
        k = knob("crashloop")
        if not k:
            return None
        for ln in k.splitlines():
            p = ln.split()
            if len(p) == 3 and p[0] == cname:
                return float(p[1]), float(p[2])
        return None

    def sandbox_unpullable(self):
        """Knob registry-offline (a lab whose registry mirror holds only the
        images `kubeadm config images list` names): containerd's sandbox
        image cannot be pulled unless it is kubeadm's pause image.  Returns
        the kubelet's error, or None."""
        if knob("registry-offline") is None or not self.sandbox_image or self.sandbox_image == kubeadm_pause_image():
            return None
        return ('rpc error: code = Unknown desc = failed to get sandbox image "%s": failed to pull image "%s": '
                'failed to pull and unpack image "%s": failed to resolve reference "%s": not found'
                % ((self.sandbox_image,) * 4))

    @staticmethod
    def started(c, st):
        """A container with a startupProbe is started (and can be Ready)
        only once the probe succeeds: kubeadm's static pods probe first
        initialDelaySeconds (10) after the start.  Knob slow-start, lines
        CONTAINER SECONDS: that container's probe first succeeds SECONDS
        after its start (a slow lab PC: etcd replaying its WAL).  A real
        process (the node's etcd) is probed for real: its startupProbe's
        httpGet, from initialDelaySeconds on, until it answers 200 once."""
        probe = c.get("startupProbe")
        need = float((probe or {}).get("initialDelaySeconds", 0)) if probe else 0.0
        for ln in (knob("slow-start") or "").splitlines():
            p = ln.split()
            if len(p) == 2 and p[0] == c["name"]:
                need = max(need, float(p[1]))
        if now() - st.get("t_start", now()) < need:
            return False
        if st.get("real") and probe and not st.get("probed"):
            st["probed"] = http_probe(probe)
            return st["probed"]
        return True

    @staticmethod
    def probed_ready(c, st):
        """A container with a readinessProbe is Ready only from its first
        probe, initialDelaySeconds after its start ("Configure Liveness,
        Readiness and Startup Probes"); the fake's probes then succeed."""
        probe = c.get("readinessProbe")
        need = float((probe or {}).get("initialDelaySeconds", 0)) if probe else 0.0
        return now() - st.get("t_start", now()) >= need

    @staticmethod
    def fail_knob(c):
        """Knob container-fail, lines CONTAINER MESSAGE: that container exits
        with status 1 at each start, MESSAGE in its log (a component that
        cannot start: a bad flag, a certificate it cannot read).  Knob
        image-pull-fail, lines TEXT: an image whose name contains TEXT
        cannot be pulled.  Returns ("exit", message), ("pull", image) or None."""
        for ln in (knob("container-fail") or "").splitlines():
            p = ln.split(None, 1)
            if p and p[0] == c["name"]:
                return ("exit", p[1] if len(p) > 1 else "exited")
        for ln in (knob("image-pull-fail") or "").splitlines():
            if ln.strip() and ln.strip() in c.get("image", ""):
                return ("pull", c.get("image", ""))
        return None

    def sync_pod(self, pod, static):
        """Drive the containers of one pod; returns its status."""
        md, spec = pod["metadata"], pod.get("spec") or {}
        ns, name = md.get("namespace", "default"), md["name"]
        host_net = spec.get("hostNetwork", False)
        key0 = "%s/%s/%s" % (ns, name, md.get("uid", "static"))
        pst = self.state.setdefault("pods", {}).setdefault(key0, {"started": rfc3339()})
        host_ip = self.node_ip
        if host_net:
            pod_ip = host_ip
        else:
            pod_ip = pst.get("ip")
        waiting_sandbox = None
        unpullable = self.sandbox_unpullable()
        if unpullable:
            # every pod needs its sandbox ("pause") container first, host
            # network or not: the kubelet's words when its image cannot be pulled
            waiting_sandbox = unpullable
            if not pst.get("sandbox_logged"):
                klog("E", "CreatePodSandbox for pod failed", pod="%s/%s" % (ns, name), err=unpullable)
                pst["sandbox_logged"] = True
        elif knob("real-pulls") is not None and self.sandbox_image:
            # RunPodSandbox pulls the sandbox image first (containerd's CRI: "failed to get sandbox image")
            sst = self.state.setdefault("sandbox_pull", {})
            w = self.image_ready(self.sandbox_image, sst, "POD", "%s/%s" % (ns, name))
            if w and w["waiting"]["reason"] in ("ErrImagePull", "ImagePullBackOff"):
                inner = sst.get("last_err") if w["waiting"]["reason"] == "ImagePullBackOff" else w["waiting"]["message"]
                sst["last_err"] = inner
                waiting_sandbox = ('rpc error: code = Unknown desc = failed to get sandbox image "%s": failed to pull image "%s": %s'
                                   % (self.sandbox_image, self.sandbox_image, (inner or "").split(" desc = ", 1)[-1]))
                if w["waiting"]["reason"] == "ErrImagePull":
                    klog("E", "CreatePodSandbox for pod failed", pod="%s/%s" % (ns, name), err=waiting_sandbox)
            elif w:
                waiting_sandbox = "pulling the sandbox image %s" % self.sandbox_image
        if waiting_sandbox:
            pass
        elif not host_net and not self.cni_ready():
            waiting_sandbox = ("network is not ready: container runtime network not ready: NetworkReady=false "
                               "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized")
        if not host_net and not pod_ip and not waiting_sandbox:
            pod_ip = self.allocate_ip(key0)
            pst["ip"] = pod_ip
        statuses = {"init": [], "main": []}
        all_init_done = True
        for kind, clist in (("init", spec.get("initContainers") or []), ("main", spec.get("containers") or [])):
            for c in clist:
                key = key0 + "/" + c["name"]
                st = self.cstate(key)
                if waiting_sandbox or (kind == "main" and not all_init_done):
                    reason = ("PodInitializing" if kind == "main" and not waiting_sandbox else "ContainerCreating")
                    statuses[kind].append(self.cstatus(c, st, {"waiting": {"reason": reason}}, False))
                    if kind == "init":
                        all_init_done = False
                    continue
                if kind == "init" and st.get("done"):
                    statuses[kind].append(self.cstatus(c, st, {"terminated": {"exitCode": 0, "reason": "Completed",
                                                                             "startedAt": st.get("startedAt"),
                                                                             "finishedAt": st.get("finishedAt")}}, False))
                    continue
                if kind == "init" and not all_init_done:
                    statuses[kind].append(self.cstatus(c, st, {"waiting": {"reason": "PodInitializing"}}, False))
                    continue
                state = self.drive(pod, c, kind, st, host_ip, pod_ip or "", static)
                statuses[kind].append(self.cstatus(c, st, state, "running" in state and kind == "main" and self.started(c, st)
                                                and self.probed_ready(c, st)))
                if kind == "init" and not st.get("done"):
                    all_init_done = False
        main = statuses["main"]
        running = [s for s in main if "running" in s["state"]]
        phase = "Running" if main and len(running) == len(main) else ("Running" if running else "Pending")
        ended = [self.cstate(key0 + "/" + c["name"]).get("final") for c in spec.get("containers") or []]
        if ended and all(ended):
            phase = "Succeeded" if all(f["terminated"]["exitCode"] == 0 for f in ended) else "Failed"
        ready = bool(main) and all(s["ready"] for s in main)
        now_t = rfc3339()

        def cond(t, ok, reason=None):
            c = {"type": t, "status": "True" if ok else "False", "lastProbeTime": None, "lastTransitionTime": now_t}
            if reason and not ok:
                c["reason"] = reason
            return c

        status = {
            "phase": phase,
            "conditions": [cond("PodReadyToStartContainers", not waiting_sandbox),
                           cond("Initialized", all_init_done, "ContainersNotInitialized"),
                           cond("Ready", ready, "ContainersNotReady"),
                           cond("ContainersReady", ready, "ContainersNotReady"),
                           cond("PodScheduled", True)],
            "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
            "startTime": pst["started"],
            "containerStatuses": main,
            "qosClass": "Burstable" if any((c.get("resources") or {}).get("requests") for c in spec.get("containers") or []) else "BestEffort",
        }
        if pod_ip:
            status["podIP"] = pod_ip
            status["podIPs"] = [{"ip": pod_ip}]
        if statuses["init"]:
            status["initContainerStatuses"] = statuses["init"]
        return status

    def allocate_ip(self, key):
        cidr = None
        if self.client:
            try:
                cidr = (self.client.get(R("nodes").path(None, self.node_name)).get("spec") or {}).get("podCIDR")
            except (APIError, ConnError):
                cidr = None
        if not cidr:
            return None
        used = {p.get("ip") for p in self.state.get("pods", {}).values()}
        base = cidr.split("/")[0].rsplit(".", 1)[0]
        for n in range(2, 254):
            ip = "%s.%d" % (base, n)
            if ip not in used:
                act_cni_bridge(base + ".1/" + cidr.split("/")[1], ip, key)
                return ip
        return None

    def drive(self, pod, c, kind, st, host_ip, pod_ip, static):
        """One step of container c's life; returns its state dict."""
        t = now()
        unit = st.get("unit")
        md = pod["metadata"]
        if st.get("final"):
            return st["final"]
        knob_ = self.crash_knob(c["name"])
        if st.get("running"):
            alive = True
            if unit:
                alive = self.unit_active(unit)
            up_for = t - st.get("t_start", t)
            killed = None
            if alive and knob_ and up_for > knob_[0]:
                killed = "crashloop knob"
            elif alive and self.mismatch and up_for > MISMATCH_KILL_AFTER:
                killed = "sandbox"
                klog("I", "Pod sandbox changed, it will be killed and re-created.", pod="%s/%s" % (md.get("namespace"), md["name"]))
            if killed:
                if unit:
                    self.unit_kill(unit)
                alive = False
                st["exitCode"] = 137
            if alive:
                self.act_tick(pod, c, st, host_ip, pod_ip)
                return {"running": {"startedAt": st["startedAt"]}}
            st["running"] = False
            st["finishedAt"] = rfc3339()
            st.setdefault("exitCode", 1)
            st["lastState"] = {"terminated": {"exitCode": st["exitCode"], "reason": "Error", "startedAt": st["startedAt"],
                                              "finishedAt": st["finishedAt"], "containerID": "containerd://" + st.get("id", "")}}
            st["restarts"] += 1
            delay = knob_[1] if knob_ else min(10 * 2 ** (st["restarts"] - 1), 300)
            st["next"] = t + delay
            st["delay"] = delay
            st.pop("exitCode", None)
            klog("E", "Error syncing pod, skipping", err='failed to "StartContainer" for "%s" with CrashLoopBackOff: "back-off %s restarting failed container=%s pod=%s_%s(%s)"'
                 % (c["name"], format_duration(delay), c["name"], md["name"], md.get("namespace"), md.get("uid", "")))
        if st.get("next") and t < st["next"]:
            return {"waiting": {"reason": "CrashLoopBackOff",
                                "message": "back-off %s restarting failed container=%s pod=%s_%s(%s)"
                                % (format_duration(st.get("delay", 10)), c["name"], md["name"], md.get("namespace"),
                                   md.get("uid", ""))}}
        pulled = self.image_ready(c.get("image", ""), st, c["name"], "%s/%s" % (md.get("namespace"), md["name"]))
        if pulled:
            return pulled
        env = self.container_env(pod, c, host_ip, pod_ip)
        fk = self.fail_knob(c)
        if fk and fk[0] == "pull":
            # the kubelet's image pull: ErrImagePull, then ImagePullBackOff
            # while it waits (the same back-off as crashes), then again
            st["pulls"] = st.get("pulls", 0) + 1
            if st["pulls"] % 4 == 1:
                klog("E", "Error syncing pod, skipping", err='failed to "StartContainer" for "%s" with ErrImagePull: '
                     '"failed to pull and unpack image \\"%s\\": failed to resolve reference: not found"' % (c["name"], fk[1]),
                     pod="%s/%s" % (md.get("namespace"), md["name"]))
                return {"waiting": {"reason": "ErrImagePull",
                                    "message": 'failed to pull and unpack image "%s": failed to resolve reference "%s": not found'
                                    % (fk[1], fk[1])}}
            return {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "%s"' % fk[1]}}
        st.pop("pulls", None)
        try:
            mounts = self.mounts_for(pod, c)
            st["startedAt"] = rfc3339()
            if fk and fk[0] == "exit":
                st["id"] = secrets.token_hex(32)
                self.container_log(self.log_path(md.get("namespace", "default"), md["name"], md.get("uid", "static"),
                                                 c["name"], st["restarts"]), fk[1], "stderr")
                raise ContainerFailed(fk[1])
            self.start_container(pod, c, kind, st, env, mounts)
        except ContainerExited as e:
            st["finishedAt"] = rfc3339()
            term = {"exitCode": e.code, "reason": "Completed" if e.code == 0 else "Error",
                    "startedAt": st["startedAt"], "finishedAt": st["finishedAt"], "containerID": "containerd://" + st.get("id", "")}
            if e.message:
                term["message"] = e.message[-4096:]
            policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
            if kind == "init" and e.code == 0:
                st["done"] = True
                return {"terminated": term}
            if policy == "Never" or (policy == "OnFailure" and e.code == 0):
                st["final"] = {"terminated": term}
                return st["final"]
            st["lastState"] = {"terminated": term}
            st["restarts"] += 1
            delay = min(10 * 2 ** (st["restarts"] - 1), 300)
            st["next"] = t + delay
            st["delay"] = delay
            return {"waiting": {"reason": "CrashLoopBackOff",
                                "message": "back-off %s restarting failed container=%s pod=%s_%s(%s)"
                                % (format_duration(delay), c["name"], md["name"], md.get("namespace"), md.get("uid", ""))}}
        except ContainerFailed as e:
            if e.code == 0:
                if str(e) and str(e) != "0":
                    if st.get("why") != str(e):
                        klog("E", "Error syncing pod, skipping", err=str(e), pod="%s/%s" % (md.get("namespace"), md["name"]))
                    st["why"] = str(e)
                return {"waiting": {"reason": "ContainerCreating"}}
            st["running"] = False
            st["exitCode"] = e.code
            st["finishedAt"] = rfc3339()
            st["lastState"] = {"terminated": {"exitCode": e.code, "reason": "Error", "message": str(e),
                                              "startedAt": st["startedAt"], "finishedAt": st["finishedAt"]}}
            st["restarts"] += 1
            delay = knob_[1] if knob_ else min(10 * 2 ** (st["restarts"] - 1), 300)
            st["next"] = t + delay
            st["delay"] = delay
            klog("E", "Error syncing pod, skipping", err='failed to "StartContainer" for "%s" with CrashLoopBackOff: %s' % (c["name"], e),
                 pod="%s/%s" % (md.get("namespace"), md["name"]))
            return {"waiting": {"reason": "CrashLoopBackOff",
                                "message": "back-off %s restarting failed container=%s pod=%s_%s(%s)"
                                % (format_duration(delay), c["name"], md["name"], md.get("namespace"), md.get("uid", ""))}}
        st.pop("next", None)
        if kind == "init":
            st["done"] = True
            st["finishedAt"] = rfc3339()
            return {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": st["startedAt"], "finishedAt": st["finishedAt"]}}
        st["running"] = True
        st["t_start"] = t
        return {"running": {"startedAt": st["startedAt"]}}

    def client_as(self, pod):
        """A client that acts as the pod's service account (the API server
        lets a node impersonate the service accounts of its pods), or None
        while the API is not reachable."""
        if self.client is None:
            return None
        cl = copy.copy(self.client)
        cl.headers = ["Impersonate-User: system:serviceaccount:%s:%s"
                      % (pod["metadata"].get("namespace", "default"), (pod.get("spec") or {}).get("serviceAccountName") or "default")]
        return cl

    def act_tick(self, pod, c, st, host_ip, pod_ip):
        """One turn of the loop of a running image act (started again after
        a kubelet restart, like a container that outlived it)."""
        md = pod["metadata"]
        key = "%s/%s/%s/%s" % (md.get("namespace", "default"), md["name"], md.get("uid", "static"), c["name"])
        act = IMAGE_ACTS.get(image_base(c.get("image", "")))
        if act is None:
            return
        if key not in self.ticks:
            env = self.container_env(pod, c, host_ip, pod_ip)
            cmd = [self.expand(x, env) for x in (c.get("command") or []) + (c.get("args") or [])]
            log = self.log_path(md.get("namespace", "default"), md["name"], md.get("uid", "static"), c["name"], st["restarts"])
            try:
                tick = act(self, pod, c, cmd, env, self.mounts_for(pod, c), log)
            except ContainerFailed as e:
                klog("E", "image act failed", container=c["name"], err=str(e))
                tick = None
            self.ticks[key] = tick if callable(tick) else (lambda: None)
        try:
            self.ticks[key]()
        except (APIError, ConnError) as e:
            klog("E", "container loop", container=c["name"], err=str(e))

    @staticmethod
    def cstatus(c, st, state, ready):
        s = {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": bool(ready),
             "restartCount": st.get("restarts", 0), "started": "running" in state, "state": state}
        if st.get("id"):
            s["containerID"] = "containerd://" + st["id"]
        if st.get("lastState"):
            s["lastState"] = st["lastState"]
        else:
            s["lastState"] = {}
        return s

    def stop_pod(self, key0, pod_spec_containers=None):
        for k in list(self.ticks):
            if k.startswith(key0 + "/"):
                self.ticks.pop(k)
        for tbl in ("alloc", "injected"):
            for k in list(self.state.get(tbl) or {}):
                if k.startswith(key0 + "/"):
                    self.state[tbl].pop(k)
        for k in list(self.state["containers"]):
            if k.startswith(key0 + "/"):
                st = self.state["containers"].pop(k)
                if st.get("unit"):
                    self.unit_kill(st["unit"])
        self.state.get("pods", {}).pop(key0, None)

    # ---- the loop

    def static_pods(self):
        d = self.cfg.get("staticPodPath")
        out_ = []
        if not d or not os.path.isdir(d):
            return out_
        seen = {}
        for f in sorted(os.listdir(d)):
            if f.startswith(".") or not f.endswith((".yaml", ".yml", ".json")):
                continue
            path = os.path.join(d, f)
            try:
                text = read_file(path)
            except OSError as e:
                klog("E", "Could not process manifest file", path=path, err=str(e))
                continue
            got = self.manifests.get(path)
            if got and got[0] == text:
                # the same manifest as at the last look: the same pod (parsed once)
                seen[path] = got
                out_.append(copy.deepcopy(got[1]))
                continue
            try:
                pod = yaml_load(text)
            except YAMLError as e:
                klog("E", "Could not process manifest file", path=path, err=str(e))
                continue
            if not isinstance(pod, dict) or pod.get("kind") != "Pod":
                continue
            pod["metadata"]["name"] = pod["metadata"]["name"] + "-" + self.node_name
            pod["metadata"].setdefault("namespace", "default")
            h = hashlib.md5(json.dumps(pod, sort_keys=True).encode()).hexdigest()
            pod["metadata"]["uid"] = h
            pod["metadata"]["annotations"] = dict(pod["metadata"].get("annotations") or {},
                                                  **{"kubernetes.io/config.hash": h, "kubernetes.io/config.mirror": h,
                                                     "kubernetes.io/config.source": "file"})
            pod["spec"]["nodeName"] = self.node_name
            seen[path] = (text, copy.deepcopy(pod))
            out_.append(pod)
        self.manifests = seen
        return out_

    def node_object(self):
        mem_kib = 0
        for ln in read_file("/proc/meminfo", "").splitlines():
            if ln.startswith("MemTotal:"):
                mem_kib = int(ln.split()[1])
        st = os.statvfs("/var/lib/kubelet") if os.path.isdir("/var/lib/kubelet") else os.statvfs("/")
        disk_kib = st.f_blocks * st.f_frsize // 1024
        cpus = os.cpu_count() or 1
        osr = dict(re.findall(r'^([A-Z_]+)="?([^"\n]*)"?', read_file("/etc/os-release", ""), re.M))
        # the version of the running containerd (the real kubelet asks it over
        # the CRI): asked again when containerd is another process
        if self.crv is None or self.containerd_changed(self.crv_key):
            cr = subprocess.run(["containerd", "--version"], capture_output=True, text=True, check=False).stdout.split()
            self.crv, self.crv_key = (cr[2] if len(cr) > 2 else "unknown"), self.ctr_key
        crv = self.crv
        rt_ok, net_ok = self.runtime_ready(), self.cni_ready()
        now_t = rfc3339()
        if not rt_ok:
            ready = ("False", "KubeletNotReady", "container runtime is down")
        elif not net_ok:
            ready = ("False", "KubeletNotReady", "container runtime network not ready: NetworkReady=false "
                     "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized")
        else:
            ready = ("True", "KubeletReady", "kubelet is posting ready status")
        conds = [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
             "message": "kubelet has sufficient memory available"},
            {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "message": "kubelet has no disk pressure"},
            {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "message": "kubelet has sufficient PID available"},
            {"type": "Ready", "status": ready[0], "reason": ready[1], "message": ready[2]},
        ]
        prev = {c["type"]: c for c in self.state.get("nodeConds", [])}
        for c in conds:
            c["lastHeartbeatTime"] = now_t
            p = prev.get(c["type"])
            c["lastTransitionTime"] = p["lastTransitionTime"] if p and p["status"] == c["status"] else now_t
        self.state["nodeConds"] = conds
        cap = {"cpu": str(cpus), "ephemeral-storage": "%dKi" % disk_kib, "hugepages-1Gi": "0", "hugepages-2Mi": "0",
               "memory": "%dKi" % mem_kib, "pods": "110"}
        # allocatable = capacity - kubeReserved - systemReserved - hard eviction (memory.available 100Mi)
        res_cpu = sum(cpu_milli(str((self.cfg.get(k) or {}).get("cpu", "0"))) for k in ("kubeReserved", "systemReserved"))
        res_kib = sum(mem_kib_of(str((self.cfg.get(k) or {}).get("memory", "0"))) for k in ("kubeReserved", "systemReserved"))
        alloc = dict(cap, memory="%dKi" % (mem_kib - 102400 - res_kib), **{"ephemeral-storage": str(disk_kib * 1024 * 9 // 10)})
        if res_cpu:
            alloc["cpu"] = "%dm" % (cpus * 1000 - res_cpu)
        for k, v in (self.state.get("extended") or {}).items():
            cap[k] = alloc[k] = v
        mid = read_file("/etc/machine-id", "").strip()
        status = {
            "addresses": [{"address": self.node_ip, "type": "InternalIP"}, {"address": self.node_name, "type": "Hostname"}],
            "allocatable": alloc, "capacity": cap, "conditions": conds,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": read_file("/proc/sys/kernel/random/boot_id", "").strip(),
                         "containerRuntimeVersion": "containerd://" + crv, "kernelVersion": os.uname().release,
                         "kubeProxyVersion": "v" + FAKE_VERSION,
                         # a node's own Node object is the node's to say (knob kubelet-version)
                         "kubeletVersion": knob("kubelet-version") or "v" + FAKE_VERSION,
                         "machineID": mid, "operatingSystem": "linux", "osImage": osr.get("PRETTY_NAME", "Linux"),
                         "systemUUID": str(uuid_from(mid))},
        }
        labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux"}
        for kv in (self.flags.get("node-labels") or "").split(","):
            if "=" in kv:
                k, v = kv.split("=", 1)
                labels[k] = v
        return labels, status

    def sync_node(self):
        c = self.client
        labels, status = self.node_object()
        if not self.registered:
            try:
                c.post(R("nodes").path(), {"metadata": {"name": self.node_name, "labels": labels, "annotations": {
                    "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
                    "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
                    "spec": {}, "status": status})
                klog("I", "Successfully registered node", node=self.node_name)
            except APIError as e:
                if e.code != 409:
                    klog("E", "Unable to register node with API server", err=str(e), node=self.node_name)
                    return
            self.registered = True
            if self.registered_at is None:
                self.registered_at = now()
        try:
            c.patch(R("nodes").path(None, self.node_name, "status"), {"status": status})
        except APIError as e:
            if e.code == 404:
                self.registered = False
            klog("E", "Error updating node status, will retry", err=str(e))

    def loop(self):
        while True:
            try:
                self.tick()
            except (APIError, ConnError) as e:
                klog("E", "Error syncing", err=str(e))
            except Exception as e:  # noqa: BLE001 -- a kubelet keeps going
                klog("E", "unexpected error", err="%s: %s" % (type(e).__name__, e))
            time.sleep(1)

    def tick(self):
        if now() - self.driver_checked > 10:
            # containerd's config may be fixed (and containerd restarted)
            # while the kubelet runs: look again now and then, and read its
            # config again when it is another containerd process (the real
            # kubelet asks the running runtime, not the file)
            if self.containerd_changed(self.driver_key):
                self.check_cgroup_driver()
                self.driver_key = self.ctr_key
            self.driver_checked = now()
        c = self.connect()
        with self.lock:
            desired = {}
            for pod in self.static_pods():
                desired["%s/%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"])] = (pod, True)
            if c is not None:
                try:
                    if now() - self.last_status > STATUS_EVERY:
                        self.sync_node()
                        self.last_status = now()
                    lst = c.get(R("pods").path(), {"fieldSelector": "spec.nodeName=" + self.node_name})
                    for p in lst["items"]:
                        if "kubernetes.io/config.mirror" in (p["metadata"].get("annotations") or {}):
                            continue
                        if p["metadata"].get("deletionTimestamp"):
                            continue
                        p.setdefault("apiVersion", "v1")
                        p.setdefault("kind", "Pod")
                        desired["%s/%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"])] = (p, False)
                except (ConnError, APIError):
                    # the API is down, or answers errors (its etcd is: a 500
                    # while this node's etcd is stopped): keep the API pods we
                    # know, drive static pods (the real kubelet runs them
                    # whatever the API says)
                    for k, v in self.api_pods.items():
                        desired.setdefault(k, v)
            self.api_pods = {k: v for k, v in desired.items() if not v[1]}
            for key0 in list(self.state.get("pods", {})):
                if key0 not in desired:
                    self.stop_pod(key0)
                    self.pod_status_sent.pop(key0, None)
            # a unit started during this tick is looked at from the next one
            self.active_now = self.units_active()
            try:
                for key0, (pod, static) in desired.items():
                    status = self.sync_pod(pod, static)
                    if c is not None:
                        self.publish(c, pod, static, status, key0)
            finally:
                self.active_now = None
            self.save()

    def publish(self, c, pod, static, status, key0):
        md = pod["metadata"]
        ns, name = md["namespace"], md["name"]
        cmp_ = json.dumps({k: v for k, v in status.items() if k != "conditions"}, sort_keys=True) + \
            json.dumps([(x["type"], x["status"]) for x in status["conditions"]])
        if self.pod_status_sent.get(key0) == cmp_:
            return
        if static and (self.registered_at is None or now() - self.registered_at < MIRROR_DELAY):
            # the real kubelet makes mirror pods only once its Node is in its
            # informer, and posts statuses in batches: seconds after the
            # static pods run
            return
        try:
            if static:
                mirror = dict(pod)
                mirror["metadata"] = dict(md, ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": self.node_name,
                                                               "controller": True, "uid": ""}])
                mirror["metadata"].pop("uid", None)
                mirror["status"] = status
                try:
                    c.post(R("pods").path(ns), mirror)
                except APIError as e:
                    if e.code != 409:
                        raise
                    c.patch(R("pods").path(ns, name, "status"), {"status": status})
            else:
                c.patch(R("pods").path(ns, name, "status"), {"status": status})
            self.pod_status_sent[key0] = cmp_
        except APIError as e:
            if e.code != 404:
                klog("E", "Failed to update status for pod", pod="%s/%s" % (ns, name), err=str(e))
        except ConnError:
            pass


def uuid_from(s):
    h = hashlib.sha256(s.encode()).hexdigest()
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


R = resource_by_name


class Healthz(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        body = b"ok" if self.path.startswith("/healthz") else b"404 page not found\n"
        self.send_response(200 if body == b"ok" else 404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def parse_flags(argv):
    flags = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            k, eq, v = a[2:].partition("=")
            if not eq:
                if k in ("version",) or i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    v = "true"
                else:
                    i += 1
                    v = argv[i]
            flags[k] = v
        i += 1
    return flags


def main():
    flags = parse_flags(sys.argv[1:])
    if "version" in flags:
        print("Kubernetes v" + FAKE_VERSION)
        return 0
    kl = Kubelet(flags)
    kl.load_config()
    kl.check_swap()
    kl.check_cgroup_v1()
    kl.check_cgroup_driver()
    view = kl.containerd()
    if view is not None and view["cri"] == "error":
        klog("E", "command failed", err=CRI_DEAD_START)
        return 1
    klog("I", "Starting kubelet", version="v" + FAKE_VERSION, node=kl.node_name)
    try:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(kl.cfg.get("healthzPort", 10248))), Healthz)
    except OSError as e:
        klog("E", "command failed", err="failed to listen on 127.0.0.1:10248: %s" % e)
        return 1
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    kl.loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
