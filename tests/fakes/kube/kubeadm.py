# kubeadm (fake) for provision's tests: sets up a control plane and joins
# nodes on testbed nodes, where no real Kubernetes can run, through the
# fake kubelet (a systemd service) and the fake control-plane "images" it
# runs.
#
# What it copies (kubernetes.io reference pages "kubeadm init", "kubeadm
# join", "kubeadm token", "kubeadm reset", "kubeadm Configuration
# (v1beta3)" and "(v1beta4)", "Implementation details", "PKI certificates
# and requirements", "Authenticating with Bootstrap Tokens"; kubeadm's
# source for messages and exit codes, cmd/kubeadm/app/util/error.go,
# preflight/checks.go, discovery/token/token.go, util/pubkeypin):
#   - commands and flags: init [--config] [--skip-token-print]
#     [--ignore-preflight-errors] [--pod-network-cidr]
#     [--apiserver-advertise-address] [--node-name]; join [ENDPOINT]
#     [--token] [--discovery-token-ca-cert-hash]
#     [--discovery-token-unsafe-skip-ca-verification] [--config]
#     [--node-name]; token create [TOKEN] [--ttl] [--description]
#     [--usages] [--groups] [--print-join-command]; token list [-o
#     text|json|yaml]; token delete; token generate; reset [-f]; version
#     [-o short|json|yaml].  --kubeconfig (default /etc/kubernetes/admin.conf).
#   - HA control planes (issue 36; the section "HA: certificate key,
#     kubeadm-certs, etcd members" below and tests/fakes/README.md): init
#     --upload-certs [--certificate-key] [--skip-certificate-key-print],
#     init phase upload-certs, certs certificate-key, join --control-plane
#     [--certificate-key], the etcd member a joining control plane adds
#     and reset removes.
#   - config files: InitConfiguration, ClusterConfiguration,
#     JoinConfiguration in kubeadm.k8s.io/v1beta3 (kubeadm 1.22 and later)
#     and v1beta4 (1.31 and later; 1.30 rejects it with the scheme error of
#     the real one), KubeletConfiguration (kubelet.config.k8s.io/v1beta1),
#     KubeProxyConfiguration; unknown fields are warnings.
#   - preflight (per the Kubernetes minor of this build): root, CPUs >= 2,
#     memory >= 1700 MB, ports 6443/10259/10257/10250/2379/2380 free,
#     manifests and kubeconfigs not already there, /var/lib/etcd empty,
#     /proc/sys/net/ipv4/ip_forward = 1, and before 1.30 also
#     /proc/sys/net/bridge/bridge-nf-call-iptables = 1 (removed from 1.30
#     by kubernetes PR 123464), swap on = [WARNING Swap] (a warning since
#     1.22: the kubelet is what refuses swap), conntrack (before 1.32), ip,
#     iptables, mount, nsenter in PATH, the CRI socket answering, kubelet
#     service enabled (warning).  Failures print "[ERROR Name]: message"
#     lines in the real layout.
#   - exit codes: kubeadm defines 1 (general), 2 (preflight) and 3
#     (validation) in util/error.go, but chooses by the type of the error
#     it gets; init and join run preflight as a workflow phase whose errors
#     are wrapped ("error execution phase preflight: ..."), so a failed
#     preflight of init or join exits 1, as the real tool does.  An invalid
#     configuration (field errors, aggregated) exits 3.
#   - the files: /etc/kubernetes/pki (a real CA and certificates made with
#     openssl: apiserver, apiserver-kubelet-client, front-proxy, etcd, sa),
#     admin.conf (O=kubeadm:cluster-admins, 1.29+), super-admin.conf
#     (O=system:masters, 1.29+), kubelet.conf, controller-manager.conf,
#     scheduler.conf, bootstrap-kubelet.conf while joining, the static pod
#     manifests, /var/lib/kubelet/config.yaml and kubeadm-flags.env.
#   - the output: the phase lines of 1.30 ([init], [preflight], [certs],
#     [kubeconfig], [etcd], [control-plane], [kubelet-start],
#     [wait-control-plane], [kubelet-check], [api-check], [upload-config],
#     [kubelet], [upload-certs], [mark-control-plane], [bootstrap-token],
#     [kubelet-finalize], [addons]) and the closing text with the
#     "kubeadm join HOST:PORT --token ... --discovery-token-ca-cert-hash
#     sha256:..." command (`--token <value withheld>` with
#     --skip-token-print); `token create --print-join-command` prints the
#     command on one line with the real trailing space.
#   - the kubelet's resolvConf as componentconfigs/kubelet.go's Default()
#     sets it: where systemd-resolved is active (`systemctl is-active
#     systemd-resolved`) on the node running kubeadm, a configuration
#     without resolvConf gets /run/systemd/resolve/resolv.conf, one with
#     another value keeps it and kubeadm warns "The recommended value for
#     "resolvConf" in "KubeletConfiguration" is: ...".  init defaults the
#     configuration it also stores in the kubelet-config ConfigMap (the
#     control plane's choice reaches every joining node:
#     kubernetes/kubeadm#3034; kubeadm from 2026-09, kubernetes PR 141337,
#     keeps it out of the ConfigMap, the releases copied here do not);
#     join and upgrade node default the ConfigMap's configuration again on
#     their own node.
#   - patches (kubeadm's util/patches; "Customizing components with the
#     kubeadm API"): patches.directory of the Init/JoinConfiguration, or
#     --patches of join and upgrade node/apply: files named
#     TARGET[SUFFIX][+TYPE].yaml|json, TYPE strategic (the default), merge
#     or json, in name order; the stand-in applies target
#     kubeletconfiguration (strategic and merge as an RFC 7386 merge, json
#     as RFC 6902 add/replace/remove) to /var/lib/kubelet/config.yaml only,
#     never to the ConfigMap, printing "[patches] Applied patch of type
#     "application/merge-patch+json" to target "kubeletconfiguration"";
#     files for the control-plane components' targets are ignored.
#   - join discovery as token.go does it: cluster-info fetched without
#     trust every 5 s until the discovery timeout (JoinConfiguration
#     discovery.timeout, default 5m0s), its JWS signature for the token id
#     checked, the CA's public key checked against the pinned
#     sha256:<SPKI hash>, then TLS bootstrap by the kubelet; the real
#     error messages ("could not find a JWS signature in the cluster-info
#     ConfigMap for token ID ...", "none of the public keys ... are
#     pinned", "a Node with name ... and status "Ready" already exists").
#
# Test knobs (files in /etc/fake-kubernetes/knobs/): token-ttl ("SECONDS
# [TEXT]": tokens created from now on whose description contains TEXT,
# or all, live SECONDS seconds whatever --ttl says: a fake clock for
# expiry tests); join-delay (SECONDS the join waits before its discovery:
# a slow node).

import copy
import http.client
import ipaddress
import shutil

K8S = "/etc/kubernetes"
PKI = K8S + "/pki"
MANIFESTS = K8S + "/manifests"
KUBELET_DIR = "/var/lib/kubelet"
CRI_SOCKET = "unix:///var/run/containerd/containerd.sock"
DEFAULT_TOKEN_DESC = "The default bootstrap token generated by 'kubeadm init'."
DEFAULT_GROUP = "system:bootstrappers:kubeadm:default-node-token"
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
# etcd's and CoreDNS's images: those of this minor's row of
# roles/kubernetes.yaml (kubeadm deploys its own minor's SupportedEtcdVersion
# and CoreDNSVersion; kube-debs/build.sh writes KUBEADM_ETCD_IMAGE and
# KUBEADM_COREDNS_IMAGE from the row, so that `provision fetch --images`'s
# offline bundle holds what this kubeadm deploys), else these.
ETCD_IMAGE = globals().get("KUBEADM_ETCD_IMAGE", "registry.k8s.io/etcd:3.5.15-0")
COREDNS_IMAGE = globals().get("KUBEADM_COREDNS_IMAGE", "registry.k8s.io/coredns/coredns:v1.11.1")


class Fail(Exception):
    def __init__(self, msg, code=1):
        super().__init__(msg)
        self.code = code


def out(line=""):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def warn(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


# ---------------------------------------------------------------- flags


# Which flags each command accepts is kubeadm's table (CLI_FLAGS, from
# tests/fakes/cli/kubeadm.flags, written from kubeadm's sources: init, join,
# reset, token create/list/delete/generate, upgrade plan/apply/node, certs
# check-expiration, certs renew, version, and the global flags).  A flag
# outside the table: cobra's "unknown flag: --x",
# which kubeadm (its root command silences cobra's own printing) prints
# through util/error.go's CheckErr with "To see the stack trace of this
# error execute with --v=5 or higher", exit 1.
GLOBAL_KINDS = {"v": "str", "rootfs": "str", "vmodule": "str"}


def parse_args(argv, command, kinds, shorts=None):
    """argv (the words after COMMAND, e.g. "token create") as kubeadm parses
    them: cli_names(COMMAND) says which flags exist; kinds (name -> 'bool' |
    'str' | 'list' (comma-separated, repeatable) | 'dur') what the stand-in
    does with them."""
    kinds = {k: ("csv" if v == "list" else v) for k, v in dict(GLOBAL_KINDS, **kinds).items()}
    return pflag_parse(argv, cli_names(command), kinds, dict(shorts or {}, v="v"))


def split_command(argv, value_flags=("kubeconfig", "v", "rootfs", "vmodule")):
    """(first word that is not a flag or a flag's value, the other words):
    cobra's search for the subcommand, with flags allowed in front."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if "=" not in argv[i] and argv[i].lstrip("-") in value_flags:
            i += 1
        i += 1
    if i >= len(argv):
        return None, argv
    return argv[i], argv[:i] + argv[i + 1:]


# ---------------------------------------------------------------- configuration

V1BETA3 = "kubeadm.k8s.io/v1beta3"
V1BETA4 = "kubeadm.k8s.io/v1beta4"


def supported_kubeadm_apis():
    """The kubeadm API versions this minor reads: v1beta3 from 1.22 until
    1.36 (kubeadm 1.37 removed it: kubernetes/kubernetes#136016, listed in
    the 1.37 release notes, not 1.36's), v1beta4 from 1.31."""
    apis = []
    if 22 <= FAKE_MINOR <= 36:
        apis.append(V1BETA3)
    if FAKE_MINOR >= 31:
        apis.append(V1BETA4)
    return apis


# validateSupportedVersion's oldKnownAPIVersions (cmd/kubeadm/app/util/config/
# common.go): the kubeadm that last read each removed version.
OLD_KNOWN_APIS = {"kubeadm.k8s.io/v1alpha1": "v1.11", "kubeadm.k8s.io/v1alpha2": "v1.12",
                  "kubeadm.k8s.io/v1alpha3": "v1.14", "kubeadm.k8s.io/v1beta1": "v1.15",
                  "kubeadm.k8s.io/v1beta2": "v1.22"}
# #136016's release note: "The 1.35 kubeadm binary can be used to migrate to v1beta4".
if FAKE_MINOR >= 37:
    OLD_KNOWN_APIS[V1BETA3] = "v1.35"


def _v1beta3_schema():
    """The json fields of each v1beta3 type (v1beta3/types.go; the same table
    as ../shared/upstream/kubeadm/v1beta3-fields.json, which t0401 compares
    with this one).  "map": map[string]string; "Type"/"[]Type": a struct of
    this table or a list of it; anything else a scalar or a plain list."""
    return {
        "InitConfiguration": {"bootstrapTokens": "[]BootstrapToken", "nodeRegistration": "NodeRegistrationOptions",
                              "localAPIEndpoint": "APIEndpoint", "certificateKey": "string", "skipPhases": "list",
                              "patches": "Patches"},
        "ClusterConfiguration": {"etcd": "Etcd", "networking": "Networking", "kubernetesVersion": "string",
                                 "controlPlaneEndpoint": "string", "apiServer": "APIServer",
                                 "controllerManager": "ControlPlaneComponent", "scheduler": "ControlPlaneComponent",
                                 "dns": "DNS", "certificatesDir": "string", "imageRepository": "string",
                                 "featureGates": "map", "clusterName": "string"},
        "JoinConfiguration": {"nodeRegistration": "NodeRegistrationOptions", "caCertPath": "string",
                              "discovery": "Discovery", "controlPlane": "JoinControlPlane", "skipPhases": "list",
                              "patches": "Patches"},
        "ControlPlaneComponent": {"extraArgs": "map", "extraVolumes": "[]HostPathMount"},
        "APIServer": {"extraArgs": "map", "extraVolumes": "[]HostPathMount", "certSANs": "list",
                      "timeoutForControlPlane": "duration"},
        "DNS": {"imageRepository": "string", "imageTag": "string"},
        "APIEndpoint": {"advertiseAddress": "string", "bindPort": "int"},
        "NodeRegistrationOptions": {"name": "string", "criSocket": "string", "taints": "any",
                                    "kubeletExtraArgs": "map", "ignorePreflightErrors": "list",
                                    "imagePullPolicy": "string"},
        "Networking": {"serviceSubnet": "string", "podSubnet": "string", "dnsDomain": "string"},
        "Etcd": {"local": "LocalEtcd", "external": "ExternalEtcd"},
        "LocalEtcd": {"imageRepository": "string", "imageTag": "string", "dataDir": "string", "extraArgs": "map",
                      "serverCertSANs": "list", "peerCertSANs": "list"},
        "ExternalEtcd": {"endpoints": "list", "caFile": "string", "certFile": "string", "keyFile": "string"},
        "JoinControlPlane": {"localAPIEndpoint": "APIEndpoint", "certificateKey": "string"},
        "Discovery": {"bootstrapToken": "BootstrapTokenDiscovery", "file": "FileDiscovery",
                      "tlsBootstrapToken": "string", "timeout": "duration"},
        "BootstrapTokenDiscovery": {"token": "string", "apiServerEndpoint": "string", "caCertHashes": "list",
                                    "unsafeSkipCAVerification": "bool"},
        "FileDiscovery": {"kubeConfigPath": "string"},
        "HostPathMount": {"name": "string", "hostPath": "string", "mountPath": "string", "readOnly": "bool",
                          "pathType": "string"},
        "Patches": {"directory": "string"},
        "BootstrapToken": {"token": "string", "description": "string", "ttl": "duration", "expires": "string",
                           "usages": "list", "groups": "list"},
    }


def _v1beta4_schema():
    """v1beta3 with v1beta4's changes (v1beta4/doc.go; kubernetes/kubernetes
    #125029): extraArgs and kubeletExtraArgs lists of {name, value};
    discovery.timeout and apiServer.timeoutForControlPlane gone, replaced by
    timeouts.*; dryRun; extraEnvs; encryptionAlgorithm, the certificate
    validity periods, proxy and upgrade in ClusterConfiguration;
    imagePullSerial."""
    s = {k: dict(v) for k, v in _v1beta3_schema().items()}
    for typ in ("InitConfiguration", "JoinConfiguration"):
        s[typ].update({"dryRun": "bool", "timeouts": "Timeouts"})
    s["ClusterConfiguration"].update({"encryptionAlgorithm": "string", "certificateValidityPeriod": "duration",
                                      "caCertificateValidityPeriod": "duration", "proxy": "any", "upgrade": "any"})
    for typ in ("ControlPlaneComponent", "APIServer", "LocalEtcd"):
        s[typ].update({"extraArgs": "[]Arg", "extraEnvs": "list"})
    del s["APIServer"]["timeoutForControlPlane"]
    del s["Discovery"]["timeout"]
    s["NodeRegistrationOptions"].update({"kubeletExtraArgs": "[]Arg", "imagePullSerial": "bool"})
    s["Arg"] = {"name": "string", "value": "string"}
    s["Timeouts"] = {k: "duration" for k in ("controlPlaneComponentHealthCheck", "kubeletHealthCheck",
                                             "kubernetesAPICall", "etcdAPICall", "tlsBootstrap", "discovery",
                                             "upgradeManifests")}
    return s


KUBEADM_SCHEMA = {V1BETA3: _v1beta3_schema(), V1BETA4: _v1beta4_schema()}


def json_kind(v):
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "string"


def check_fields(doc, kind, typ, version, path, unknown):
    """Decode doc (of type typ, in a document of kind) as kubeadm does: a
    field of the wrong shape is an error (Go's encoding/json
    UnmarshalTypeError: "Go struct field KIND.PATH of type T"), an unknown
    field a strict-decoding warning, and dropped."""
    schema = KUBEADM_SCHEMA[version]
    short = version.rsplit("/", 1)[1]
    for k in list(doc):
        if not path and k in ("apiVersion", "kind"):
            continue
        field = path + k
        if k not in schema[typ]:
            unknown.append(field)
            del doc[k]
            continue
        ft, v = schema[typ][k], doc[k]
        if v is None:
            continue
        where = "Go struct field %s.%s" % (kind, field)
        if ft == "map" and not isinstance(v, dict):
            raise Fail("json: cannot unmarshal %s into %s of type map[string]string" % (json_kind(v), where))
        if ft.startswith("[]") and not isinstance(v, list):
            raise Fail("json: cannot unmarshal %s into %s of type []%s.%s" % (json_kind(v), where, short, ft[2:]))
        if ft.startswith("[]") and ft[2:] in schema:
            for item in v:
                if isinstance(item, dict):
                    check_fields(item, kind, ft[2:], version, field + ".", unknown)
        elif ft in schema:
            if not isinstance(v, dict):
                raise Fail("json: cannot unmarshal %s into %s of type %s.%s" % (json_kind(v), where, short, ft))
            check_fields(v, kind, ft, version, field + ".", unknown)


def load_config(path, want):
    """The documents of a kubeadm config file: {kind: doc}."""
    try:
        text = read_file(path)
    except OSError as e:
        raise Fail("unable to read config from \"%s\" : open %s: no such file or directory" % (path, path)) from e
    try:
        docs = yaml_load_all(text)
    except YAMLError as e:
        raise Fail("error converting YAML to JSON: yaml: %s" % e) from e
    found = {}
    for d in docs:
        if not isinstance(d, dict):
            raise Fail("couldn't interpret the config file %s: not a mapping" % path)
        av, kind = d.get("apiVersion", ""), d.get("kind", "")
        if av.startswith("kubeadm.k8s.io/"):
            if av in OLD_KNOWN_APIS:
                raise Fail("your configuration file uses an old API spec: %s (kind: %s). Please use kubeadm %s instead "
                           "and run 'kubeadm config migrate --old-config old.yaml --new-config new.yaml', which will "
                           "write the new, similar spec using a newer API version." %
                           (json.dumps(av), json.dumps(kind), OLD_KNOWN_APIS[av]))
            if av not in supported_kubeadm_apis() or kind not in ("InitConfiguration", "ClusterConfiguration",
                                                                  "JoinConfiguration"):
                raise Fail('no kind "%s" is registered for version "%s" in scheme '
                           '"k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31"' % (kind, av))
            if av == V1BETA3 and FAKE_MINOR >= 31:
                warn("W%s your configuration file uses a deprecated API spec: %s (kind: %s). Please use 'kubeadm "
                     "config migrate --old-config old.yaml --new-config new.yaml', which will write the new, similar "
                     "spec using a newer API version." % (time.strftime("%m%d %H:%M:%S"), json.dumps(av), json.dumps(kind)))
            unknown = []
            check_fields(d, kind, kind, av, "", unknown)
            for f in unknown:
                warn('W%s strict decoding error: unknown field "%s"' % (time.strftime("%m%d %H:%M:%S"), f))
        elif av == "kubelet.config.k8s.io/v1beta1" and kind == "KubeletConfiguration":
            pass
        elif av == "kubeproxy.config.k8s.io/v1alpha1" and kind == "KubeProxyConfiguration":
            pass
        else:
            warn("W%s [config] WARNING: Ignored YAML document with GroupVersionKind %s, Kind=%s" %
                 (time.strftime("%m%d %H:%M:%S"), av, kind))
            continue
        found[kind] = d
    if want == "init" and "JoinConfiguration" in found and "InitConfiguration" not in found and "ClusterConfiguration" not in found:
        raise Fail("the config file %s holds a JoinConfiguration: use it with kubeadm join" % path)
    return found


def default_iface_ip():
    r = subprocess.run(["ip", "-o", "route", "get", "1.1.1.1"], capture_output=True, text=True, check=False)
    m = re.search(r"\bsrc ([0-9.]+)", r.stdout)
    if m:
        return m.group(1)
    r = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"], capture_output=True, text=True, check=False)
    m = re.search(r"inet ([0-9.]+)/", r.stdout)
    if m:
        return m.group(1)
    raise Fail("unable to select an IP from default routes.")


def valid_cidr(s):
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)\.(\d+)/(\d+)$", s or "")
    return bool(m) and all(int(x) < 256 for x in m.groups()[:4]) and int(m.group(5)) <= 32


def cidr_first_ip(cidr, n):
    base, _ = cidr.split("/")
    a = [int(x) for x in base.split(".")]
    v = (a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3]) + n
    return "%d.%d.%d.%d" % (v >> 24 & 255, v >> 16 & 255, v >> 8 & 255, v & 255)


def version_ok(v):
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)$", v or "")
    if not m:
        return False
    return True


class InitCfg:
    """The effective init configuration: flags over the file over defaults."""

    def __init__(self, flags):
        docs = load_config(flags["config"], "init") if flags.get("config") else {}
        if flags.get("config"):
            for f in ("pod-network-cidr", "apiserver-advertise-address", "kubernetes-version", "service-cidr",
                      "control-plane-endpoint", "node-name", "cri-socket", "certificate-key"):
                if f in flags:
                    raise Fail("can not mix '--config' with arguments [%s]" % f)
        ic = docs.get("InitConfiguration", {})
        cc = docs.get("ClusterConfiguration", {})
        self.kubelet_cfg = docs.get("KubeletConfiguration", {})
        self.proxy_cfg = docs.get("KubeProxyConfiguration", {})
        self.api_version = ic.get("apiVersion") or cc.get("apiVersion") or supported_kubeadm_apis()[-1]
        nr = ic.get("nodeRegistration") or {}
        lep = ic.get("localAPIEndpoint") or {}
        net = cc.get("networking") or {}
        errs = []
        self.node_name = (flags.get("node-name") or nr.get("name") or socket.gethostname()).lower()
        self.cri_socket = flags.get("cri-socket") or nr.get("criSocket") or CRI_SOCKET
        self.advertise = flags.get("apiserver-advertise-address") or lep.get("advertiseAddress") or default_iface_ip()
        self.bind_port = int(lep.get("bindPort") or 6443)
        self.version = (flags.get("kubernetes-version") or cc.get("kubernetesVersion") or "v" + FAKE_VERSION)
        if self.version.startswith("stable"):
            self.version = "v" + FAKE_VERSION
        self.pod_subnet = flags.get("pod-network-cidr") or net.get("podSubnet") or ""
        self.svc_subnet = flags.get("service-cidr") or net.get("serviceSubnet") or "10.96.0.0/12"
        self.dns_domain = net.get("dnsDomain") or "cluster.local"
        self.cp_endpoint = flags.get("control-plane-endpoint") or cc.get("controlPlaneEndpoint") or ""
        self.cluster_name = cc.get("clusterName") or "kubernetes"
        self.cert_dir = cc.get("certificatesDir") or PKI
        self.image_repo = cc.get("imageRepository") or "registry.k8s.io"
        self.kubelet_extra = nr.get("kubeletExtraArgs") or {}
        if isinstance(self.kubelet_extra, list):  # v1beta4: [{name, value}]
            self.kubelet_extra = {a.get("name"): a.get("value") for a in self.kubelet_extra}
        self.taints = nr.get("taints")
        apis = cc.get("apiServer") or {}
        self.cert_sans = apis.get("certSANs") or []
        self.cp_timeout = parse_duration(apis.get("timeoutForControlPlane") or "4m0s")
        timeouts = ic.get("timeouts") or {}
        if timeouts.get("controlPlaneComponentHealthCheck"):
            self.cp_timeout = parse_duration(timeouts["controlPlaneComponentHealthCheck"])
        self.tokens = ic.get("bootstrapTokens")
        self.skip_phases = set(flags.get("skip-phases") or []) | set(ic.get("skipPhases") or [])
        self.patches = (ic.get("patches") or {}).get("directory")
        # --upload-certs is a flag only; the key a flag or InitConfiguration's certificateKey
        self.upload_certs = bool(flags.get("upload-certs"))
        self.certificate_key = flags.get("certificate-key") or ic.get("certificateKey") or ""
        self.skip_certificate_key_print = bool(flags.get("skip-certificate-key-print"))
        # validation (field errors are aggregated: exit 3)
        if not version_ok(self.version):
            errs.append('kubernetesVersion: Invalid value: "%s": must be a semantic version' % self.version)
        else:
            mv = int(self.version.lstrip("v").split(".")[1])
            if mv > FAKE_MINOR:
                raise Fail("this version of kubeadm only supports deploying clusters with the control plane version >= "
                           "1.%d.0. Current version: %s" % (FAKE_MINOR - 1, self.version) if mv < FAKE_MINOR - 1 else
                           "the specified version to deploy (%s) is newer than the kubeadm version (v%s)" %
                           (self.version, FAKE_VERSION))
            if mv < FAKE_MINOR - 1:
                raise Fail("this version of kubeadm only supports deploying clusters with the control plane version >= "
                           "1.%d.0. Current version: %s" % (FAKE_MINOR - 1, self.version))
        if self.pod_subnet and not valid_cidr(self.pod_subnet):
            errs.append('networking.podSubnet: Invalid value: "%s": couldn\'t parse subnet' % self.pod_subnet)
        if not valid_cidr(self.svc_subnet):
            errs.append('networking.serviceSubnet: Invalid value: "%s": couldn\'t parse subnet' % self.svc_subnet)
        if not re.match(r"^\d+\.\d+\.\d+\.\d+$", self.advertise):
            errs.append('localAPIEndpoint.advertiseAddress: Invalid value: "%s": must be a valid IP address' % self.advertise)
        if not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", self.node_name):
            errs.append('nodeRegistration.name: Invalid value: "%s": a lowercase RFC 1123 subdomain must consist of lower '
                        "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
                        % self.node_name)
        if self.kubelet_cfg.get("cgroupDriver") not in (None, "systemd", "cgroupfs"):
            errs.append('cgroupDriver: Invalid value: "%s"' % self.kubelet_cfg.get("cgroupDriver"))
        errs += certificate_key_errors(self.certificate_key, "certificateKey")
        for t in self.tokens or []:
            if t.get("token") and not TOKEN_RE.match(t["token"]):
                errs.append('bootstrapTokens[0].token: Invalid value: "%s": the bootstrap token is invalid' % t["token"])
        if errs:
            raise Fail(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]", 3)

    @property
    def endpoint(self):
        if self.cp_endpoint:
            return self.cp_endpoint if ":" in self.cp_endpoint else "%s:%d" % (self.cp_endpoint, self.bind_port)
        return "%s:%d" % (self.advertise, self.bind_port)

    def cluster_configuration(self):
        """ClusterConfiguration as kubeadm stores it in the kubeadm-config ConfigMap."""
        # 1.31 and later store v1beta4 whatever the file was written in
        # (kubernetes/kubernetes#125029), with extraArgs as a list
        v4 = FAKE_MINOR >= 31
        api_server = {"extraArgs": [{"name": "authorization-mode", "value": "Node,RBAC"}]} if v4 else \
            {"extraArgs": {"authorization-mode": "Node,RBAC"}, "timeoutForControlPlane": format_duration(self.cp_timeout)}
        cc = {
            "apiServer": api_server,
            "apiVersion": V1BETA4 if v4 else V1BETA3,
            "certificatesDir": self.cert_dir,
            "clusterName": self.cluster_name,
            "controllerManager": {},
            "dns": {},
            "etcd": {"local": {"dataDir": "/var/lib/etcd"}},
            "imageRepository": self.image_repo,
            "kind": "ClusterConfiguration",
            "kubernetesVersion": self.version,
            "networking": {"dnsDomain": self.dns_domain, "serviceSubnet": self.svc_subnet},
            "scheduler": {},
        }
        if self.cert_sans:
            cc["apiServer"]["certSANs"] = self.cert_sans
        if self.pod_subnet:
            cc["networking"]["podSubnet"] = self.pod_subnet
        if self.cp_endpoint:
            cc["controlPlaneEndpoint"] = self.cp_endpoint
        return cc


# ---------------------------------------------------------------- preflight


def _port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _proc_value(path):
    try:
        return read_file(path).strip()
    except OSError:
        return None


def _mem_mb():
    for ln in read_file("/proc/meminfo", "").splitlines():
        if ln.startswith("MemTotal:"):
            return int(ln.split()[1]) // 1024
    return 0


def _cri_ok(sock):
    path = sock.replace("unix://", "")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def preflight(kind, cri, ignore, cp=True, ca_check=True):
    """Run the checks of `kind` (init|join); print warnings; return errors
    [(name, message)] not ignored."""
    errors, warnings = [], []
    ignore = {i.lower() for i in ignore}

    def err(name, msg):
        if "all" in ignore or name.lower() in ignore:
            warnings.append((name, msg))
        else:
            errors.append((name, msg))

    if os.geteuid() != 0:
        err("IsPrivilegedUser", "user is not running as root")
        return report(errors, warnings)
    if cp:
        if (os.cpu_count() or 1) < 2:
            err("NumCPU", "the number of available CPUs %d is less than the required 2" % (os.cpu_count() or 1))
        if _mem_mb() < 1700:
            err("Mem", "the system RAM (%d MB) is less than the minimum 1700 MB" % _mem_mb())
    if not _cri_ok(cri):
        err("CRI", 'container runtime is not running: output: time="%s" level=fatal msg="validate service connection: '
                   'validate CRI v1 runtime API for endpoint \\"%s\\": rpc error: code = Unavailable desc = connection '
                   'error: desc = \\"transport: Error while dialing: dial unix %s: connect: no such file or directory\\""'
                   ', error: exit status 1' % (rfc3339(), cri, cri.replace("unix://", "")))
    enabled = subprocess.run(["systemctl", "is-enabled", "kubelet"], capture_output=True, text=True, check=False).stdout.strip()
    if enabled != "enabled":
        warnings.append(("Service-Kubelet", "kubelet service is not enabled, please run 'systemctl enable kubelet.service'"))
    ports = [6443, 10259, 10257, 10250, 2379, 2380] if cp else [10250]
    for p in ports:
        if not _port_free(p):
            err("Port-%d" % p, "Port %d is in use" % p)
    files = ["%s/kube-apiserver.yaml" % MANIFESTS, "%s/kube-controller-manager.yaml" % MANIFESTS,
             "%s/kube-scheduler.yaml" % MANIFESTS, "%s/etcd.yaml" % MANIFESTS] if cp else \
        [K8S + "/kubelet.conf", K8S + "/bootstrap-kubelet.conf"] + ([PKI + "/ca.crt"] if ca_check else [])
    for f in files:
        if os.path.exists(f):
            err("FileAvailable-" + f.replace("/", "-"), "%s already exists" % f)
    if cp and os.path.isdir("/var/lib/etcd") and os.listdir("/var/lib/etcd"):
        err("DirAvailable--var-lib-etcd", "/var/lib/etcd is not empty")
    checks = [("/proc/sys/net/ipv4/ip_forward", "FileContent--proc-sys-net-ipv4-ip_forward")]
    if FAKE_MINOR < 30:
        checks.insert(0, ("/proc/sys/net/bridge/bridge-nf-call-iptables",
                          "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables"))
    for path, name in checks:
        v = _proc_value(path)
        if v is None:
            err(name, "%s does not exist" % path)
        elif v != "1":
            err(name, "%s contents are not set to 1" % path)
    # SystemVerification (kubernetes/system-validators, cgroup_validator_linux.go):
    # cgroup v1 a warning from 1.31 (maintenance mode), an error from 1.35
    # (kubernetes/system-validators#59)
    if not cgroup2_unified():
        if FAKE_MINOR >= 35:
            err("SystemVerification", "cgroups v1 support is deprecated and will be removed in a future release. Please "
                "migrate to cgroups v2. To explicitly enable cgroups v1 support, you must set the kubelet configuration "
                "option 'FailCgroupV1' to 'false'. For more information see "
                "https://git.k8s.io/enhancements/keps/sig-node/5573-cgroup-v1-unsupported")
        elif FAKE_MINOR >= 31:
            warnings.append(("SystemVerification", "cgroups v1 support is in maintenance mode, please migrate to cgroups v2"))
    swaps = proc_swaps().strip().splitlines()
    if len(swaps) > 1:
        msg = ("swap is supported for cgroup v2 only; the NodeSwap feature gate of the kubelet is beta but disabled by default"
               if FAKE_MINOR in (29, 30) else
               "swap is supported for cgroup v2 only. The kubelet must be properly configured to use swap. Please refer to "
               "https://kubernetes.io/docs/concepts/architecture/nodes/#swap-memory, or disable swap on the node"
               if FAKE_MINOR >= 31 else
               "swap is enabled; production deployments should disable swap unless testing the NodeSwap feature gate of the kubelet")
        warnings.append(("Swap", msg))
    mandatory = (["conntrack"] if FAKE_MINOR < 32 else []) + ["ip", "iptables", "mount", "nsenter"]
    for exe in ["crictl"] + mandatory + ["ebtables", "ethtool", "socat", "tc", "touch"]:
        if shutil.which(exe) is None:
            if exe in mandatory:
                err("FileExisting-" + exe, "%s not found in system path" % exe)
            else:
                warnings.append(("FileExisting-" + exe, "%s not found in system path" % exe))
    return report(errors, warnings)


def preflight_cp_join(ignore, bind_port=6443):
    """RunInitNodeChecks for a control plane that joins (isSecondaryControlPlane:
    the checks common with join's ran already): CPUs, memory, the control
    plane's and etcd's ports, its manifests absent, /var/lib/etcd empty."""
    errors, warnings = [], []
    ignore = {i.lower() for i in ignore}

    def err(name, msg):
        (warnings if "all" in ignore or name.lower() in ignore else errors).append((name, msg))

    if (os.cpu_count() or 1) < 2:
        err("NumCPU", "the number of available CPUs %d is less than the required 2" % (os.cpu_count() or 1))
    if _mem_mb() < 1700:
        err("Mem", "the system RAM (%d MB) is less than the minimum 1700 MB" % _mem_mb())
    for p in (bind_port, 10259, 10257):
        if not _port_free(p):
            err("Port-%d" % p, "Port %d is in use" % p)
    for f in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"):
        f = "%s/%s.yaml" % (MANIFESTS, f)
        if os.path.exists(f):
            err("FileAvailable-" + f.replace("/", "-"), "%s already exists" % f)
    for p in (2379, 2380):
        if not _port_free(p):
            err("Port-%d" % p, "Port %d is in use" % p)
    if os.path.isdir("/var/lib/etcd") and os.listdir("/var/lib/etcd"):
        err("DirAvailable--var-lib-etcd", "/var/lib/etcd is not empty")
    return report(errors, warnings)


class ClusterCfg:
    """A joining control plane's view of the cluster: the kubeadm-config
    ClusterConfiguration and this node's name and API endpoint, with the
    attributes write_pki, write_kubeconfigs and write_manifests read."""

    def __init__(self, cc, node_name, advertise, bind_port):
        net = cc.get("networking") or {}
        self.node_name = node_name
        self.advertise = advertise
        self.bind_port = bind_port
        self.svc_subnet = net.get("serviceSubnet") or "10.96.0.0/12"
        self.pod_subnet = net.get("podSubnet") or ""
        self.dns_domain = net.get("dnsDomain") or "cluster.local"
        self.cp_endpoint = cc.get("controlPlaneEndpoint") or ""
        self.cluster_name = cc.get("clusterName") or "kubernetes"
        self.cert_dir = cc.get("certificatesDir") or PKI
        self.image_repo = cc.get("imageRepository") or "registry.k8s.io"
        self.version = cc.get("kubernetesVersion") or "v" + FAKE_VERSION
        self.cert_sans = (cc.get("apiServer") or {}).get("certSANs") or []

    endpoint = InitCfg.endpoint


def report(errors, warnings):
    for name, msg in warnings:
        warn("\t[WARNING %s]: %s" % (name, msg))
    return errors


def preflight_fail(errors):
    lines = ["error execution phase preflight: [preflight] Some fatal errors occurred:"]
    lines += ["\t[ERROR %s]: %s" % e for e in errors]
    lines.append("[preflight] If you know what you are doing, you can make a check non-fatal with "
                 "`--ignore-preflight-errors=...`")
    raise Fail("\n".join(lines))


# ---------------------------------------------------------------- API helpers


def retry(fn, timeout, what):
    """fn() until it does not fail with a connection error, for at most
    timeout seconds (kubeadm's API calls retry while the server restarts)."""
    deadline = now() + timeout
    while True:
        try:
            return fn()
        except ConnError as e:
            if now() > deadline:
                raise Fail("%s: %s" % (what, e)) from e
            time.sleep(1)


def api_admin(kubeconfig=K8S + "/admin.conf"):
    try:
        return Client.from_kubeconfig(kubeconfig)
    except KubeconfigError as e:
        raise Fail("failed to load admin kubeconfig: open %s: no such file or directory" % kubeconfig) from e


def create_or_update(c, res, ns, obj):
    try:
        return c.post(res.path(ns), obj)
    except APIError as e:
        if e.code != 409:
            raise
        cur = c.get(res.path(ns, obj["metadata"]["name"]))
        obj = dict(obj)
        obj["metadata"] = dict(obj["metadata"], resourceVersion=cur["metadata"]["resourceVersion"])
        return c.put(res.path(ns, obj["metadata"]["name"]), obj)


R = resource_by_name


# ---------------------------------------------------------------- files of init


def write_pki(cfg):
    d = cfg.cert_dir
    os.makedirs(d + "/etcd", exist_ok=True)
    out('[certs] Using certificateDir folder "%s"' % d)
    svc_ip = cidr_first_ip(cfg.svc_subnet, 1)
    host = cfg.node_name

    def gen(name, fn, ca=None, dns_ips=None):
        # kubeadm's certs phases (cmd/phases/init/certs.go runCAPhase and
        # runCertPhase, phases/certs/certs.go): a certificate already on
        # disk is used, not made again -- a CA when its certificate loads
        # (keyless: external CA), any other when its key loads, it is
        # signed by its CA and holds the SANs this init needs.
        crt, key = "%s/%s.crt" % (d, name), "%s/%s.key" % (d, name)
        if ca is None:
            if os.path.exists(crt):
                if os.path.exists(key):
                    out("[certs] Using existing %s certificate authority" % name)
                else:
                    out("[certs] Using existing %s keyless certificate authority" % name)
                return
        elif os.path.exists(crt) or os.path.exists(key):
            if not os.path.exists(key):
                raise Fail("error execution phase certs/%s: failure loading %s key: couldn't load the private key "
                           "file %s: open %s: no such file or directory" % (name, name, key, key))
            if not os.path.exists(crt):
                raise Fail("error execution phase certs/%s: failure loading %s certificate: couldn't load the "
                           "certificate file %s: open %s: no such file or directory" % (name, name, crt, crt))
            r = subprocess.run(["openssl", "verify", "-CAfile", "%s/%s.crt" % (d, ca), crt],
                               capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise Fail("error execution phase certs/%s: certificate %s is not signed by corresponding CA" % (name, name))
            if dns_ips:
                have_dns, have_ips = _sans(read_file(crt))
                # IPs compared as addresses (openssl prints ::1 as 0:0:0:0:0:0:0:1)
                have_ips = [str(ipaddress.ip_address(a.strip())) for a in have_ips]
                for want in dns_ips[0] + [str(ipaddress.ip_address(a)) for a in dns_ips[1]]:
                    if want not in have_dns and want not in have_ips:
                        raise Fail("error execution phase certs/%s: certificate %s is invalid, error: x509: certificate "
                                   "is valid for %s, not %s" % (name, name, ", ".join(have_dns + have_ips), want))
            out("[certs] Using existing %s certificate and key on disk" % name)
            return
        out('[certs] Generating "%s" certificate and key' % name)
        fn()
        if dns_ips:
            out("[certs] %s serving cert is signed for DNS names [%s] and IPs [%s]"
                % (name, " ".join(dns_ips[0]), " ".join(dns_ips[1])))

    gen("ca", lambda: make_ca(d + "/ca.key", d + "/ca.crt", "kubernetes"))
    dns = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + cfg.dns_domain, host]
    ips = [svc_ip, cfg.advertise]
    for s in cfg.cert_sans:
        (ips if re.match(r"^\d+\.\d+\.\d+\.\d+$", s) else dns).append(s)
    if cfg.cp_endpoint:
        h = cfg.cp_endpoint.rsplit(":", 1)[0]
        (ips if re.match(r"^\d+\.\d+\.\d+\.\d+$", h) else dns).append(h)
    gen("apiserver", lambda: make_leaf(d + "/ca.crt", d + "/ca.key", d + "/apiserver.key", d + "/apiserver.crt",
                                       "kube-apiserver", dns=dns, ips=ips, usage="server"), "ca", (dns, ips))
    gen("apiserver-kubelet-client", lambda: make_leaf(d + "/ca.crt", d + "/ca.key", d + "/apiserver-kubelet-client.key",
                                                      d + "/apiserver-kubelet-client.crt", "kube-apiserver-kubelet-client",
                                                      orgs=["kubeadm:cluster-admins"] if FAKE_MINOR >= 29 else ["system:masters"]),
        "ca")
    gen("front-proxy-ca", lambda: make_ca(d + "/front-proxy-ca.key", d + "/front-proxy-ca.crt", "front-proxy-ca"))
    gen("front-proxy-client", lambda: make_leaf(d + "/front-proxy-ca.crt", d + "/front-proxy-ca.key",
                                                d + "/front-proxy-client.key", d + "/front-proxy-client.crt", "front-proxy-client"),
        "front-proxy-ca")
    gen("etcd/ca", lambda: make_ca(d + "/etcd/ca.key", d + "/etcd/ca.crt", "etcd-ca"))
    eips = [cfg.advertise, "127.0.0.1", "::1"]
    edns = [host, "localhost"]
    gen("etcd/server", lambda: make_leaf(d + "/etcd/ca.crt", d + "/etcd/ca.key", d + "/etcd/server.key",
                                         d + "/etcd/server.crt", host, dns=edns, ips=eips, usage="both"), "etcd/ca", (edns, eips))
    gen("etcd/peer", lambda: make_leaf(d + "/etcd/ca.crt", d + "/etcd/ca.key", d + "/etcd/peer.key",
                                       d + "/etcd/peer.crt", host, dns=edns, ips=eips, usage="both"), "etcd/ca", (edns, eips))
    gen("etcd/healthcheck-client", lambda: make_leaf(d + "/etcd/ca.crt", d + "/etcd/ca.key",
                                                     d + "/etcd/healthcheck-client.key", d + "/etcd/healthcheck-client.crt",
                                                     "kube-etcd-healthcheck-client"), "etcd/ca")
    gen("apiserver-etcd-client", lambda: make_leaf(d + "/etcd/ca.crt", d + "/etcd/ca.key", d + "/apiserver-etcd-client.key",
                                                   d + "/apiserver-etcd-client.crt", "kube-apiserver-etcd-client"), "etcd/ca")
    # phases/certs CreateServiceAccountKeyAndPublicKeyFiles: a loadable
    # sa.key is kept
    if os.path.exists(d + "/sa.key"):
        out('[certs] Using the existing "sa" key')
        return
    out('[certs] Generating "sa" key and public key')
    gen_key(d + "/sa.key")
    write_file(d + "/sa.pub", openssl("pkey", "-in", d + "/sa.key", "-pubout"), 0o600)


def kubelet_local_mode():
    """kubeadm's ControlPlaneKubeletLocalMode by default: 1.33 and later."""
    return FAKE_MINOR >= 33


def write_kubeconfigs(cfg, only=None):
    """init's kubeconfig files; only: the names to write (a control plane
    that joins writes admin.conf, controller-manager.conf, scheduler.conf:
    phases/kubeconfig CreateJoinControlPlaneKubeConfigFiles)."""
    d = cfg.cert_dir
    ca = read_file(d + "/ca.crt")
    server = "https://" + cfg.endpoint
    local = "https://%s:%d" % (cfg.advertise, cfg.bind_port)
    out('[kubeconfig] Using kubeconfig folder "%s"' % K8S)
    entries = [("admin.conf", "kubernetes-admin", ["kubeadm:cluster-admins"] if FAKE_MINOR >= 29 else ["system:masters"], server)]
    if FAKE_MINOR >= 29:
        entries.append(("super-admin.conf", "kubernetes-super-admin", ["system:masters"], server))
    # ControlPlaneKubeletLocalMode (on by default from 1.33, kubernetes PR
    # 129956; locked on in 1.35, PR 134106; the gate gone in 1.36, PR
    # 135773): a control plane's kubelet talks to its own API server
    entries += [("kubelet.conf", "system:node:" + cfg.node_name, ["system:nodes"], local if kubelet_local_mode() else server),
                ("controller-manager.conf", "system:kube-controller-manager", [], local),
                ("scheduler.conf", "system:kube-scheduler", [], local)]
    if only is not None:
        entries = [e for e in entries if e[0] in only]
    with tempfile.TemporaryDirectory() as tmp:
        for fname, user, orgs, srv in entries:
            out('[kubeconfig] Writing "%s" kubeconfig file' % fname)
            key = os.path.join(tmp, "k")
            cert = make_leaf(d + "/ca.crt", d + "/ca.key", key, os.path.join(tmp, "c"), user, orgs=orgs)
            kname = "system:node:%s" % cfg.node_name if fname == "kubelet.conf" else user
            write_file("%s/%s" % (K8S, fname), kubeconfig_text(cfg.cluster_name, srv, ca, kname, cert, read_file(key)), 0o600)


def pod_manifest(name, image, command, cfg, volumes, probe_port=None, probe_path="/livez", probe_scheme="HTTPS",
                 host=None, annotations=None, requests_cpu="250m"):
    mounts, vols = [], []
    for vname, path, ro, vtype in volumes:
        m = {"mountPath": path, "name": vname}
        if ro:
            m["readOnly"] = True
        mounts.append(m)
        hp = {"path": path, "type": vtype}
        vols.append({"hostPath": hp, "name": vname})
    c = {"command": command, "image": image, "imagePullPolicy": "IfNotPresent", "name": name,
         "resources": {"requests": {"cpu": requests_cpu}}, "volumeMounts": mounts}
    if probe_port:
        probe = {"failureThreshold": 8, "httpGet": {"host": host or "127.0.0.1", "path": probe_path, "port": probe_port,
                                                     "scheme": probe_scheme},
                 "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 15}
        c["livenessProbe"] = probe
        c["startupProbe"] = dict(probe, failureThreshold=24)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"creationTimestamp": None, "labels": {"component": name, "tier": "control-plane"},
                        "name": name, "namespace": "kube-system"},
           "spec": {"containers": [c], "hostNetwork": True, "priority": 2000001000,
                    "priorityClassName": "system-node-critical", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "volumes": vols},
           "status": {}}
    if annotations:
        pod["metadata"]["annotations"] = annotations
    return yaml_dump(pod)


def write_etcd_manifest(cfg, initial_cluster=None):
    """The etcd static pod (phases/etcd/local.go GetEtcdPodSpec), flags from
    etcd_command."""
    d = cfg.cert_dir
    os.makedirs(MANIFESTS, exist_ok=True)
    host = "[%s]" % cfg.advertise if ":" in cfg.advertise else cfg.advertise
    write_file(MANIFESTS + "/etcd.yaml", pod_manifest(
        "etcd", ETCD_IMAGE, etcd_command(cfg.node_name, cfg.advertise, d, initial_cluster=initial_cluster), cfg,
        [("etcd-certs", d + "/etcd", False, "DirectoryOrCreate"), ("etcd-data", "/var/lib/etcd", False, "DirectoryOrCreate")],
        probe_port=2381, probe_path="/health?exclude=NOSPACE&serializable=true", probe_scheme="HTTP",
        annotations={"kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://%s:2379" % host},
        requests_cpu="100m"), 0o600)


def write_manifests(cfg, etcd=True):
    d = cfg.cert_dir
    v = cfg.version if cfg.version.startswith("v") else "v" + cfg.version
    repo = cfg.image_repo
    os.makedirs(MANIFESTS, exist_ok=True)
    certs = [("ca-certs", "/etc/ssl/certs", True, "DirectoryOrCreate"), ("k8s-certs", d, True, "DirectoryOrCreate")]
    if etcd:
        out('[etcd] Creating static Pod manifest for local etcd in "%s"' % MANIFESTS)
        write_etcd_manifest(cfg)
    out('[control-plane] Using manifest folder "%s"' % MANIFESTS)
    out('[control-plane] Creating static Pod manifest for "kube-apiserver"')
    api = ["kube-apiserver", "--advertise-address=%s" % cfg.advertise, "--allow-privileged=true",
           "--authorization-mode=Node,RBAC", "--client-ca-file=%s/ca.crt" % d, "--enable-admission-plugins=NodeRestriction",
           "--enable-bootstrap-token-auth=true", "--etcd-cafile=%s/etcd/ca.crt" % d,
           "--etcd-certfile=%s/apiserver-etcd-client.crt" % d, "--etcd-keyfile=%s/apiserver-etcd-client.key" % d,
           "--etcd-servers=https://127.0.0.1:2379", "--kubelet-client-certificate=%s/apiserver-kubelet-client.crt" % d,
           "--kubelet-client-key=%s/apiserver-kubelet-client.key" % d,
           "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
           "--proxy-client-cert-file=%s/front-proxy-client.crt" % d, "--proxy-client-key-file=%s/front-proxy-client.key" % d,
           "--requestheader-allowed-names=front-proxy-client", "--requestheader-client-ca-file=%s/front-proxy-ca.crt" % d,
           "--requestheader-extra-headers-prefix=X-Remote-Extra-", "--requestheader-group-headers=X-Remote-Group",
           "--requestheader-username-headers=X-Remote-User", "--secure-port=%d" % cfg.bind_port,
           "--service-account-issuer=https://kubernetes.default.svc.%s" % cfg.dns_domain,
           "--service-account-key-file=%s/sa.pub" % d, "--service-account-signing-key-file=%s/sa.key" % d,
           "--service-cluster-ip-range=%s" % cfg.svc_subnet, "--tls-cert-file=%s/apiserver.crt" % d,
           "--tls-private-key-file=%s/apiserver.key" % d]
    write_file(MANIFESTS + "/kube-apiserver.yaml", pod_manifest(
        "kube-apiserver", "%s/kube-apiserver:%s" % (repo, v), api, cfg, certs, probe_port=cfg.bind_port,
        host=cfg.advertise, annotations={"kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint":
                                         "%s:%d" % (cfg.advertise, cfg.bind_port)}), 0o600)
    out('[control-plane] Creating static Pod manifest for "kube-controller-manager"')
    cm = ["kube-controller-manager", "--authentication-kubeconfig=%s/controller-manager.conf" % K8S,
          "--authorization-kubeconfig=%s/controller-manager.conf" % K8S, "--bind-address=127.0.0.1",
          "--client-ca-file=%s/ca.crt" % d, "--cluster-name=%s" % cfg.cluster_name,
          "--cluster-signing-cert-file=%s/ca.crt" % d, "--cluster-signing-key-file=%s/ca.key" % d,
          "--controllers=*,bootstrapsigner,tokencleaner", "--kubeconfig=%s/controller-manager.conf" % K8S,
          "--leader-elect=true", "--requestheader-client-ca-file=%s/front-proxy-ca.crt" % d,
          "--root-ca-file=%s/ca.crt" % d, "--service-account-private-key-file=%s/sa.key" % d,
          "--use-service-account-credentials=true"]
    if cfg.pod_subnet:
        cm[1:1] = ["--allocate-node-cidrs=true"]
        cm.insert(cm.index("--cluster-name=%s" % cfg.cluster_name), "--cluster-cidr=%s" % cfg.pod_subnet)
        cm.append("--service-cluster-ip-range=%s" % cfg.svc_subnet)
    write_file(MANIFESTS + "/kube-controller-manager.yaml", pod_manifest(
        "kube-controller-manager", "%s/kube-controller-manager:%s" % (repo, v), cm, cfg,
        certs + [("kubeconfig", K8S + "/controller-manager.conf", True, "FileOrCreate")], probe_port=10257,
        probe_path="/healthz", requests_cpu="200m"), 0o600)
    out('[control-plane] Creating static Pod manifest for "kube-scheduler"')
    sch = ["kube-scheduler", "--authentication-kubeconfig=%s/scheduler.conf" % K8S,
           "--authorization-kubeconfig=%s/scheduler.conf" % K8S, "--bind-address=127.0.0.1",
           "--kubeconfig=%s/scheduler.conf" % K8S, "--leader-elect=true"]
    write_file(MANIFESTS + "/kube-scheduler.yaml", pod_manifest(
        "kube-scheduler", "%s/kube-scheduler:%s" % (repo, v), sch, cfg,
        [("kubeconfig", K8S + "/scheduler.conf", True, "FileOrCreate")], probe_port=10259, probe_path="/healthz",
        requests_cpu="100m"), 0o600)


RESOLVED_RESOLV_CONF = "/run/systemd/resolve/resolv.conf"


def resolved_active():
    r = subprocess.run(["systemctl", "is-active", "systemd-resolved"], capture_output=True, text=True, check=False)
    return r.stdout.strip() == "active"


def default_resolv_conf(kc):
    """Default()'s resolvConf on this node: only where systemd-resolved is active."""
    if not resolved_active():
        return kc
    if not kc.get("resolvConf"):
        kc["resolvConf"] = RESOLVED_RESOLV_CONF
    elif kc["resolvConf"] != RESOLVED_RESOLV_CONF:
        warn('W%s The recommended value for "resolvConf" in "KubeletConfiguration" is: %s; the provided value is: %s'
             % (time.strftime("%m%d %H:%M:%S"), RESOLVED_RESOLV_CONF, kc["resolvConf"]))
    return kc


PATCH_TYPES = {"strategic": "application/strategic-merge-patch+json", "merge": "application/merge-patch+json",
               "json": "application/json-patch+json"}
PATCH_TARGETS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubeletconfiguration",
                 "corednsdeployment")


def merge_patch(doc, patch):
    """RFC 7386: objects merge key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    doc = dict(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            doc.pop(k, None)
        else:
            doc[k] = merge_patch(doc.get(k), v)
    return doc


def json_patch(doc, ops):
    """RFC 6902's add, replace and remove on object members."""
    for op in ops or []:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op.get("path", "").split("/")[1:]]
        parent = doc
        for k in keys[:-1]:
            parent = parent.setdefault(k, {})
        if op.get("op") in ("add", "replace"):
            parent[keys[-1]] = op.get("value")
        elif op.get("op") == "remove":
            parent.pop(keys[-1], None)
        else:
            raise Fail("the patch operation %s is not supported by this stand-in" % json.dumps(op.get("op")))
    return doc


def apply_kubelet_patches(kubelet_yaml, directory):
    """The KubeletConfiguration text with the kubeletconfiguration patches of
    DIRECTORY applied, in file name order."""
    if not directory:
        return kubelet_yaml
    try:
        names = sorted(os.listdir(directory))
    except OSError as e:
        raise Fail("could not list patch files for path %s: %s" % (json.dumps(directory), e.strerror)) from e
    doc = None
    for name in names:
        m = re.match(r"^(%s)[^+.]*(?:\+(strategic|merge|json))?\.(yaml|json)$" % "|".join(PATCH_TARGETS), name)
        if not m or m.group(1) != "kubeletconfiguration":
            continue
        text = read_file(os.path.join(directory, name), "")
        patch = yaml_load(text)
        if doc is None:
            doc = yaml_load(kubelet_yaml) or {}
        ptype = m.group(2) or "strategic"
        doc = json_patch(doc, patch) if ptype == "json" else merge_patch(doc, patch or {})
        out('[patches] Applied patch of type "%s" to target "kubeletconfiguration"' % PATCH_TYPES[ptype])
    return kubelet_yaml if doc is None else yaml_dump(doc)


def kubelet_configuration(user_cfg, cluster_dns, dns_domain):
    """KubeletConfiguration as kubeadm writes it: its defaults, then what
    the user gave."""
    kc = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"cacheTTL": "0s", "enabled": True},
                           "x509": {"clientCAFile": PKI + "/ca.crt"}},
        "authorization": {"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "0s", "cacheUnauthorizedTTL": "0s"}},
        "cgroupDriver": "systemd",
        "clusterDNS": [cluster_dns],
        "clusterDomain": dns_domain,
        "containerRuntimeEndpoint": "",
        "cpuManagerReconcilePeriod": "0s",
        "evictionPressureTransitionPeriod": "0s",
        "fileCheckFrequency": "0s",
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "httpCheckFrequency": "0s",
        "imageMaximumGCAge": "0s",
        "imageMinimumGCAge": "0s",
        "kind": "KubeletConfiguration",
        "logging": {"flushFrequency": 0, "options": {"json": {"infoBufferSize": "0"}}, "verbosity": 0},
        "memorySwap": {},
        "nodeStatusReportFrequency": "0s",
        "nodeStatusUpdateFrequency": "0s",
        "rotateCertificates": True,
        "runtimeRequestTimeout": "0s",
        "shutdownGracePeriod": "0s",
        "shutdownGracePeriodCriticalPods": "0s",
        "staticPodPath": MANIFESTS,
        "streamingConnectionIdleTimeout": "0s",
        "syncFrequency": "0s",
        "volumeStatsAggPeriod": "0s",
    }
    for k, v in (user_cfg or {}).items():
        if k not in ("apiVersion", "kind"):
            kc[k] = v
    return default_resolv_conf(kc)


def write_kubelet_files(kubelet_yaml, hostname_override=None, extra=None, patches=None):
    out('[kubelet-start] Writing kubelet environment file with flags to file "%s/kubeadm-flags.env"' % KUBELET_DIR)
    args = ["--container-runtime-endpoint=" + CRI_SOCKET]
    if FAKE_MINOR <= 30:
        args.append("--pod-infra-container-image=" + PAUSE_IMAGE)
    if hostname_override:
        args.append("--hostname-override=" + hostname_override)
    for k, v in sorted((extra or {}).items()):
        args.append("--%s=%s" % (k, v))
    write_file(KUBELET_DIR + "/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="%s"\n' % " ".join(args), 0o644)
    kubelet_yaml = apply_kubelet_patches(kubelet_yaml, patches)
    out('[kubelet-start] Writing kubelet configuration to file "%s/config.yaml"' % KUBELET_DIR)
    write_file(KUBELET_DIR + "/config.yaml", kubelet_yaml, 0o644)


def start_kubelet():
    out("[kubelet-start] Starting the kubelet")
    subprocess.run(["systemctl", "restart", "kubelet"], capture_output=True, check=False, timeout=120)


def wait_kubelet(timeout):
    out("[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This can take up to %s"
        % format_duration(timeout))
    t0 = now()
    last = ""
    while now() - t0 < timeout:
        try:
            st, body = Client("http://127.0.0.1:10248", timeout=2).raw("GET", "/healthz")
            if st == 200 and body.strip() == b"ok":
                out("[kubelet-check] The kubelet is healthy after %.9fs" % (now() - t0))
                return
            last = "the kubelet answered %d" % st
        except ConnError as e:
            last = 'Get "http://127.0.0.1:10248/healthz": %s' % e
        time.sleep(0.5)
    out("[kubelet-check] The kubelet is not healthy after %.9fs" % (now() - t0))
    out("")
    out("Unfortunately, an error has occurred:")
    out("\tThe HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: %s" % last)
    out("")
    out("This error is likely caused by:")
    out("\t- The kubelet is not running")
    out("\t- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups disabled)")
    out("")
    out("If you are on a systemd-powered system, you can try to troubleshoot the error with the following commands:")
    out("\t- 'systemctl status kubelet'")
    out("\t- 'journalctl -xeu kubelet'")
    out("")
    raise Fail("error execution phase wait-control-plane: The HTTP call equal to 'curl -sSL "
               "http://127.0.0.1:10248/healthz' returned error: %s" % last)


def wait_apiserver(cfg, timeout):
    out("[api-check] Waiting for a healthy API server. This can take up to %s" % format_duration(timeout))
    c = api_admin()
    t0 = now()
    while now() - t0 < timeout:
        try:
            st, body = c.raw("GET", "/healthz")
            if st == 200:
                out("[api-check] The API server is healthy after %.9fs" % (now() - t0))
                return c
        except ConnError:
            pass
        time.sleep(0.5)
    out("[api-check] The API server is not healthy after %.9fs" % (now() - t0))
    out("")
    out("Unfortunately, an error has occurred:")
    out("\tcontext deadline exceeded")
    out("")
    out("This error is likely caused by:")
    out("\t- The kubelet is not running")
    out("\t- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups disabled)")
    out("")
    out("If you are on a systemd-powered system, you can try to troubleshoot the error with the following commands:")
    out("\t- 'systemctl status kubelet'")
    out("\t- 'journalctl -xeu kubelet'")
    out("")
    out("Additionally, a control plane component may have crashed or exited when started by the container runtime.")
    out("To troubleshoot, list all containers using your preferred container runtimes CLI.")
    out("Here is one example how you may list all running Kubernetes containers by using crictl:")
    out("\t- 'crictl --runtime-endpoint %s ps -a | grep kube | grep -v pause'" % cfg.cri_socket)
    out("\tOnce you have found the failing container, you can inspect its logs with:")
    out("\t- 'crictl --runtime-endpoint %s logs CONTAINERID'" % cfg.cri_socket)
    raise Fail("error execution phase wait-control-plane: could not initialize a Kubernetes cluster")


def token_secret(token, ttl, desc, usages, groups):
    tid, tsec = token.split(".")
    o = knob("token-ttl")
    if o:
        parts = o.split(None, 1)
        if len(parts) == 1 or parts[1] in (desc or ""):
            ttl = float(parts[0])
    data = {"token-id": tid, "token-secret": tsec}
    if desc:
        data["description"] = desc
    if ttl:
        data["expiration"] = rfc3339(now() + ttl)
    for u in usages:
        data["usage-bootstrap-" + u] = "true"
    if groups:
        data["auth-extra-groups"] = ",".join(groups)
    return {"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": "bootstrap-token-" + tid, "namespace": "kube-system"},
            "data": {k: b64(v) for k, v in data.items()}}


def rbac(c, cfg):
    """The RBAC objects of kubeadm's bootstrap-token phase (names from the
    kubeadm "Implementation details" page)."""
    objs = [
        (R("clusterroles"), None, {"metadata": {"name": "kubeadm:get-nodes"},
                                   "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}),
        (R("clusterrolebindings"), None, {"metadata": {"name": "kubeadm:get-nodes"},
                                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubeadm:get-nodes"},
                                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": DEFAULT_GROUP}]}),
        (R("clusterrolebindings"), None, {"metadata": {"name": "kubeadm:kubelet-bootstrap"},
                                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
                                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": DEFAULT_GROUP}]}),
        (R("clusterrolebindings"), None, {"metadata": {"name": "kubeadm:node-autoapprove-bootstrap"},
                                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                      "name": "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
                                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": DEFAULT_GROUP}]}),
        (R("clusterrolebindings"), None, {"metadata": {"name": "kubeadm:node-autoapprove-certificate-rotation"},
                                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                      "name": "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
                                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]}),
        (R("roles"), "kube-public", {"metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
                                     "rules": [{"apiGroups": [""], "resourceNames": ["cluster-info"], "resources": ["configmaps"], "verbs": ["get"]}]}),
        (R("rolebindings"), "kube-public", {"metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
                                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kubeadm:bootstrap-signer-clusterinfo"},
                                            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]}),
    ]
    for res, ns, o in objs:
        retry(lambda: create_or_update(c, res, ns, o), 60, "unable to create RBAC rules")


def addons(c, cfg):
    dns_ip = cidr_first_ip(cfg.svc_subnet, 10)
    corefile = (".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n"
                "    kubernetes %s in-addr.arpa ip6.arpa {\n       pods insecure\n       fallthrough in-addr.arpa ip6.arpa\n"
                "       ttl 30\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n"
                "    cache 30\n    loop\n    reload\n    loadbalance\n}\n" % cfg.dns_domain)
    objs = [
        (R("configmaps"), "kube-system", {"metadata": {"name": "coredns", "namespace": "kube-system"}, "data": {"Corefile": corefile}}),
        (R("serviceaccounts"), "kube-system", {"metadata": {"name": "coredns", "namespace": "kube-system"}}),
        (R("deployments"), "kube-system", {
            "metadata": {"name": "coredns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}},
                     "template": {"metadata": {"labels": {"k8s-app": "kube-dns"}},
                                  "spec": {"containers": [{"name": "coredns", "image": COREDNS_IMAGE, "args": ["-conf", "/etc/coredns/Corefile"],
                                                           "ports": [{"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                                                     {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                                                                     {"containerPort": 9153, "name": "metrics", "protocol": "TCP"}],
                                                           "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
                                                           "volumeMounts": [{"mountPath": "/etc/coredns", "name": "config-volume", "readOnly": True}]}],
                                           "dnsPolicy": "Default", "nodeSelector": {"kubernetes.io/os": "linux"},
                                           "priorityClassName": "system-cluster-critical", "serviceAccountName": "coredns",
                                           "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                                           {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}],
                                           "volumes": [{"configMap": {"items": [{"key": "Corefile", "path": "Corefile"}], "name": "coredns"},
                                                        "name": "config-volume"}]}}}}),
        (R("services"), "kube-system", {
            "metadata": {"name": "kube-dns", "namespace": "kube-system",
                         "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}},
            "spec": {"clusterIP": dns_ip, "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                                                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                                                    {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}],
                     "selector": {"k8s-app": "kube-dns"}}}),
    ]
    for res, ns, o in objs:
        retry(lambda: create_or_update(c, res, ns, o), 60, "unable to create the CoreDNS addon")
    out("[addons] Applied essential addon: CoreDNS")
    proxy_conf = yaml_dump(dict({"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
                                 "clusterCIDR": cfg.pod_subnet, "mode": "",
                                 "clientConnection": {"kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf"}},
                                **{k: v for k, v in cfg.proxy_cfg.items() if k not in ("apiVersion", "kind")}))
    v = cfg.version if cfg.version.startswith("v") else "v" + cfg.version
    objs = [
        (R("serviceaccounts"), "kube-system", {"metadata": {"name": "kube-proxy", "namespace": "kube-system"}}),
        (R("configmaps"), "kube-system", {"metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"app": "kube-proxy"}},
                                          "data": {"config.conf": proxy_conf,
                                                   "kubeconfig.conf": kubeconfig_text(cfg.cluster_name, "https://" + cfg.endpoint,
                                                                                      read_file(cfg.cert_dir + "/ca.crt"), "default")}}),
        (R("daemonsets"), "kube-system", {
            "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
            "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                     "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                  "spec": {"containers": [{"name": "kube-proxy", "image": "%s/kube-proxy:%s" % (cfg.image_repo, v),
                                                           "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf",
                                                                       "--hostname-override=$(NODE_NAME)"],
                                                           "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                                                           "securityContext": {"privileged": True}}],
                                           "hostNetwork": True, "nodeSelector": {"kubernetes.io/os": "linux"},
                                           "priorityClassName": "system-node-critical", "serviceAccountName": "kube-proxy",
                                           "tolerations": [{"operator": "Exists"}]}},
                     "updateStrategy": {"type": "RollingUpdate"}}}),
    ]
    for res, ns, o in objs:
        retry(lambda: create_or_update(c, res, ns, o), 60, "unable to create the kube-proxy addon")
    out("[addons] Applied essential addon: kube-proxy")



# ---------------------------------------------------------------- HA: certificate key, kubeadm-certs, etcd members
# Copied from kubeadm's sources (kubernetes/kubernetes, cmd/kubeadm/app;
# facts, not code): phases/copycerts/copycerts.go (the kubeadm-certs Secret:
# the shared CA, front-proxy CA, etcd CA and sa files, each encrypted with
# the certificate key and stored under its name with "/" as "-"; owned by a
# bootstrap token of 2 h that carries no usages, "Proxy for managing TTL for
# the kubeadm-certs secret", so that the garbage collector deletes it when
# the token expires; the Role and RoleBinding kubeadm:kubeadm-certs for the
# bootstrap tokens' group; the "not found" message), util/crypto/crypto.go
# (AES-GCM with the key's 32 bytes, a random 12-byte nonce in front of the
# sealed data), apis/kubeadm/validation (ValidateCertificateKey),
# phases/etcd/local.go and util/etcd/etcd.go (a joining control plane's
# member is added as a learner through an existing member's client URL,
# with the etcd healthcheck-client certificate, then promoted;
# --initial-cluster lists the members as etcd returns them;
# --initial-cluster-state=existing), cmd/phases/join/preflight.go (the
# controlPlaneEndpoint refusal), cmd/phases/reset/removeetcdmember.go.

CERTIFICATE_KEY_SIZE = 32
KUBEADM_CERTS_SECRET = "kubeadm-certs"
KUBEADM_CERTS_ROLE = "kubeadm:kubeadm-certs"
CERT_TOKEN_TTL = 2 * 3600
CERT_TOKEN_DESC = "Proxy for managing TTL for the kubeadm-certs secret"
# certsToTransfer: the file under the certificates dir -> its name in kubeadm-certs
SHARED_CERTS = (("ca.crt", "ca.crt"), ("ca.key", "ca.key"), ("front-proxy-ca.crt", "front-proxy-ca.crt"),
                ("front-proxy-ca.key", "front-proxy-ca.key"), ("sa.pub", "sa.pub"), ("sa.key", "sa.key"),
                ("etcd/ca.crt", "etcd-ca.crt"), ("etcd/ca.key", "etcd-ca.key"))


def klogf(severity, where, msg):
    """A klog line of kubeadm's printf-style calls (klog.Warningf, V(1).Infof):
    "W1129 17:50:00.123456    4242 FILE:1] message", on standard error."""
    t = time.time()
    lt = time.localtime(t)
    sys.stderr.write("%s%02d%02d %02d:%02d:%02d.%06d %7d %s:1] %s\n" % (
        severity, lt.tm_mon, lt.tm_mday, lt.tm_hour, lt.tm_min, lt.tm_sec, int((t % 1) * 1e6), os.getpid(), where, msg))
    sys.stderr.flush()


class GCMError(Exception):
    pass


_LIBCRYPTO = None


def _libcrypto():
    """libcrypto (OpenSSL 3, which the openssl command of every node
    needs) through ctypes: the standard library has no AES."""
    global _LIBCRYPTO  # pylint: disable=global-statement
    if _LIBCRYPTO is None:
        import ctypes  # pylint: disable=import-outside-toplevel
        import ctypes.util  # pylint: disable=import-outside-toplevel
        lib = ctypes.CDLL(ctypes.util.find_library("crypto") or "libcrypto.so.3")
        lib.EVP_CIPHER_CTX_new.restype = ctypes.c_void_p
        lib.EVP_CIPHER_CTX_free.argtypes = [ctypes.c_void_p]
        lib.EVP_aes_256_gcm.restype = ctypes.c_void_p
        lib.EVP_aes_192_gcm.restype = ctypes.c_void_p
        lib.EVP_aes_128_gcm.restype = ctypes.c_void_p
        for f in ("EVP_EncryptInit_ex", "EVP_DecryptInit_ex"):
            getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        for f in ("EVP_EncryptUpdate", "EVP_DecryptUpdate"):
            getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                        ctypes.c_int]
        for f in ("EVP_EncryptFinal_ex", "EVP_DecryptFinal_ex"):
            getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        lib.EVP_CIPHER_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        _LIBCRYPTO = (lib, ctypes)
    return _LIBCRYPTO


_EVP_CTRL_GCM_GET_TAG, _EVP_CTRL_GCM_SET_TAG = 0x10, 0x11


def _gcm(key, nonce, data, tag=None):
    """AES-GCM (the key's length picks AES-128/192/256) of data with nonce:
    (ciphertext, tag) when sealing (tag None), the plaintext when opening
    (GCMError when the tag does not verify)."""
    lib, ct = _libcrypto()
    cipher = {16: lib.EVP_aes_128_gcm, 24: lib.EVP_aes_192_gcm, 32: lib.EVP_aes_256_gcm}.get(len(key))
    if cipher is None:
        raise GCMError("crypto/aes: invalid key size %d" % len(key))
    ctx = lib.EVP_CIPHER_CTX_new()
    try:
        enc = tag is None
        init = lib.EVP_EncryptInit_ex if enc else lib.EVP_DecryptInit_ex
        update = lib.EVP_EncryptUpdate if enc else lib.EVP_DecryptUpdate
        final = lib.EVP_EncryptFinal_ex if enc else lib.EVP_DecryptFinal_ex
        if init(ctx, cipher(), None, key, nonce) != 1:
            raise GCMError("EVP init failed")
        buf = ct.create_string_buffer(len(data) + 16)
        n = ct.c_int(0)
        if data and update(ctx, buf, ct.byref(n), data, len(data)) != 1:
            raise GCMError("cipher: message authentication failed")
        out_ = buf.raw[:n.value]
        if not enc:
            tbuf = ct.create_string_buffer(bytes(tag), 16)
            lib.EVP_CIPHER_CTX_ctrl(ctx, _EVP_CTRL_GCM_SET_TAG, 16, tbuf)
        m = ct.c_int(0)
        fbuf = ct.create_string_buffer(16)
        if final(ctx, fbuf, ct.byref(m)) != 1:
            raise GCMError("cipher: message authentication failed")
        out_ += fbuf.raw[:m.value]
        if enc:
            tbuf = ct.create_string_buffer(16)
            lib.EVP_CIPHER_CTX_ctrl(ctx, _EVP_CTRL_GCM_GET_TAG, 16, tbuf)
            return out_, tbuf.raw
        return out_
    finally:
        lib.EVP_CIPHER_CTX_free(ctx)


def encrypt_bytes(data, key):
    """cryptoutil.EncryptBytes: nonce (12 bytes) + ciphertext + tag (16)."""
    nonce = secrets.token_bytes(12)
    sealed, tag = _gcm(key, nonce, data)
    return nonce + sealed + tag


def decrypt_bytes(data, key):
    """cryptoutil.DecryptBytes."""
    if len(data) < 12:
        raise GCMError("size of data is less than the nonce")
    if len(data) < 12 + 16:
        raise GCMError("cipher: message authentication failed")
    return _gcm(key, data[:12], data[12:-16], data[-16:])


def go_hex_error(s):
    """encoding/hex's DecodeString error for s, or None."""
    for ch in s:
        if ch not in "0123456789abcdefABCDEF":
            return "encoding/hex: invalid byte: %s" % go_rune_u(ch)
    if len(s) % 2:
        return "encoding/hex: odd length hex string"
    return None


def go_rune_u(ch):
    """Go's %#U of a rune: U+0067 'g'."""
    return "U+%04X '%s'" % (ord(ch), ch) if ch.isprintable() else "U+%04X" % ord(ch)


def certificate_key_errors(key, path):
    """ValidateCertificateKey: field errors for a certificate key ("" is
    no key: fine)."""
    if not key:
        return []
    err = go_hex_error(key)
    if err:
        return ['%s: Invalid value: "%s": certificate key decoding error: %s' % (path, key, err)]
    if len(key) // 2 != CERTIFICATE_KEY_SIZE:
        return ['%s: Invalid value: "%s": invalid certificate key size %d, the key must be an AES key of size %d'
                % (path, key, len(key) // 2, CERTIFICATE_KEY_SIZE)]
    return []


def new_certificate_key():
    return secrets.token_bytes(CERTIFICATE_KEY_SIZE).hex()


def upload_certs(c, cert_dir, key):
    """copycerts.UploadCerts: the kubeadm-certs Secret, owned by a
    bootstrap token of 2 h, readable by the bootstrap tokens' group."""
    out('[upload-certs] Storing the certificates in Secret "%s" in the "kube-system" Namespace' % KUBEADM_CERTS_SECRET)
    raw = bytes.fromhex(key)
    tok = new_token()
    sec = token_secret(tok, CERT_TOKEN_TTL, CERT_TOKEN_DESC, [], [])
    try:
        retry(lambda: c.post(R("secrets").path("kube-system"), sec), 60, "error creating token")
    except APIError as e:
        raise Fail("error creating token: %s" % e) from e
    owner = c.get(R("secrets").path("kube-system", "bootstrap-token-" + tok.split(".")[0]))
    data = {}
    for path, name in SHARED_CERTS:
        try:
            with open(os.path.join(cert_dir, path), "rb") as f:
                blob = encrypt_bytes(f.read(), raw)
        except FileNotFoundError:
            blob = b""
        data[name] = base64.b64encode(blob).decode()
    obj = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": KUBEADM_CERTS_SECRET, "namespace": "kube-system",
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": owner["metadata"]["name"],
                                             "uid": owner["metadata"].get("uid", ""), "controller": True,
                                             "blockOwnerDeletion": True}]},
           "data": data}
    retry(lambda: create_or_update(c, R("secrets"), "kube-system", obj), 60, "error uploading certs")
    retry(lambda: create_or_update(c, R("roles"), "kube-system", {
        "metadata": {"name": KUBEADM_CERTS_ROLE, "namespace": "kube-system"},
        "rules": [{"apiGroups": [""], "resourceNames": [KUBEADM_CERTS_SECRET], "resources": ["secrets"], "verbs": ["get"]}]}),
        60, "error uploading certs")
    retry(lambda: create_or_update(c, R("rolebindings"), "kube-system", {
        "metadata": {"name": KUBEADM_CERTS_ROLE, "namespace": "kube-system"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": KUBEADM_CERTS_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": DEFAULT_GROUP}]}),
        60, "error uploading certs")


def download_certs(client, cert_dir, key):
    """copycerts.DownloadCerts with the joining node's bootstrap token: every
    shared file decrypted with key, or the real errors."""
    out('[download-certs] Downloading the certificates in Secret "%s" in the "kube-system" Namespace' % KUBEADM_CERTS_SECRET)
    pre = "error execution phase control-plane-prepare/download-certs: error downloading certs: "
    try:
        sec = client.get(R("secrets").path("kube-system", KUBEADM_CERTS_SECRET))
    except APIError as e:
        if e.code == 404:
            raise Fail(pre + 'error downloading the secret: Secret "%s" was not found in the "kube-system" Namespace. This '
                       "Secret might have expired. Please, run `kubeadm init phase upload-certs --upload-certs` on a "
                       "control plane to generate a new one" % KUBEADM_CERTS_SECRET) from e
        raise Fail(pre + "error downloading the secret: %s" % e) from e
    except ConnError as e:
        raise Fail(pre + "error downloading the secret: %s" % e) from e
    raw = bytes.fromhex(key)
    plain = {}
    for name, enc in (sec.get("data") or {}).items():
        blob = base64.b64decode(enc)
        if not blob:
            plain[name] = b""
            continue
        try:
            plain[name] = decrypt_bytes(blob, raw)
        except GCMError as e:
            raise Fail(pre + "error decoding secret data with provided key: %s" % e) from e
    for path, name in SHARED_CERTS:
        full = os.path.join(cert_dir, path)
        if name not in plain:
            raise Fail(pre + "the Secret does not include the required certificate or key - name: %s, path: %s"
                       % (path, full))
        if not plain[name]:
            continue
        text = plain[name].decode(errors="replace")
        if "PRIVATE KEY-----" in text:
            write_file(full, text, 0o600)
        elif "-----BEGIN" in text:
            write_file(full, text, 0o644)
        else:
            raise Fail(pre + "unknown data found in Secret entry")


def shared_certificates_missing(cert_dir):
    """certs.SharedCertificateExists: the first shared file this node lacks,
    as its error (a control plane joined without --certificate-key brings
    them itself)."""
    for path, _ in SHARED_CERTS:
        full = os.path.join(cert_dir, path)
        if not os.path.exists(full):
            what = "key" if path.endswith(".key") else "certificate"
            if path.startswith("sa."):
                return "couldn't load service account %s: open %s: no such file or directory" % (
                    "key" if path == "sa.key" else "public key", full)
            return "couldn't load %s %s: open %s: no such file or directory" % (path.rsplit(".", 1)[0], what, full)
    return None


def check_ready_for_control_plane(cc, cert_key):
    """phases/join/preflight.go checkIfReadyForAdditionalControlPlane: a
    cluster without controlPlaneEndpoint takes no second control plane; one
    that joins without a certificate key must hold the shared files."""
    why = None
    if not cc.get("controlPlaneEndpoint"):
        why = "unable to add a new control plane instance a cluster that doesn't have a stable controlPlaneEndpoint address"
    elif not cert_key:
        why = shared_certificates_missing(cc.get("certificatesDir") or PKI)
    if why:
        raise Fail("error execution phase preflight: \nOne or more conditions for hosting a new control plane instance "
                   "is not satisfied.\n\n%s\n\nPlease ensure that:\n* The cluster has a stable controlPlaneEndpoint "
                   "address.\n* The certificates that must be shared among control plane instances are provided.\n" % why)


# ---- etcd


def etcd_new_flags(etcd_image):
    """Whether this kubeadm writes etcd 3.6's flag names
    (--feature-gates=InitialCorruptCheck=true, --watch-progress-notify-interval)
    instead of the experimental ones: kubernetes PR 132838 (1.34: when the
    etcd version is 3.6.0 or later), PR 135701 (1.36: always)."""
    if FAKE_MINOR >= 36:
        return True
    if FAKE_MINOR < 34:
        return False
    m = re.search(r":v?(\d+)\.(\d+)\.(\d+)", etcd_image or "")
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (3, 6)


def etcd_command(node_name, advertise, cert_dir, data_dir="/var/lib/etcd", initial_cluster=None, image=None):
    """getEtcdCommand: etcd's flags as kubeadm writes them (sorted by name);
    initial_cluster: [(name, peer URL)] of a joining member (with
    --initial-cluster-state=existing), None for init's single member."""
    local = "::1" if ":" in advertise else "127.0.0.1"
    host = "[%s]" % advertise if ":" in advertise else advertise
    lhost = "[%s]" % local if ":" in local else local
    peer = "https://%s:2380" % host
    client = "https://%s:2379" % host
    args = {"name": node_name, "listen-client-urls": "https://%s:2379,%s" % (lhost, client),
            "advertise-client-urls": client, "listen-peer-urls": peer, "initial-advertise-peer-urls": peer,
            "data-dir": data_dir, "cert-file": cert_dir + "/etcd/server.crt", "key-file": cert_dir + "/etcd/server.key",
            "trusted-ca-file": cert_dir + "/etcd/ca.crt", "client-cert-auth": "true",
            "peer-cert-file": cert_dir + "/etcd/peer.crt", "peer-key-file": cert_dir + "/etcd/peer.key",
            "peer-trusted-ca-file": cert_dir + "/etcd/ca.crt", "peer-client-cert-auth": "true",
            "snapshot-count": "10000", "listen-metrics-urls": "http://%s:2381" % lhost}
    if etcd_new_flags(image or ETCD_IMAGE):
        args["feature-gates"] = "InitialCorruptCheck=true"
        args["watch-progress-notify-interval"] = "5s"
    else:
        args["experimental-initial-corrupt-check"] = "true"
        args["experimental-watch-progress-notify-interval"] = "5s"
    if initial_cluster:
        args["initial-cluster"] = ",".join("%s=%s" % m for m in initial_cluster)
        args["initial-cluster-state"] = "existing"
    else:
        args["initial-cluster"] = "%s=%s" % (node_name, peer)
    return ["etcd"] + ["--%s=%s" % (k, args[k]) for k in sorted(args)]


class EtcdError(Exception):
    pass


# util/etcd's retries (etcdBackoff: 11 steps from 50 ms, doubling: about
# 100 s in all); a test sets it lower
ETCD_RETRY_SECONDS = 100.0


def etcd_retrying(fn):
    """fn() again on an EtcdError until ETCD_RETRY_SECONDS have passed; then
    the last error."""
    deadline = now() + ETCD_RETRY_SECONDS
    delay = 0.05
    while True:
        try:
            return fn()
        except EtcdError:
            if now() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


class EtcdClient:
    """etcd's v3 API through its JSON gateway (POST /v3/...), over TLS
    with the etcd CA and the etcd healthcheck-client certificate (util/etcd
    NewFromCluster), trying each endpoint in turn."""

    def __init__(self, endpoints, cert_dir):
        self.endpoints = list(endpoints)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cert_dir + "/etcd/ca.crt")
        ctx.check_hostname = False  # the endpoints are the advertised IPs, which the server certificates hold
        ctx.load_cert_chain(cert_dir + "/etcd/healthcheck-client.crt", cert_dir + "/etcd/healthcheck-client.key")
        self.ctx = ctx

    def call(self, path, body, endpoints=None):
        last = None
        for ep in endpoints or self.endpoints:
            u = urllib.parse.urlsplit(ep)
            try:
                conn = http.client.HTTPSConnection(u.hostname, u.port or 2379, context=self.ctx, timeout=10)
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                r = conn.getresponse()
                data = r.read()
                conn.close()
            except (OSError, http.client.HTTPException) as e:
                last = EtcdError("dial %s: %s" % (ep, e))
                continue
            try:
                doc = json.loads(data or b"{}")
            except ValueError as e:
                raise EtcdError("etcd %s %s: not JSON" % (ep, path)) from e
            if r.status != 200:
                raise EtcdError(doc.get("message") or doc.get("error") or "HTTP %d" % r.status)
            return doc
        raise last or EtcdError("no etcd endpoints")

    def sync(self):
        """Sync: the endpoints become the members' client URLs."""
        try:
            ms = etcd_retrying(self.members)
        except EtcdError as e:
            raise EtcdError("error syncing endpoints with etcd: %s" % e) from e
        eps = [u for m in ms for u in (m.get("clientURLs") or [])]
        if eps:
            self.endpoints = list(dict.fromkeys(eps))

    def members(self):
        return self.call("/v3/cluster/member/list", {}).get("members") or []

    def status(self, ep):
        return self.call("/v3/maintenance/status", {}, [ep])


def etcd_endpoints_from_pods(c):
    """util/etcd NewFromCluster: the client URLs in the annotation of the
    etcd static pods' mirror pods."""
    try:
        pods = c.get(R("pods").path("kube-system"), {"labelSelector": "component=etcd,tier=control-plane"})["items"]
    except (APIError, ConnError) as e:
        raise EtcdError("could not retrieve the list of etcd endpoints: %s" % e) from e
    eps = []
    for p in pods:
        u = (p["metadata"].get("annotations") or {}).get("kubeadm.kubernetes.io/etcd.advertise-client-urls")
        if u and u not in eps:
            eps.append(u)
    if not eps:
        raise EtcdError("could not retrieve the list of etcd endpoints: etcd Pods exist, but no etcd endpoint annotations "
                        "were found" if pods else "could not retrieve the list of etcd endpoints: no etcd Pods")
    return eps


def etcd_join(c, cfg, phase="control-plane-join/etcd"):
    """CreateStackedEtcdStaticPodManifestFile: this node's member added as a
    learner (kept when a member with its peer URL is there already: a join
    tried again), the manifest written with the members etcd lists (a member
    without a name yet is named by its ID in hex), the learner promoted once
    it has caught up, then every member's status answered (8 tries, 5 s
    apart)."""
    pre = "error execution phase %s: error creating local etcd static pod manifest file: " % phase
    host = "[%s]" % cfg.advertise if ":" in cfg.advertise else cfg.advertise
    peer = "https://%s:2380" % host
    try:
        ec = EtcdClient(etcd_endpoints_from_pods(c), cfg.cert_dir)
        ec.sync()
        members = etcd_retrying(ec.members)
        mine = [m for m in members if peer in (m.get("peerURLs") or [])]
        if mine:
            new_id = mine[0]["ID"]
        else:
            resp = etcd_retrying(lambda: ec.call("/v3/cluster/member/add", {"peerURLs": [peer], "isLearner": True}))
            new_id = resp["member"]["ID"]
            members = resp.get("members") or []
        cluster = []
        for m in members:
            if m.get("ID") == new_id:
                cluster.append((cfg.node_name, peer))
            else:
                cluster.append((m.get("name") or "%x" % int(m["ID"]), (m.get("peerURLs") or [""])[0]))
        ec.endpoints = list(dict.fromkeys(ec.endpoints + ["https://%s:2379" % host]))
        out("[etcd] Announced new etcd member joining to the existing etcd cluster")
        out('[etcd] Creating static Pod manifest for "etcd"')
        write_etcd_manifest(cfg, cluster)

        def promote():
            m = [x for x in ec.members() if x.get("ID") == new_id]
            if not m:
                raise EtcdError("member %x not found" % int(new_id))
            if m[0].get("isLearner"):
                ec.call("/v3/cluster/member/promote", {"ID": new_id})
        etcd_retrying(promote)
        out("[etcd] Waiting for the new etcd member to join the cluster. This can take up to 40s")
        for attempt in range(8):
            if attempt:
                time.sleep(5)
            try:
                for ep in ec.endpoints:
                    ec.status(ep)
                break
            except EtcdError:
                continue
        else:
            raise EtcdError("timeout waiting for etcd cluster to be available")
    except EtcdError as e:
        raise Fail(pre + str(e)) from e


def node_runs_real_etcd():
    """Whether the kubelet stand-in runs the etcd static pod as a real etcd
    on this node (the paths it looks at: Debian's etcd-server or a copy of
    tests/testbed/etcd-debs.sh's).  Without one the etcd pod is a
    placeholder, the API server stand-in keeps its objects itself, and
    there is no etcd cluster to leave: reset removes no member."""
    return any(os.access(p, os.X_OK) for p in ("/usr/local/bin/etcd", "/usr/bin/etcd"))


def etcd_remove_self(kubeconfig, advertise, cert_dir, verbose):
    """RemoveStackedEtcdMemberFromCluster: this node's member removed
    (nothing when it is the last and only member).  Errors: the real
    warning, the reset goes on."""
    host = "[%s]" % advertise if ":" in advertise else advertise
    peer, client_url = "https://%s:2380" % host, "https://%s:2379" % host
    try:
        c = api_admin(kubeconfig)
        ec = EtcdClient(etcd_endpoints_from_pods(c), cert_dir)
        ec.sync()
        members = etcd_retrying(ec.members)
        if len(members) == 1 and client_url in ec.endpoints:
            if verbose:
                klogf("I", "local.go", "[etcd] This is the only remaining etcd member in the etcd cluster, skip removing it")
            return
        mine = [m for m in members if peer in (m.get("peerURLs") or [])]
        if not mine:
            return
        if verbose:
            klogf("I", "local.go", "[etcd] removing etcd member: %s, id: %d" % (peer, int(mine[0]["ID"])))
        etcd_retrying(lambda: ec.call("/v3/cluster/member/remove", {"ID": mine[0]["ID"]}))
    except (EtcdError, Fail, APIError, ConnError, OSError, ssl.SSLError) as e:
        klogf("W", "removeetcdmember.go",
              "[reset] Failed to remove etcd member: %s, please manually remove this etcd member using etcdctl" % e)


def cmd_init_phase(argv):
    """kubeadm init phase upload-certs (the only phase the stand-in runs on
    its own): with --upload-certs, the kubeadm-certs Secret again (a new
    key unless --certificate-key), read with --kubeconfig's credentials."""
    if not argv or argv[0] in ("-h", "--help"):
        out("Use this command to invoke single phase of the init workflow")
        return 0
    sub, rest = split_command(argv, ("kubeconfig", "v", "rootfs", "vmodule", "config", "certificate-key"))
    if sub != "upload-certs":
        raise FlagNotModelled("init phase %s: only the upload-certs phase is modelled" % sub)
    flags, pos = parse_args(rest, "init phase upload-certs", {"config": "str", "upload-certs": "bool",
                                                              "certificate-key": "str", "kubeconfig": "str",
                                                              "skip-certificate-key-print": "bool"})
    if pos:
        raise Fail('unknown command "%s" for "kubeadm init phase upload-certs"' % pos[0])
    cfg = InitCfg({k: v for k, v in flags.items() if k != "kubeconfig"})
    if not cfg.upload_certs:
        out("[upload-certs] Skipping phase. Please see --upload-certs")
        return 0
    c = api_admin(flags.get("kubeconfig", K8S + "/admin.conf"))
    key = cfg.certificate_key or new_certificate_key()
    try:
        upload_certs(c, cfg.cert_dir, key)
    except (APIError, ConnError) as e:
        raise Fail("error execution phase upload-certs: error uploading certs: %s" % e) from e
    except Fail as e:
        raise Fail("error execution phase upload-certs: error uploading certs: %s" % e) from e
    if not cfg.skip_certificate_key_print:
        out("[upload-certs] Using certificate key:")
        out(key)
    return 0


def mark_control_plane(c, node_name, taints, timeout, phase="mark-control-plane"):
    """phases/markcontrolplane: the control-plane labels and taints on the Node."""
    out("[mark-control-plane] Marking the node %s as control-plane by adding the labels: "
        "[node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]" % node_name)
    out("[mark-control-plane] Marking the node %s as control-plane by adding the taints [%s]"
        % (node_name, " ".join("%s:%s" % (t["key"], t["effect"]) for t in taints)))
    deadline = now() + timeout
    while True:
        try:
            node = c.get(R("nodes").path(None, node_name))
            labels = dict(node["metadata"].get("labels") or {})
            labels["node-role.kubernetes.io/control-plane"] = ""
            labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
            cur = node["spec"].get("taints") or []
            for t in taints:
                if not any(x.get("key") == t["key"] and x.get("effect") == t["effect"] for x in cur):
                    cur.append(t)
            c.patch(R("nodes").path(None, node_name), {"metadata": {"labels": labels}, "spec": {"taints": cur}})
            return
        except (APIError, ConnError) as e:
            if now() > deadline:
                raise Fail("error execution phase %s: error patching node \"%s\" through apiserver: %s"
                           % (phase, node_name, e)) from e
            time.sleep(1)


def join_control_plane_command(endpoint, token, ca_pem, key):
    """cmd/util/join.go's template with ControlPlane set."""
    return ("kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash sha256:%s \\\n\t--control-plane %s"
            % (endpoint, token, spki_sha256(ca_pem), ("--certificate-key " + key) if key else ""))


def print_join_commands(cfg, token, ca):
    """The end of init's text (showjoincommand.go's template): with a
    controlPlaneEndpoint the control-plane join command first (worded for
    --upload-certs or for copied certificates), then the worker's."""
    if cfg.cp_endpoint:
        key = "<value withheld>" if cfg.skip_certificate_key_print else cfg.certificate_key
        cp_cmd = join_control_plane_command(cfg.endpoint, token, ca, key)
        if cfg.upload_certs:
            out("You can now join any number of the control-plane node running the following command on each as root:")
            out("")
            out("  " + cp_cmd)
            out("")
            out("Please note that the certificate-key gives access to cluster sensitive data, keep it secret!")
            out("As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use")
            out('"kubeadm init phase upload-certs --upload-certs" to reload certs afterward.')
            out("")
        else:
            out("You can now join any number of control-plane nodes by copying certificate authorities")
            out("and service account keys on each node and then running the following as root:")
            out("")
            out("  " + cp_cmd)
            out("")
    out("Then you can join any number of worker nodes by running the following on each as root:")
    out("")
    out("kubeadm join %s --token %s \\" % (cfg.endpoint, token))
    out("\t--discovery-token-ca-cert-hash sha256:%s " % spki_sha256(ca))


def cmd_init(argv):
    if argv and argv[0] == "phase":
        return cmd_init_phase(argv[1:])
    flags, _ = parse_args(argv, "init", {"config": "str", "skip-token-print": "bool", "ignore-preflight-errors": "list",
                                         "pod-network-cidr": "str", "apiserver-advertise-address": "str",
                                         "node-name": "str", "kubernetes-version": "str", "service-cidr": "str",
                                         "control-plane-endpoint": "str", "upload-certs": "bool", "skip-phases": "list",
                                         "cri-socket": "str", "token-ttl": "dur", "dry-run": "bool",
                                         "certificate-key": "str", "skip-certificate-key-print": "bool"})
    cfg = InitCfg(flags)
    out("[init] Using Kubernetes version: %s" % cfg.version)
    out("[preflight] Running pre-flight checks")
    errs = preflight("init", cfg.cri_socket, flags.get("ignore-preflight-errors", []))
    if errs:
        preflight_fail(errs)
    out("[preflight] Pulling images required for setting up a Kubernetes cluster")
    out("[preflight] This might take a minute or two, depending on the speed of your internet connection")
    out("[preflight] You can also perform this action beforehand using 'kubeadm config images pull'")
    # kubeadm compares the CRI's sandbox image with its own pause image
    # (preflight, images): a warning only
    r = subprocess.run(["containerd", "config", "dump"], capture_output=True, text=True, check=False)
    sandbox = sandbox_image_of(r.stdout) if r.returncode == 0 else None
    if sandbox and sandbox != kubeadm_pause_image():
        klog("W", 'detected that the sandbox image "%s" of the container runtime is inconsistent with that used by kubeadm.'
             'It is recommended to use "%s" as the CRI sandbox image.' % (sandbox, kubeadm_pause_image()))
    # knob control-plane-timeout SECONDS: a fake clock for wait-control-plane
    # (kubeadm waits 4m0s; tests need not)
    if knob("control-plane-timeout"):
        cfg.cp_timeout = float(knob("control-plane-timeout"))
    write_pki(cfg)
    write_kubeconfigs(cfg)
    write_manifests(cfg)
    dns_ip = cidr_first_ip(cfg.svc_subnet, 10)
    kcfg = kubelet_configuration(cfg.kubelet_cfg, dns_ip, cfg.dns_domain)
    kubelet_yaml = yaml_dump(kcfg)
    write_kubelet_files(kubelet_yaml, hostname_override=cfg.node_name if cfg.node_name != socket.gethostname().lower() else None,
                        extra=cfg.kubelet_extra, patches=cfg.patches)
    start_kubelet()
    out('[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory "%s"' % MANIFESTS)
    wait_kubelet(cfg.cp_timeout)
    c = wait_apiserver(cfg, cfg.cp_timeout)
    out('[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace')
    cc_yaml = yaml_dump(cfg.cluster_configuration())
    retry(lambda: create_or_update(c, R("configmaps"), "kube-system", {
        "metadata": {"name": "kubeadm-config", "namespace": "kube-system"}, "data": {"ClusterConfiguration": cc_yaml}}),
        60, "error uploading the kubeadm ClusterConfiguration")
    out("[kubelet] Creating a ConfigMap \"kubelet-config\" in namespace kube-system with the configuration for the kubelets in the cluster")
    retry(lambda: create_or_update(c, R("configmaps"), "kube-system", {
        "metadata": {"name": "kubelet-config", "namespace": "kube-system"}, "data": {"kubelet": kubelet_yaml}}),
        60, "error creating kubelet configuration ConfigMap")
    if cfg.upload_certs:
        cfg.certificate_key = cfg.certificate_key or new_certificate_key()
        try:
            upload_certs(c, cfg.cert_dir, cfg.certificate_key)
        except (APIError, ConnError, Fail) as e:
            raise Fail("error execution phase upload-certs: error uploading certs: %s" % e) from e
        if not cfg.skip_certificate_key_print:
            out("[upload-certs] Using certificate key:")
            out(cfg.certificate_key)
    else:
        out("[upload-certs] Skipping phase. Please see --upload-certs")
    taints = cfg.taints if cfg.taints is not None else [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    mark_control_plane(c, cfg.node_name, taints, cfg.cp_timeout)
    tokens = cfg.tokens if cfg.tokens else [{}]
    first_token = None
    for t in tokens:
        tok = t.get("token") or new_token()
        first_token = first_token or tok
        if not flags.get("skip-token-print"):
            out("[bootstrap-token] Using token: %s" % tok)
        ttl = parse_duration(t.get("ttl") or flags.get("token-ttl") or "24h0m0s")
        sec = token_secret(tok, ttl, t.get("description", DEFAULT_TOKEN_DESC if not cfg.tokens else ""),
                           t.get("usages") or ["signing", "authentication"], t.get("groups") or [DEFAULT_GROUP])
        retry(lambda: create_or_update(c, R("secrets"), "kube-system", sec), 60, "error creating bootstrap token")
    out("[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles")
    out("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes")
    out("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials")
    out("[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token")
    out("[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster")
    rbac(c, cfg)
    out('[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace')
    ca = read_file(cfg.cert_dir + "/ca.crt")
    info = "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: https://%s\n  name: \"\"\n" \
           "contexts: null\ncurrent-context: \"\"\nkind: Config\npreferences: {}\nusers: null\n" % (b64(ca), cfg.endpoint)
    retry(lambda: create_or_update(c, R("configmaps"), "kube-public", {
        "metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": {"kubeconfig": info}}),
        60, "error creating the cluster-info ConfigMap")
    out('[kubelet-finalize] Updating "%s/kubelet.conf" to point to a rotatable kubelet client certificate and key' % K8S)
    kc = load_kubeconfig(K8S + "/kubelet.conf")
    os.makedirs(KUBELET_DIR + "/pki", exist_ok=True)
    pem = kc["cert"] + kc["key"]
    write_file(KUBELET_DIR + "/pki/kubelet-client-%s.pem" % time.strftime("%Y-%m-%d-%H-%M-%S"), pem, 0o600)
    cur = KUBELET_DIR + "/pki/kubelet-client-current.pem"
    newest = sorted(f for f in os.listdir(KUBELET_DIR + "/pki") if f.startswith("kubelet-client-2"))[-1]
    if os.path.lexists(cur):
        os.unlink(cur)
    os.symlink(KUBELET_DIR + "/pki/" + newest, cur)
    write_file(K8S + "/kubelet.conf", kubelet_conf_text(cfg.cluster_name, kc["server"], ca, cfg.node_name), 0o600)
    addons(c, cfg)
    out("")
    out("Your Kubernetes control-plane has initialized successfully!")
    out("")
    out("To start using your cluster, you need to run the following as a regular user:")
    out("")
    out("  mkdir -p $HOME/.kube")
    out("  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config")
    out("  sudo chown $(id -u):$(id -g) $HOME/.kube/config")
    out("")
    out("Alternatively, if you are the root user, you can run:")
    out("")
    out("  export KUBECONFIG=/etc/kubernetes/admin.conf")
    out("")
    out("You should now deploy a pod network to the cluster.")
    out("Run \"kubectl apply -f [podnetwork].yaml\" with one of the options listed at:")
    out("  https://kubernetes.io/docs/concepts/cluster-administration/addons/")
    out("")
    shown = "<value withheld>" if flags.get("skip-token-print") else first_token
    print_join_commands(cfg, shown, ca)
    return 0


def kubelet_conf_text(cluster, server, ca, node):
    """kubelet.conf after [kubelet-finalize]: the client certificate is the
    kubelet's rotatable one in /var/lib/kubelet/pki."""
    user = "system:node:" + node
    return ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: %s\n  name: %s\n"
            "contexts:\n- context:\n    cluster: %s\n    user: %s\n  name: %s@%s\ncurrent-context: %s@%s\nkind: Config\n"
            "preferences: {}\nusers:\n- name: %s\n  user:\n    client-certificate: %s/pki/kubelet-client-current.pem\n"
            "    client-key: %s/pki/kubelet-client-current.pem\n"
            % (b64(ca), server, cluster, cluster, user, user, cluster, user, cluster, user, KUBELET_DIR, KUBELET_DIR))


# ---------------------------------------------------------------- join


def cmd_join(argv):
    flags, pos = parse_args(argv, "join", {"config": "str", "token": "str", "discovery-token": "str",
                                           "tls-bootstrap-token": "str", "discovery-token-ca-cert-hash": "list",
                                           "discovery-token-unsafe-skip-ca-verification": "bool", "node-name": "str",
                                           "ignore-preflight-errors": "list", "cri-socket": "str", "control-plane": "bool",
                                           "certificate-key": "str", "apiserver-advertise-address": "str",
                                           "apiserver-bind-port": "int", "patches": "str"})
    timeout = 300.0
    extra = {}
    taints = None
    patches = flags.get("patches")
    control_plane = bool(flags.get("control-plane"))
    cert_key = flags.get("certificate-key") or ""
    advertise = flags.get("apiserver-advertise-address") or ""
    bind_port = int(flags.get("apiserver-bind-port") or 6443)
    if flags.get("config"):
        for f in ("token", "discovery-token", "discovery-token-ca-cert-hash", "node-name", "cri-socket", "control-plane",
                  "certificate-key", "apiserver-advertise-address", "apiserver-bind-port"):
            if f in flags:
                raise Fail("can not mix '--config' with arguments [%s]" % f)
        if pos:
            raise Fail("can not mix '--config' with arguments %s" % pos)
        docs = load_config(flags["config"], "join")
        jc = docs.get("JoinConfiguration")
        if not jc:
            raise Fail("no JoinConfiguration kind was found in the YAML file")
        disc = jc.get("discovery") or {}
        bt = disc.get("bootstrapToken") or {}
        endpoint = bt.get("apiServerEndpoint", "")
        token = bt.get("token") or disc.get("tlsBootstrapToken") or ""
        hashes = bt.get("caCertHashes") or []
        unsafe = bool(bt.get("unsafeSkipCAVerification"))
        if disc.get("timeout"):
            timeout = parse_duration(disc["timeout"])
        if (jc.get("timeouts") or {}).get("discovery"):
            timeout = parse_duration(jc["timeouts"]["discovery"])
        nr = jc.get("nodeRegistration") or {}
        node = (nr.get("name") or socket.gethostname()).lower()
        cri = nr.get("criSocket") or CRI_SOCKET
        extra = nr.get("kubeletExtraArgs") or {}
        if isinstance(extra, list):
            extra = {a.get("name"): a.get("value") for a in extra}
        ignore = list(nr.get("ignorePreflightErrors") or []) + flags.get("ignore-preflight-errors", [])
        patches = patches or (jc.get("patches") or {}).get("directory")
        taints = nr.get("taints")
        # JoinConfiguration.controlPlane: present = a control plane joins
        if jc.get("controlPlane") is not None:
            control_plane = True
            jcp = jc.get("controlPlane") or {}
            cert_key = jcp.get("certificateKey") or ""
            lep = jcp.get("localAPIEndpoint") or {}
            advertise = lep.get("advertiseAddress") or ""
            bind_port = int(lep.get("bindPort") or 6443)
    else:
        endpoint = pos[0] if pos else ""
        token = flags.get("discovery-token") or flags.get("token") or ""
        hashes = flags.get("discovery-token-ca-cert-hash", [])
        unsafe = flags.get("discovery-token-unsafe-skip-ca-verification", False)
        node = (flags.get("node-name") or socket.gethostname()).lower()
        cri = flags.get("cri-socket") or CRI_SOCKET
        ignore = flags.get("ignore-preflight-errors", [])
    errs = []
    if not endpoint:
        errs.append("discovery.bootstrapToken.apiServerEndpoint: Invalid value: \"\": the API server endpoint is required "
                    "(kubeadm join HOST:PORT)")
    if not TOKEN_RE.match(token):
        errs.append('discovery.bootstrapToken.token: Invalid value: "%s": the bootstrap token is invalid' %
                    (token if not token else token[:7] + "..."))
    if not hashes and not unsafe:
        errs.append('discovery.bootstrapToken.caCertHashes: Invalid value: "": using token-based discovery without '
                    "caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or "
                    "pass --discovery-token-unsafe-skip-ca-verification flag to continue")
    for h in hashes:
        if not re.match(r"^sha256:[0-9a-fA-F]{64}$", h):
            errs.append('discovery.bootstrapToken.caCertHashes: Invalid value: "%s": invalid hash "%s", expected a 32 byte '
                        'SHA-256 hash' % (h, h))
    if control_plane:
        advertise = advertise or default_iface_ip()
        if not re.match(r"^\d+\.\d+\.\d+\.\d+$", advertise):
            errs.append('controlPlane.localAPIEndpoint.advertiseAddress: Invalid value: "%s": must be a valid IP address'
                        % advertise)
        errs += certificate_key_errors(cert_key, "controlPlane.certificateKey")
    if errs:
        raise Fail(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]", 3)
    out("[preflight] Running pre-flight checks")
    perrs = preflight("join", cri, ignore, cp=False, ca_check=not control_plane)
    if perrs:
        preflight_fail(perrs)
    delay = knob("join-delay")
    if delay:
        time.sleep(float(delay))
    tid, tsec = token.split(".")
    # discovery (token.go: retrieveValidatedConfigInfo)
    insecure = Client("https://" + endpoint, insecure=True, timeout=10)
    cm_path = R("configmaps").path("kube-public", "cluster-info")

    def cluster_info(client):
        t0 = now()
        last = None
        while True:
            try:
                cm = client.get(cm_path)
                if ("jws-kubeconfig-" + tid) in (cm.get("data") or {}):
                    return cm
                last = 'could not find a JWS signature in the cluster-info ConfigMap for token ID "%s"' % tid
            except ConnError as e:
                last = 'failed to request the cluster-info ConfigMap: Get "https://%s%s?timeout=10s": %s' % (endpoint, cm_path, e)
            except APIError as e:
                last = "failed to request the cluster-info ConfigMap: %s" % e
            if now() - t0 + 5 > timeout:
                raise Fail("error execution phase preflight: couldn't validate the identity of the API Server: %s" % last)
            time.sleep(5)

    cm = cluster_info(insecure)
    kc_text = cm["data"].get("kubeconfig", "")
    if not jws_valid(cm["data"]["jws-kubeconfig-" + tid], kc_text, tid, tsec):
        raise Fail("error execution phase preflight: couldn't validate the identity of the API Server: failed to verify JWS "
                   "signature of received cluster info object, can't trust this API Server")
    info = yaml_load(kc_text)
    ca_pem = base64.b64decode(info["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    if hashes:
        actual = spki_sha256(ca_pem)
        if actual not in [h.split(":", 1)[1].lower() for h in hashes]:
            raise Fail("error execution phase preflight: couldn't validate the identity of the API Server: cluster CA found in "
                       'cluster-info ConfigMap is invalid: none of the public keys "sha256:%s" are pinned' % actual)
    # the second request trusts the pinned CA; it is anonymous too (the
    # cluster-info Role is bound to system:anonymous), the token is for the
    # TLS bootstrap that follows
    anon = Client("https://" + endpoint, ca=ca_pem, timeout=10)
    secure = Client("https://" + endpoint, ca=ca_pem, token=token, timeout=10)
    try:
        cm2 = anon.get(cm_path)
    except ConnError as e:
        raise Fail("error execution phase preflight: couldn't validate the identity of the API Server: %s" % e) from e
    if cm2["data"].get("kubeconfig") != kc_text:
        raise Fail("error execution phase preflight: couldn't validate the identity of the API Server: the second kubeconfig "
                   "from the cluster-info ConfigMap (using validated TLS) was different from the first")
    out("[preflight] Reading configuration from the cluster...")
    out("[preflight] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'")
    try:
        kcm = secure.get(R("configmaps").path("kube-system", "kubeadm-config"))
        kubelet_cm = secure.get(R("configmaps").path("kube-system", "kubelet-config"))
    except (APIError, ConnError) as e:
        raise Fail("error execution phase preflight: unable to fetch the kubeadm-config ConfigMap: %s" % e) from e
    cc = yaml_load(kcm["data"]["ClusterConfiguration"]) or {}
    cpcfg = None
    if control_plane:
        check_ready_for_control_plane(cc, cert_key)
        out("[preflight] Running pre-flight checks before initializing the new control plane instance")
        perrs = preflight_cp_join(ignore, bind_port)
        if perrs:
            preflight_fail(perrs)
        out("[preflight] Pulling images required for setting up a Kubernetes cluster")
        out("[preflight] This might take a minute or two, depending on the speed of your internet connection")
        out("[preflight] You can also perform this action in beforehand using 'kubeadm config images pull'")
        cpcfg = ClusterCfg(cc, node, advertise, bind_port)
    try:
        existing = secure.get(R("nodes").path(None, node))
        ready = [c for c in (existing.get("status") or {}).get("conditions", []) if c.get("type") == "Ready"]
        if ready and ready[0].get("status") == "True":
            raise Fail('error execution phase kubelet-start: a Node with name "%s" and status "Ready" already exists in the '
                       "cluster. You must delete the existing Node or change the name of this new joining Node" % node)
    except APIError as e:
        if e.code != 404:
            raise Fail("error execution phase kubelet-start: cannot get Node \"%s\": %s" % (node, e)) from e
    if cpcfg:
        # control-plane-prepare: download-certs, certs, kubeconfig, control-plane
        os.makedirs(cpcfg.cert_dir, exist_ok=True)
        if cert_key:
            download_certs(secure, cpcfg.cert_dir, cert_key)
        write_pki(cpcfg)
        out("[kubeconfig] Generating kubeconfig files")
        write_kubeconfigs(cpcfg, only=("admin.conf", "controller-manager.conf", "scheduler.conf"))
        write_manifests(cpcfg, etcd=False)
    # kubelet-start
    os.makedirs(PKI, exist_ok=True)
    write_file(PKI + "/ca.crt", ca_pem, 0o644)
    cluster = cc.get("clusterName") or "kubernetes"
    # a control plane in ControlPlaneKubeletLocalMode bootstraps through its
    # own API server, which its etcd member (etcd-join, below) lets start
    local_mode = cpcfg is not None and kubelet_local_mode()
    server = "https://%s:%d" % (cpcfg.advertise, cpcfg.bind_port) if local_mode else "https://" + endpoint
    write_file(K8S + "/bootstrap-kubelet.conf",
               kubeconfig_text(cluster, server, ca_pem, "tls-bootstrap-token-user", token=token), 0o600)
    # the cluster's configuration, defaulted again on this node (resolvConf)
    kubelet_yaml = yaml_dump(default_resolv_conf(yaml_load(kubelet_cm["data"]["kubelet"]) or {}))
    write_kubelet_files(kubelet_yaml, hostname_override=node if node != socket.gethostname().lower() else None,
                        extra=extra, patches=patches)
    start_kubelet()
    wait_kubelet(240)
    if local_mode:
        # etcd-join (1.33+: before kubelet-wait-bootstrap), as admin.conf's user
        etcd_join(api_admin(K8S + "/admin.conf"), cpcfg, "etcd-join")
    out("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap")
    t0 = now()
    while not os.path.exists(K8S + "/kubelet.conf"):
        if now() - t0 > 240:
            raise Fail("error execution phase kubelet-start: timed out waiting for the condition")
        time.sleep(0.5)
    try:
        os.unlink(K8S + "/bootstrap-kubelet.conf")
    except OSError:
        pass
    if cpcfg:
        # control-plane-join: etcd, mark-control-plane (as admin.conf's user)
        c = api_admin(K8S + "/admin.conf")
        if not local_mode:
            etcd_join(c, cpcfg)
        mark_control_plane(c, node, taints if taints is not None else
                           [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}], 240,
                           "control-plane-join/mark-control-plane")
        out("")
        out("This node has joined the cluster and a new control plane instance was created:")
        out("")
        out("* Certificate signing request was sent to apiserver and approval was received.")
        out("* The Kubelet was informed of the new secure connection details.")
        out("* Control plane label and taint were applied to the new node.")
        out("* The Kubernetes control plane instances scaled up.")
        out("* A new etcd member was added to the local/stacked etcd cluster.")
        out("")
        out("To start administering your cluster from this node, you need to run the following as a regular user:")
        out("")
        out("\tmkdir -p $HOME/.kube")
        out("\tsudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config")
        out("\tsudo chown $(id -u):$(id -g) $HOME/.kube/config")
        out("")
        out("Run 'kubectl get nodes' to see this node join the cluster.")
        out("")
        return 0
    out("")
    out("This node has joined the cluster:")
    out("* Certificate signing request was sent to apiserver and a response was received.")
    out("* The Kubelet was informed of the new secure connection details.")
    out("")
    out("Run 'kubectl get nodes' on the control-plane to see this node join the cluster.")
    out("")
    return 0


# ---------------------------------------------------------------- token


def join_command(kubeconfig, token):
    kc = load_kubeconfig(kubeconfig)
    endpoint = urllib.parse.urlsplit(kc["server"]).netloc
    return "kubeadm join %s --token %s --discovery-token-ca-cert-hash sha256:%s " % (endpoint, token, spki_sha256(kc["ca"]))


def list_tokens(c):
    out_ = []
    for s in c.get(R("secrets").path("kube-system"), {"fieldSelector": "type=bootstrap.kubernetes.io/token"})["items"]:
        d = {k: unb64(v) for k, v in (s.get("data") or {}).items()}
        if "token-id" not in d:
            continue
        out_.append(d)
    return out_


def cmd_token(argv):
    if not argv or argv[0] in ("-h", "--help"):
        out("This command manages bootstrap tokens. It is optional and needed only for advanced use cases.")
        return 0
    sub, rest = split_command(argv)
    if sub not in ("create", "list", "delete", "generate"):
        raise Fail('unknown command "%s" for "kubeadm token"' % sub)
    kinds = {"kubeconfig": "str", "ttl": "dur", "description": "str", "usages": "list", "groups": "list",
             "print-join-command": "bool", "output": "str", "dry-run": "bool", "certificate-key": "str",
             "config": "str", "show-managed-fields": "bool"}
    flags, pos = parse_args(rest, "token " + sub, kinds, {"o": "output"})
    kubeconfig = flags.get("kubeconfig", K8S + "/admin.conf")
    if sub == "generate":
        out(new_token())
        return 0
    c = api_admin(kubeconfig)
    try:
        if sub == "create":
            tok = pos[0] if pos else new_token()
            if not TOKEN_RE.match(tok):
                raise Fail('the bootstrap token "%s" was not of the form "[a-z0-9]{6}.[a-z0-9]{16}"' % tok)
            ttl = parse_duration(flags.get("ttl", "24h0m0s"))
            usages = flags.get("usages") or ["signing", "authentication"]
            groups = flags.get("groups") or [DEFAULT_GROUP]
            for g in groups:
                if not g.startswith("system:bootstrappers:"):
                    raise Fail('group "%s" does not match the pattern "system:bootstrappers:..."' % g)
            sec = token_secret(tok, ttl, flags.get("description", ""), usages, groups)
            try:
                c.post(R("secrets").path("kube-system"), sec)
            except APIError as e:
                if e.code == 409:
                    raise Fail('failed to create bootstrap token with name "bootstrap-token-%s": secrets '
                               '"bootstrap-token-%s" already exists' % (tok[:6], tok[:6])) from e
                raise
            if flags.get("print-join-command"):
                sys.stdout.write(join_command(kubeconfig, tok) + "\n")
            else:
                out(tok)
            return 0
        if sub == "list":
            toks = list_tokens(c)
            fmt = flags.get("output", "text")
            rows = []
            for d in toks:
                exp = d.get("expiration")
                if exp:
                    left = parse_rfc3339(exp) - now()
                    ttl = short_human_duration(left)  # token.go: duration.ShortHumanDuration(time.Until(expires))
                else:
                    ttl, exp = "<forever>", "<never>"
                usages = sorted(k[len("usage-bootstrap-"):] for k, v in d.items() if k.startswith("usage-bootstrap-") and v == "true")
                rows.append({"token": d["token-id"] + "." + d["token-secret"], "ttl": ttl, "expires": exp,
                             "usages": usages, "description": d.get("description", ""),
                             "groups": [g for g in d.get("auth-extra-groups", "").split(",") if g]})
            if fmt in ("json", "yaml"):
                for r in rows:
                    o = {"kind": "BootstrapToken", "apiVersion": "output.kubeadm.k8s.io/v1alpha3", "creationTimestamp": None,
                         "token": r["token"], "description": r["description"], "usages": r["usages"], "groups": r["groups"]}
                    if r["expires"] != "<never>":
                        o["expires"] = r["expires"]
                    sys.stdout.write(json.dumps(o, indent=4) + "\n" if fmt == "json" else yaml_dump(o, sort_keys=False))
                return 0
            table = [["TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS"]]
            for r in rows:
                table.append([r["token"], r["ttl"], r["expires"], ",".join(r["usages"]), r["description"] or "<none>",
                              ",".join(r["groups"])])
            print_table(table)
            return 0
        if sub == "delete":
            if not pos:
                raise Fail("missing subcommand; 'token delete' is missing token of form \"[a-z0-9]{6}\" or "
                           "\"[a-z0-9]{6}.[a-z0-9]{16}\"")
            for t in pos:
                tid = t.split(".")[0]
                if not re.match(r"^[a-z0-9]{6}$", tid):
                    raise Fail('given token didn\'t match pattern "[a-z0-9]{6}" or "[a-z0-9]{6}.[a-z0-9]{16}"')
                try:
                    c.delete(R("secrets").path("kube-system", "bootstrap-token-" + tid))
                except APIError as e:
                    raise Fail('failed to delete bootstrap token "%s": %s' % (tid, e)) from e
                out('bootstrap token "%s" deleted' % tid)
            return 0
    except ConnError as e:
        raise Fail("failed to list bootstrap tokens: Get \"%s/api/v1/namespaces/kube-system/secrets\": %s"
                   % (c.server, e) if sub == "list" else "%s" % e) from e
    raise Fail('unknown command "%s" for "kubeadm token"' % sub)


def print_table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [r[i].ljust(max(widths[i] + 3, 10)) if i < len(r) - 1 else r[i] for i in range(len(r))]
        out("".join(cells).rstrip())


# ---------------------------------------------------------------- reset


def cmd_reset(argv):
    flags, _ = parse_args(argv, "reset", {"force": "bool", "cri-socket": "str", "ignore-preflight-errors": "list",
                                          "cleanup-tmp-dir": "bool", "kubeconfig": "str", "dry-run": "bool",
                                          "cert-dir": "str"}, {"f": "force"})
    if not flags.get("force"):
        sys.stdout.write("W%s reset.go:124] [reset] Reading configuration from the cluster...\n" % time.strftime("%m%d %H:%M:%S"))
        sys.stdout.write("[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted.\n")
        sys.stdout.write("[reset] Are you sure you want to proceed? [y/N]: ")
        sys.stdout.flush()
        ans = sys.stdin.readline().strip().lower()
        if ans not in ("y", "yes"):
            raise Fail("aborted reset operation")
    out("[preflight] Running pre-flight checks")
    # remove-etcd-member (phases/reset/removeetcdmember.go): a node with a
    # local etcd manifest leaves the etcd cluster first; silent unless
    # --v=1 or more, a warning when it fails
    etcd_yaml = read_file(MANIFESTS + "/etcd.yaml", "")
    if etcd_yaml and node_runs_real_etcd():
        ann = ((yaml_load(etcd_yaml) or {}).get("metadata") or {}).get("annotations") or {}
        url = ann.get("kubeadm.kubernetes.io/etcd.advertise-client-urls", "")
        host = urllib.parse.urlsplit(url).hostname if url else None
        if host:
            try:
                verbose = int(flags.get("v") or 0) >= 1
            except ValueError:
                verbose = False
            etcd_remove_self(flags.get("kubeconfig", K8S + "/admin.conf"), host, flags.get("cert-dir", PKI), verbose)
    if os.path.isdir("/var/lib/etcd"):
        shutil.rmtree("/var/lib/etcd", ignore_errors=True)
        out("[reset] Deleted contents of the etcd data directory: /var/lib/etcd")
    out("[reset] Stopping the kubelet service")
    subprocess.run(["systemctl", "stop", "kubelet"], capture_output=True, check=False, timeout=120)
    # the containers of the node's pods (transient units of the fake kubelet)
    units = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "fake-ctr-*"],
                           capture_output=True, text=True, check=False).stdout.split()
    for u in units:
        if u.startswith("fake-ctr-"):
            subprocess.run(["systemctl", "kill", "--signal=SIGKILL", u], capture_output=True, check=False, timeout=20)
            subprocess.run(["systemctl", "stop", "--no-block", u], capture_output=True, check=False, timeout=20)
    # the fake API server keeps its objects under /var/lib/etcd and may have
    # written them again until it was killed (a real etcd writes only to the
    # files it has open): the directory is empty after a reset, as with the
    # real one
    time.sleep(0.5)
    shutil.rmtree("/var/lib/etcd", ignore_errors=True)
    out('[reset] Unmounting mounted directories in "%s"' % KUBELET_DIR)
    dirs = [MANIFESTS, KUBELET_DIR, PKI]
    out("[reset] Deleting contents of directories: [%s]" % " ".join(dirs))
    for d in dirs:
        if os.path.isdir(d):
            for e in os.listdir(d):
                p = os.path.join(d, e)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)
    shutil.rmtree("/run/fake-kubelet", ignore_errors=True)
    files = [K8S + "/" + f for f in ("admin.conf", "super-admin.conf", "kubelet.conf", "bootstrap-kubelet.conf",
                                     "controller-manager.conf", "scheduler.conf")]
    out("[reset] Deleting files: [%s]" % " ".join(files))
    for f in files:
        if os.path.exists(f):
            os.unlink(f)
    out("")
    out("The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d")
    out("")
    out("The reset process does not reset or clean up iptables rules or IPVS tables.")
    out("If you wish to reset iptables, you must do so manually by using the \"iptables\" command.")
    out("")
    out("If your cluster was setup to utilize IPVS, run ipvsadm --clear (or similar)")
    out("to reset your system's IPVS tables.")
    out("")
    out("The reset process does not clean your kubeconfig files and you must remove them manually.")
    out("Please, check the contents of the $HOME/.kube/config file.")
    return 0


# ---------------------------------------------------------------- upgrade
# kubeadm upgrade plan / apply / node, as the kubernetes.io pages "kubeadm
# upgrade" and "Upgrading kubeadm clusters" describe them and kubeadm's
# phases/upgrade and upgrade/policy.go word them:
#   - the version policy (EnforceVersionPolicies): the target must not be
#     newer than kubeadm itself ("Upgrade kubeadm first"), may be at most
#     one minor above the cluster ("kubeadm can upgrade only 1 minor version
#     at a time"), and not below it ("Downgrades are not supported yet",
#     skippable with --force); violations print the FATAL block and exit 1;
#   - apply asks "[upgrade/confirm] Are you sure ...? [y/N]" unless -y;
#     it backs the static pod manifests up under
#     /etc/kubernetes/tmp/kubeadm-backup-manifests-DATE/, writes them with
#     the new image tags, waits (up to 5 min) for the API server to report
#     the new version, then stores the new kubernetesVersion in the
#     kubeadm-config ConfigMap and the kubelet configuration, updates the
#     kube-proxy DaemonSet's image, and prints the SUCCESS line;
#   - node: on a control plane node the same for its manifests; on a
#     worker "Skipping phase. Not a control plane node." and
#     /var/lib/kubelet/config.yaml rewritten from the kubelet-config
#     ConfigMap (the old one kept under /etc/kubernetes/tmp), read with the
#     node's kubelet.conf credentials;
#   - the files and packages are not touched otherwise: kubeadm never
#     upgrades the kubelet (its package and restart are the admin's).
# Not copied: certificate renewal, etcd upgrades, the image pre-pull, the
# available-versions lookup on dl.k8s.io (plan lists this kubeadm's version).

CP_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def vtuple(v):
    return tuple(int(x) for x in v.lstrip("v").split("."))


def cluster_version(c):
    try:
        cm = c.get(R("configmaps").path("kube-system", "kubeadm-config"))
    except (APIError, ConnError) as e:
        raise Fail("[upgrade/config] FATAL: failed to get config map: %s" % e) from e
    cc = yaml_load(cm["data"]["ClusterConfiguration"]) or {}
    return cm, cc, cc.get("kubernetesVersion", "v0.0.0")


def version_policy(target, current, force):
    errs, skippable = [], []
    t, cur, kv = vtuple(target), vtuple(current), vtuple(FAKE_VERSION)
    if t > kv:
        errs.append('Specified version to upgrade to "%s" is higher than the kubeadm version "v%s". Upgrade kubeadm first '
                    "using the tool you used to install kubeadm" % (target, FAKE_VERSION))
    if t[1] > cur[1] + 1:
        errs.append('Specified version to upgrade to "%s" is too high; kubeadm can upgrade only 1 minor version at a time'
                    % target)
    if t < cur:
        skippable.append('Specified version to upgrade to "%s" is equal to or lower than the cluster version "%s". '
                         "Downgrades are not supported yet" % (target, current))
    if errs or (skippable and not force):
        lines = ["[upgrade/version] FATAL: the --version argument is invalid due to these %s errors:" %
                 ("fatal" if errs else "errors that can be skipped with --force"), ""]
        lines += ["\t- " + e for e in errs + skippable]
        lines += ["", "Please fix the misalignments highlighted above and try upgrading again"]
        raise Fail("\n".join(lines))
    for w in skippable:
        warn("[upgrade/version] Found %d potential version compatibility errors but skipping since the --force flag is set: "
             "\n\n\t- %s" % (len(skippable), w))


def local_api_client(c, manifest_text):
    """A client of this node's own API server (its manifest's
    --advertise-address and --secure-port) with c's credentials: kubeadm
    waits for this node's components, not for whichever control plane the
    endpoint (a VIP) answers from."""
    addr = re.search(r"--advertise-address=(\S+)", manifest_text)
    port = re.search(r"--secure-port=(\d+)", manifest_text)
    lc = copy.copy(c)
    if addr:
        lc.host = addr.group(1)
    if port:
        lc.port = int(port.group(1))
    lc.conn = None
    return lc


def upgrade_manifests(target, c):
    stamp = time.strftime("%Y-%m-%d-%H-%M-%S")
    backup = "%s/tmp/kubeadm-backup-manifests-%s" % (K8S, stamp)
    os.makedirs(backup, exist_ok=True)
    out("[upgrade/staticpods] Writing new Static Pod manifests to \"%s/tmp/kubeadm-upgraded-manifests\"" % K8S)
    changed, api_text = [], ""
    for comp in CP_COMPONENTS:
        path = "%s/%s.yaml" % (MANIFESTS, comp)
        text = read_file(path, None)
        if text is None:
            raise Fail("[upgrade/staticpods] FATAL: couldn't read the static pod manifest %s" % path)
        if comp == "kube-apiserver":
            api_text = text
        new = re.sub(r"(image: \S*/%s):v[0-9.]+" % re.escape(comp), r"\1:" + target, text)
        out("[upgrade/staticpods] Preparing for \"%s\" upgrade" % comp)
        if new == text:
            # staticpods.go: an unchanged manifest is not written, nothing waited for
            out("[upgrade/staticpods] Current and new manifests of %s are equal, skipping upgrade" % comp)
            continue
        shutil.copy2(path, backup + "/" + comp + ".yaml")
        out('[upgrade/staticpods] Moved new manifest to "%s" and backed up old manifest to "%s/%s.yaml"'
            % (path, backup, comp))
        write_file(path, new, 0o600)
        changed.append(comp)
    if not changed:
        return
    out("[upgrade/staticpods] Waiting for the kubelet to restart the component")
    out("[upgrade/staticpods] This can take up to 5m0s")
    lc = local_api_client(c, api_text)
    t0 = now()
    while True:
        try:
            if lc.get("/version").get("gitVersion") == target:
                break
        except (APIError, ConnError, OSError):
            pass
        if now() - t0 > 300:
            raise Fail("[upgrade/apply] FATAL: couldn't upgrade control plane. kubeadm has tried to recover everything into "
                       "the earlier state. Errors faced: timed out waiting for the condition")
        time.sleep(1)
    for comp in changed:
        out('[apiclient] Found 1 Pods for label selector component=%s' % comp)
        out('[upgrade/staticpods] Component "%s" upgraded successfully!' % comp)


def kubelet_config_from_cluster(c, backup_dir, patches=None):
    cm = c.get(R("configmaps").path("kube-system", "kubelet-config"))
    text = apply_kubelet_patches(yaml_dump(default_resolv_conf(yaml_load(cm["data"]["kubelet"]) or {})), patches)
    path = KUBELET_DIR + "/config.yaml"
    if os.path.exists(path):
        os.makedirs(backup_dir, exist_ok=True)
        shutil.copy2(path, backup_dir + "/config.yaml")
        out("[upgrade] Backing up kubelet config file to %s/config.yaml" % backup_dir)
    out('[kubelet-start] Writing kubelet configuration to file "%s"' % path)
    write_file(path, text, 0o644)


def cmd_upgrade(argv):
    if not argv or argv[0] not in ("plan", "apply", "node"):
        raise Fail('unknown command "%s" for "kubeadm upgrade"' % (argv[0] if argv else ""))
    sub, rest = argv[0], argv[1:]
    flags, pos = parse_args(rest, "upgrade " + sub,
                            {"yes": "bool", "force": "bool", "kubeconfig": "str", "dry-run": "bool",
                             "certificate-renewal": "bool", "etcd-upgrade": "bool", "ignore-preflight-errors": "list",
                             "config": "str", "patches": "str"}, {"y": "yes", "f": "force"})
    if sub == "node":
        return upgrade_node(flags)
    c = api_admin(flags.get("kubeconfig") or K8S + "/admin.conf")
    out("[preflight] Running pre-flight checks.")
    out("[upgrade/config] Reading configuration from the cluster...")
    out("[upgrade/config] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'")
    cm, cc, current = cluster_version(c)
    if sub == "plan":
        target = pos[0] if pos else "v" + FAKE_VERSION
        if not target.startswith("v"):
            target = "v" + target
        out("[upgrade] Running cluster health checks")
        out("[upgrade] Fetching available versions to upgrade to")
        out("[upgrade/versions] Cluster version: %s" % current)
        out("[upgrade/versions] kubeadm version: v%s" % FAKE_VERSION)
        out("[upgrade/versions] Target version: %s" % target)
        version_policy(target, current, flags.get("force"))
        out("")
        out("Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':")
        out("COMPONENT   NODE   CURRENT   TARGET")
        for n in c.get(R("nodes").path())["items"]:
            out("kubelet     %s   %s   %s" % (n["metadata"]["name"],
                                              ((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""), target))
        out("")
        out("Upgrade to the latest stable version:")
        out("")
        out("COMPONENT                 NODE   CURRENT   TARGET")
        for comp in CP_COMPONENTS:
            out("%-25s %s   %s   %s" % (comp, socket.gethostname(), current, target))
        out("")
        out("You can now apply the upgrade by executing the following command:")
        out("")
        out("\tkubeadm upgrade apply %s" % target)
        out("")
        return 0
    if not pos:
        raise Fail("[upgrade/version] FATAL: missing version argument")
    target = pos[0] if pos[0].startswith("v") else "v" + pos[0]
    if not version_ok(target):
        raise Fail('[upgrade/version] FATAL: unable to parse version "%s"' % target)
    out("[upgrade] Running cluster health checks")
    out("[upgrade/version] You have chosen to change the cluster version to \"%s\"" % target)
    out("[upgrade/versions] Cluster version: %s" % current)
    out("[upgrade/versions] kubeadm version: v%s" % FAKE_VERSION)
    version_policy(target, current, flags.get("force"))
    if not flags.get("yes"):
        sys.stdout.write("[upgrade/confirm] Are you sure you want to proceed with the upgrade? [y/N]: ")
        sys.stdout.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            raise Fail("won't proceed; the user didn't answer (Y|y) in order to continue")
    out("[upgrade/apply] Upgrading your Static Pod-hosted control plane to version \"%s\" (timeout: 5m0s)..." % target)
    upgrade_manifests(target, c)
    cc["kubernetesVersion"] = target
    if FAKE_MINOR >= 31 and cc.get("apiVersion") == V1BETA3:
        # stored again in the newest version (extraArgs lists, no timeoutForControlPlane)
        cc["apiVersion"] = V1BETA4
        for comp in ("apiServer", "controllerManager", "scheduler"):
            part = cc.get(comp) or {}
            part.pop("timeoutForControlPlane", None)
            if isinstance(part.get("extraArgs"), dict):
                part["extraArgs"] = [{"name": k, "value": v} for k, v in sorted(part["extraArgs"].items())]
    cm["data"]["ClusterConfiguration"] = yaml_dump(cc)
    out('[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace')
    c.put(R("configmaps").path("kube-system", "kubeadm-config"), cm)
    out('[kubelet] Creating a ConfigMap "kubelet-config" in namespace kube-system with the configuration for the kubelets in the cluster')
    kubelet_config_from_cluster(c, "%s/tmp/kubeadm-kubelet-config-%s" % (K8S, time.strftime("%Y-%m-%d-%H-%M-%S")),
                                flags.get("patches"))
    try:
        ds = c.get(R("daemonsets").path("kube-system", "kube-proxy"))
        for ctr in ds["spec"]["template"]["spec"]["containers"]:
            ctr["image"] = re.sub(r":v[0-9.]+$", ":" + target, ctr["image"])
        c.put(R("daemonsets").path("kube-system", "kube-proxy"), ds)
        out("[addons] Applied essential addon: kube-proxy")
    except (APIError, ConnError) as e:
        raise Fail("[upgrade/postupgrade] FATAL post-upgrade error: unable to update the kube-proxy DaemonSet: %s" % e) from e
    out("")
    out('[upgrade/successful] SUCCESS! Your cluster was upgraded to "%s". Enjoy!' % target)
    out("")
    out("[upgrade/kubelet] Now that your control plane is upgraded, please proceed with upgrading your kubelets if you "
        "haven't already done so.")
    return 0


def upgrade_node(flags):
    out("[upgrade] Reading configuration from the cluster...")
    out("[upgrade] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'")
    cp = os.path.exists(MANIFESTS + "/kube-apiserver.yaml")
    kubeconfig = K8S + ("/admin.conf" if cp else "/kubelet.conf")
    if not os.path.exists(kubeconfig):
        raise Fail("couldn't create a Kubernetes client from file \"%s\": failed to load admin kubeconfig: open %s: "
                   "no such file or directory" % (kubeconfig, kubeconfig))
    c = api_admin(kubeconfig)
    _, _, target = cluster_version(c)
    out("[preflight] Running pre-flight checks")
    if cp:
        out("[upgrade] Upgrading your Static Pod-hosted control plane instance to version \"%s\"..." % target)
        upgrade_manifests(target, c)
    else:
        out("[preflight] Skipping prepull. Not a control plane node.")
        out("[upgrade] Skipping phase. Not a control plane node.")
    kubelet_config_from_cluster(c, "%s/tmp/kubeadm-kubelet-config-%s" % (K8S, time.strftime("%Y-%m-%d-%H-%M-%S")),
                                flags.get("patches"))
    out("[upgrade] The configuration for this node was successfully updated!")
    out("[upgrade] Now you should go ahead and upgrade the kubelet package using your package manager.")
    return 0


# ---------------------------------------------------------------- main


def cmd_version(argv):
    flags, _ = parse_args(argv, "version", {"output": "str"}, {"o": "output"})
    info = version_info()
    fmt = flags.get("output", "")
    if fmt == "short":
        out("v" + FAKE_VERSION)
    elif fmt == "json":
        out(json.dumps({"clientVersion": info}, indent=2))
    elif fmt == "yaml":
        sys.stdout.write(yaml_dump({"clientVersion": info}, sort_keys=False))
    elif fmt == "":
        out("kubeadm version: &version.Info{Major:\"%s\", Minor:\"%s\", GitVersion:\"%s\", GitCommit:\"%s\", "
            "GitTreeState:\"%s\", BuildDate:\"%s\", GoVersion:\"%s\", Compiler:\"%s\", Platform:\"%s\"}"
            % (info["major"], info["minor"], info["gitVersion"], info["gitCommit"], info["gitTreeState"],
               info["buildDate"], info["goVersion"], info["compiler"], info["platform"]))
    else:
        raise Fail('invalid output format: %s' % fmt)
    return 0


# ---------------------------------------------------------------- certs
#
# check-expiration and renew as cmd/kubeadm/app/cmd/certs.go and
# phases/certs/renewal/manager.go do them: the certificates kubeadm
# manages (certsphase's default list plus the client certificates
# embedded in admin.conf, super-admin.conf (1.29+), controller-manager.conf
# and scheduler.conf; never kubelet.conf, whose certificate is the
# kubelet's), sorted by name; renewal signs a new key and certificate with
# the same subject, SANs and usages by the same CA, valid one year.

# name -> (file under the cert dir, CA name, CA base, long name)
CERT_HANDLERS = {
    "apiserver": ("apiserver", "ca", "ca", "certificate for serving the Kubernetes API"),
    "apiserver-kubelet-client": ("apiserver-kubelet-client", "ca", "ca",
                                 "certificate for the API server to connect to kubelet"),
    "front-proxy-client": ("front-proxy-client", "front-proxy-ca", "front-proxy-ca",
                           "certificate for the front proxy client"),
    "etcd-server": ("etcd/server", "etcd-ca", "etcd/ca", "certificate for serving etcd"),
    "etcd-peer": ("etcd/peer", "etcd-ca", "etcd/ca", "certificate for etcd nodes to communicate with each other"),
    "etcd-healthcheck-client": ("etcd/healthcheck-client", "etcd-ca", "etcd/ca",
                                "certificate for liveness probes to healthcheck etcd"),
    "apiserver-etcd-client": ("apiserver-etcd-client", "etcd-ca", "etcd/ca",
                              "certificate the apiserver uses to access etcd"),
    "admin.conf": (None, "ca", "ca",
                   "certificate embedded in the kubeconfig file for the admin to use and for kubeadm itself"),
    "controller-manager.conf": (None, "ca", "ca",
                                "certificate embedded in the kubeconfig file for the controller manager to use"),
    "scheduler.conf": (None, "ca", "ca", "certificate embedded in the kubeconfig file for the scheduler manager to use"),
}
if FAKE_MINOR >= 29:
    CERT_HANDLERS["super-admin.conf"] = (None, "ca", "ca",
                                         "certificate embedded in the kubeconfig file for the super-admin")
CA_HANDLERS = {"ca": "ca", "etcd-ca": "etcd/ca", "front-proxy-ca": "front-proxy-ca"}


def _cert_pem(name, cert_dir):
    """The PEM of certificate NAME, or None when it does not exist."""
    fname = CERT_HANDLERS[name][0]
    if fname is None:
        try:
            return load_kubeconfig(K8S + "/" + name).get("cert")
        except KubeconfigError:
            return None
    return read_file("%s/%s.crt" % (cert_dir, fname))


def _not_after(pem):
    import calendar
    return calendar.timegm(time.strptime(cert_not_after(pem), "%b %d %H:%M:%S %Y %Z"))


def short_human_duration(sec):
    """Go's apimachinery duration.ShortHumanDuration."""
    s = int(sec)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm" % (s // 60)
    h = s // 3600
    if h < 24:
        return "%dh" % h
    if h < 24 * 365:
        return "%dd" % (h // 24)
    return "%dy" % (h // 24 // 365)


def tabwrite(rows):
    """text/tabwriter with minwidth 10, padding 3, ' ' (certs.go): every
    cell but a row's last is padded to its column's widest cell + 3."""
    widths = {}
    for r in rows:
        for i, c in enumerate(r[:-1]):
            widths[i] = max(widths.get(i, 10), len(c) + 3)
    for r in rows:
        out("".join(c.ljust(widths[i]) for i, c in enumerate(r[:-1])) + r[-1])


def certs_config(flags, prefix):
    """getInternalCfg: the kubeadm-config ConfigMap when the cluster answers,
    kubeadm's defaults otherwise (renewal must work on a broken cluster)."""
    kubeconfig = flags.get("kubeconfig", K8S + "/admin.conf")
    if not flags.get("config"):
        try:
            c = api_admin(kubeconfig)
            c.timeout = 5.0
            c.get(R("configmaps").path("kube-system", "kubeadm-config"))
            out('[%s] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...' % prefix)
            out("[%s] Use 'kubeadm init phase upload-config --config your-config-file' to re-upload it." % prefix)
            out()
            return
        except Exception:  # noqa: BLE001  (any failure: kubeadm falls back)
            out("[%s] Error reading configuration from the Cluster. Falling back to default configuration" % prefix)
            out()


def _sans(pem):
    text = openssl("x509", "-noout", "-ext", "subjectAltName", data=pem.encode()).decode()
    dns, ips = [], []
    for part in re.split(r",\s*", " ".join(text.splitlines()[1:]).strip()):
        if part.startswith("DNS:"):
            dns.append(part[4:])
        elif part.startswith("IP Address:"):
            ips.append(part[11:])
    return dns, ips


def _usage(pem):
    text = openssl("x509", "-noout", "-ext", "extendedKeyUsage", data=pem.encode()).decode()
    server, client = "Server Authentication" in text, "Client Authentication" in text
    return "both" if server and client else "server" if server else "client"


def renew_cert(name, cert_dir):
    fname, _, ca_base, long_name = CERT_HANDLERS[name]
    pem = _cert_pem(name, cert_dir)
    if pem is None:
        out("MISSING! %s" % long_name)
        return
    ca_crt, ca_key = "%s/%s.crt" % (cert_dir, ca_base), "%s/%s.key" % (cert_dir, ca_base)
    if not os.path.exists(ca_key):
        out("Detected external %s, %s can't be renewed" % (ca_base, long_name))
        return
    cn, orgs = cert_subject(pem)
    dns, ips = _sans(pem)
    usage = _usage(pem)
    if fname is not None:
        make_leaf(ca_crt, ca_key, "%s/%s.key" % (cert_dir, fname), "%s/%s.crt" % (cert_dir, fname), cn, orgs=orgs,
                  dns=dns, ips=ips, usage=usage)
    else:
        path = K8S + "/" + name
        kc = load_kubeconfig(path)
        with tempfile.TemporaryDirectory() as tmp:
            key = os.path.join(tmp, "k")
            cert = make_leaf(ca_crt, ca_key, key, os.path.join(tmp, "c"), cn, orgs=orgs, usage=usage)
            write_file(path, kubeconfig_text(kc["cluster"], kc["server"], kc["ca"], kc["user"], cert, read_file(key)),
                       0o600)
    out("%s renewed" % long_name)


def cmd_certs(argv):
    if not argv or argv[0] in ("-h", "--help"):
        out("Commands related to handling kubernetes certificates")
        return 0
    sub, rest = split_command(argv)
    if sub == "certificate-key":
        # kubeadm certs certificate-key (app/cmd/certs.go): a new key, hex
        _, pos = parse_args(rest, "certs certificate-key", {})
        if pos:
            raise Fail('unknown command "%s" for "kubeadm certs certificate-key"' % pos[0])
        out(new_certificate_key())
        return 0
    if sub == "check-expiration":
        flags, pos = pflag_parse(rest, cli_names("certs check-expiration"),
                                 dict(GLOBAL_KINDS, **{"cert-dir": "str", "config": "str", "kubeconfig": "str",
                                                       "output": "str", "allow-missing-template-keys": "bool",
                                                       "show-managed-fields": "bool"}), {"o": "output", "v": "v"})
        if pos:
            raise Fail('unknown command "%s" for "kubeadm certs check-expiration"' % pos[0])
        if flags.get("output", "text") != "text":
            raise FlagNotModelled("certs check-expiration -o %s: only the text output is modelled" % flags["output"])
        certs_config(flags, "check-expiration")
        d = flags.get("cert-dir", PKI)
        now = time.time()
        rows = [["CERTIFICATE", "EXPIRES", "RESIDUAL TIME", "CERTIFICATE AUTHORITY", "EXTERNALLY MANAGED"]]
        for name in sorted(CERT_HANDLERS):
            pem = _cert_pem(name, d)
            if pem is None:
                rows.append(["!MISSING! " + name, "", "", "", ""])
                continue
            t = _not_after(pem)
            ext = CERT_HANDLERS[name][2] != "etcd/ca" and not os.path.exists("%s/%s.key" % (d, CERT_HANDLERS[name][2]))
            rows.append([name, time.strftime("%b %d, %Y %H:%M UTC", time.gmtime(t)), short_human_duration(t - now),
                         CERT_HANDLERS[name][1], "%-8s" % ("yes" if ext else "no")])
        tabwrite(rows)
        out()
        rows = [["CERTIFICATE AUTHORITY", "EXPIRES", "RESIDUAL TIME", "EXTERNALLY MANAGED"]]
        for name in sorted(CA_HANDLERS):
            pem = read_file("%s/%s.crt" % (d, CA_HANDLERS[name]))
            if pem is None:
                rows.append(["!MISSING! " + name, "", "", ""])
                continue
            t = _not_after(pem)
            ext = name != "etcd-ca" and not os.path.exists("%s/%s.key" % (d, CA_HANDLERS[name]))
            rows.append([name, time.strftime("%b %d, %Y %H:%M UTC", time.gmtime(t)), short_human_duration(t - now),
                         "%-8s" % ("yes" if ext else "no")])
        tabwrite(rows)
        return 0
    if sub == "renew":
        flags, pos = pflag_parse(rest, cli_names("certs renew all"),  # each certificate's subcommand has renew's flags
                                 dict(GLOBAL_KINDS, **{"cert-dir": "str", "config": "str", "kubeconfig": "str"}),
                                 {"v": "v"})
        if not pos:
            out("This command is not meant to be run on its own. See list of available subcommands.")
            return 0
        what = pos[0]
        if what != "all" and what not in CERT_HANDLERS:
            raise Fail('unknown command "%s" for "kubeadm certs renew"' % what)
        if len(pos) > 1:
            raise Fail('unknown command "%s" for "kubeadm certs renew %s"' % (pos[1], what))
        certs_config(flags, "renew")
        d = flags.get("cert-dir", PKI)
        for name in sorted(CERT_HANDLERS) if what == "all" else [what]:
            renew_cert(name, d)
        if what == "all":
            out()
            out("Done renewing certificates. You must restart the kube-apiserver, kube-controller-manager, "
                "kube-scheduler and etcd, so that they can use the new certificates.")
        return 0
    raise Fail('unknown command "%s" for "kubeadm certs"' % sub)


def main():
    argv = sys.argv[1:]
    cmds = {"init": cmd_init, "join": cmd_join, "token": cmd_token, "reset": cmd_reset, "version": cmd_version,
            "upgrade": cmd_upgrade, "certs": cmd_certs}
    if not argv or argv[0] in ("-h", "--help", "help"):
        out("kubeadm: easily bootstrap a secure Kubernetes cluster")
        out("")
        out("Usage:\n  kubeadm [command]\n\nAvailable Commands:\n  certs  init  join  reset  token  upgrade  version")
        return 0
    cmd, rest = split_command(argv)
    if cmd not in cmds:
        sys.stderr.write('unknown command "%s" for "kubeadm"\nTo see the stack trace of this error execute with --v=5 or higher\n' % cmd)
        return 1
    try:
        return cmds[cmd](rest)
    except FlagNotModelled as e:
        sys.stderr.write("kubeadm stand-in (tests/fakes/kube/kubeadm.py): %s\n" % e)
        return 1
    except FlagError as e:
        sys.stderr.write(str(e) + "\nTo see the stack trace of this error execute with --v=5 or higher\n")
        return 1
    except Fail as e:
        sys.stderr.write(str(e) + "\nTo see the stack trace of this error execute with --v=5 or higher\n")
        return e.code
    except (APIError, ConnError, KubeconfigError) as e:
        sys.stderr.write(str(e) + "\nTo see the stack trace of this error execute with --v=5 or higher\n")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
