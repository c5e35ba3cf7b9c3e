# kube-apiserver (fake image): the Kubernetes API over HTTPS, for
# provision's tests.  The fake kubelet runs it from the static pod manifest
# that the fake kubeadm wrote (/etc/kubernetes/manifests/kube-apiserver.yaml),
# with the flags of that manifest, as the real kubelet runs the
# registry.k8s.io/kube-apiserver image.
#
# What it copies from the real API server (kubernetes.io: "The Kubernetes
# API", "API Concepts", "Authenticating", "Using RBAC Authorization",
# "Authenticating with Bootstrap Tokens", "Health checking"):
#   - HTTPS on --secure-port with --tls-cert-file/--tls-private-key-file;
#     client certificates verified against --client-ca-file give the user
#     (CN) and groups (O); "Authorization: Bearer ID.SECRET" bootstrap
#     tokens (Secrets bootstrap-token-ID in kube-system, unexpired, with
#     usage-bootstrap-authentication) give system:bootstrap:ID in
#     system:bootstrappers and the token's auth-extra-groups; anything
#     else is system:anonymous.
#   - authorization in the shape of kubeadm's default RBAC and the Node
#     authorizer: system:masters and kubeadm:cluster-admins may do
#     anything, nodes read the cluster and write their own Node and pods,
#     bootstrap tokens post and read CSRs and read nodes and the kubeadm
#     ConfigMaps, anonymous users read /healthz /livez /readyz /version and
#     kube-public/cluster-info; beyond those, RBAC: ClusterRoleBindings and
#     RoleBindings (User, Group, ServiceAccount subjects) to the rules of
#     their ClusterRole/Role; Impersonate-User for cluster admins, and for
#     a node as the service account of a pod bound to it (in place of
#     service-account tokens, which the fake does not issue).  Status
#     objects for 401, 403, 404 and 409 with the real reasons and messages.
#   - the DefaultStorageClass admission plugin: a PersistentVolumeClaim
#     created without storageClassName gets the class annotated
#     storageclass.kubernetes.io/is-default-class: "true".
#   - the RuntimeClass admission plugin: a Pod whose runtimeClassName
#     names no RuntimeClass (node.k8s.io/v1) is refused, 403 Forbidden
#     'pods "NAME" is forbidden: pod rejected: RuntimeClass "X" not found'
#     (plugin/pkg/admission/runtimeclass); overhead and scheduling are not
#     copied.
#   - /livez, /readyz, /healthz answer "ok" (or, with ?verbose, one
#     [+]check line per check and "readyz check passed"); /version gives
#     version.Info of the image's tag.
#   - REST on /api/v1 and /apis/GROUP/VERSION for the resources in
#     fakekube.RESOURCES: get, list (labelSelector, fieldSelector), create,
#     replace, merge patch, delete; subresources status, binding, approval,
#     eviction; lists as KIND+"List" with metadata.resourceVersion;
#     uid, creationTimestamp, resourceVersion and generation kept as the
#     API does; defaults the API applies to pods and services; namespaces
#     must exist and must not be terminating for namespaced creates.
#   - the selector of a DaemonSet or a Deployment (apps/v1) cannot change
#     once created: an update or patch (dry runs too) that changes
#     spec.selector gets 422 Invalid, 'DaemonSet.apps "NAME" is invalid:
#     spec.selector: Invalid value: v1.LabelSelector{...}: field is
#     immutable', the new selector printed as Go's %#v prints it, with the
#     cause in details (pkg/registry/apps/daemonset/strategy.go
#     ValidateUpdate, apimachinery's ValidateImmutableField; the text as
#     users have recorded it).  An empty and a missing matchLabels or
#     matchExpressions are the same (apiequality.Semantic).
#   - delete takes DeleteOptions' propagationPolicy (Orphan, Background,
#     Foreground; another value: 422, in words of the fake's): Orphan takes the object's uid out of
#     every ownerReferences in its namespace, so its pods stay and belong
#     to nobody (the real API server leaves that to the garbage collector
#     behind an "orphan" finalizer, which `kubectl delete` waits for); the
#     others leave dependents to the garbage collector
#     (kube-controller-manager), Foreground without waiting for them.
#   - etcd, when given --etcd-servers (--etcd-cafile, --etcd-certfile,
#     --etcd-keyfile) on a node that has a real etcd binary: every object
#     under /registry/... in etcd, resourceVersion its mod_revision, quorum
#     reads, compare-and-swap writes re-run on a conflict, so API servers on
#     several nodes share one state; a storage error is 500 with etcd's
#     message; /livez /readyz /healthz check etcd (EtcdStore,
#     tests/fakes/README.md "etcd: real in the cluster").
# Not copied: watch, server-side apply, admission webhooks, field
# validation.  Without a real etcd on the node, objects are kept in one
# file of JSON lines in etcd's data directory, /var/lib/etcd, so `kubeadm
# reset` removes them as it removes etcd's data: see Store.  Connections
# are kept alive (HTTP/1.1) unless the client says Connection: close.
#
# Test knob: /etc/fake-kubernetes/knobs/apiserver-readyz-fail (exists):
# /readyz answers 500 with "[-]etcd failed" while the file exists.  A
# record of every bootstrap token stored is appended to
# /var/lib/fake-kubernetes/tokens.log when the knob record-tokens exists
# (tests grep their logs for the real token values).

import copy
import http.client
import http.server
import socketserver
import threading
import uuid

STATE = "/var/lib/etcd/fake-apiserver-state.json"
# etcd: a request's socket timeout (longer than etcd's own 7 s proposal
# timeout, so that etcd's "request timed out" is what a client sees), the
# health check's (--etcd-healthcheck-timeout, --etcd-readycheck-timeout:
# 2 s) and how long start-up waits for etcd to answer
ETCD_TIMEOUT = 10
ETCD_HEALTH_TIMEOUT = 2
ETCD_START_TIMEOUT = 60
TOKEN_LOG = "/var/lib/fake-kubernetes/tokens.log"


def status_obj(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
         "reason": reason, "code": code}
    if not reason:
        del s["reason"]  # StatusReasonUnknown: omitted, as metav1.Status's omitempty
    if details:
        s["details"] = details
    return s


class HTTPFail(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.body = status_obj(code, reason, message, details)


def not_found(res, name):
    return HTTPFail(404, "NotFound", '%s "%s" not found' % (res.plural if not res.group else res.plural + "." + res.group, name),
                    {"name": name, "group": res.group, "kind": res.plural} if res.group else {"name": name, "kind": res.plural})


# Kinds of apps/v1 whose spec.selector is immutable.
IMMUTABLE_SELECTOR = ("DaemonSet", "Deployment")


def go_string(s):
    return json.dumps(s, ensure_ascii=False)


def go_label_selector(sel):
    """A LabelSelector as Go's %#v prints a metav1.LabelSelector."""
    if sel is None:
        return "null"
    ml = sel.get("matchLabels")
    if ml:
        labels = "map[string]string{%s}" % ", ".join("%s:%s" % (go_string(k), go_string(str(ml[k]))) for k in sorted(ml))
    else:
        labels = "map[string]string(nil)"
    exprs = sel.get("matchExpressions")
    if exprs:
        parts = []
        for e in exprs:
            vals = e.get("values")
            v = "[]string{%s}" % ", ".join(go_string(str(x)) for x in vals) if vals else "[]string(nil)"
            parts.append("v1.LabelSelectorRequirement{Key:%s, Operator:%s, Values:%s}"
                         % (go_string(e.get("key", "")), go_string(e.get("operator", "")), v))
        ex = "[]v1.LabelSelectorRequirement{%s}" % ", ".join(parts)
    else:
        ex = "[]v1.LabelSelectorRequirement(nil)"
    return "v1.LabelSelector{MatchLabels:%s, MatchExpressions:%s}" % (labels, ex)


def same_selector(a, b):
    """apiequality.Semantic.DeepEqual of two LabelSelectors: an empty map
    or list is the same as none."""
    def norm(x):
        if x is None:
            return None
        return {k: v for k, v in x.items() if k in ("matchLabels", "matchExpressions") and v}
    return norm(a) == norm(b)


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(target.get(k), v)
    return out


class Store:
    """Every object, by resource ("pods", "daemonsets.apps") and
    "namespace/name", persisted to STATE before a change is answered.

    STATE holds JSON lines: the whole store ({"rv", "objects"}), then one
    line per object changed since ({"seq", "rv", "k": resource, "id":
    "namespace/name", "o": the object, or null when deleted}), appended to
    the file the server keeps open: a change costs the size of the object,
    not of the store.  Once the lines outgrow the snapshot (at least
    COMPACT bytes), the file is written again whole (a new file renamed
    over it: a reader such as tar gets one consistent file, old or new).
    Loading replays the lines with a seq above the snapshot's and stops at
    a line cut short (a write the server never answered)."""

    COMPACT = 256 * 1024

    def __init__(self, path):
        self.path = path
        self.lock = threading.RLock()
        self.rv = 1
        self.seq = 0
        self.data = {}
        self.dirty = set()  # (resource key, "namespace/name") changed since the last save
        self.fd = None      # STATE, open for appending changes
        self.tail = 0       # bytes of change lines since the snapshot
        self.snap = 0       # bytes of the snapshot line
        try:
            lines = read_file(path).split("\n")
            st = json.loads(lines[0])
            self.rv, self.data, self.seq = st["rv"], st["objects"], st.get("seq", 0)
            for ln in lines[1:]:
                try:
                    ch = json.loads(ln)
                    if ch["seq"] <= self.seq:
                        continue
                    b = self.data.setdefault(ch["k"], {})
                    if ch["o"] is None:
                        b.pop(ch["id"], None)
                    else:
                        b[ch["id"]] = ch["o"]
                    self.rv, self.seq = max(self.rv, ch["rv"]), ch["seq"]
                except (ValueError, KeyError, TypeError):
                    break
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            self.rv, self.seq, self.data = 1, 0, {}

    def save(self, whole=False):
        """Make the changes since the last save durable (against a kill of
        this process, as the whole-file write before was)."""
        if not self.dirty and not whole:
            return
        if whole or self.fd is None or self.tail > max(self.snap, self.COMPACT):
            if self.snapshot(create=whole or self.fd is None):
                return
        lines = []
        for k, i in sorted(self.dirty):
            self.seq += 1
            lines.append(json.dumps({"seq": self.seq, "rv": self.rv, "k": k, "id": i,
                                     "o": self.data.get(k, {}).get(i)}) + "\n")
        self.dirty.clear()
        buf = "".join(lines).encode()
        self.tail += len(buf)
        while buf:
            buf = buf[os.write(self.fd, buf):]

    def snapshot(self, create):
        """STATE written whole; False when its folder is gone (kubeadm reset
        removed it while this server still runs: not made again)."""
        d = os.path.dirname(self.path)
        if not create and not os.path.isdir(d):
            return False
        os.makedirs(d, exist_ok=True)
        text = (json.dumps({"rv": self.rv, "seq": self.seq, "objects": self.data}) + "\n").encode()
        fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(self.path) + ".")
        try:
            os.fchmod(fd, 0o600)
            buf = text
            while buf:
                buf = buf[os.write(fd, buf):]
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if self.fd is not None:
            os.close(self.fd)
        self.fd = fd  # the file now at STATE: change lines are appended to it
        os.lseek(fd, 0, os.SEEK_END)
        self.snap, self.tail = len(text), 0
        self.dirty.clear()
        return True

    def begin(self):
        pass  # a request starts (EtcdStore forgets what the last one read)

    @staticmethod
    def key(res):
        return res.plural + ("." + res.group if res.group else "")

    def bucket(self, res):
        return self.data.setdefault(self.key(res), {})

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def get(self, res, ns, name):
        return self.bucket(res).get("%s/%s" % (ns or "", name))

    def list(self, res, ns=None):
        b = self.bucket(res)
        out = [o for k, o in b.items() if ns is None or k.split("/", 1)[0] == ns]
        out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return out

    def put(self, res, obj):
        """Store obj (also: mark an object changed in place for saving)."""
        md = obj["metadata"]
        i = "%s/%s" % (md.get("namespace", ""), md["name"])
        self.bucket(res)[i] = obj
        self.dirty.add((self.key(res), i))

    def remove(self, res, ns, name):
        i = "%s/%s" % (ns or "", name)
        self.dirty.add((self.key(res), i))
        return self.bucket(res).pop(i, None)


class EtcdError(Exception):
    """etcd did not do what was asked: the message is the one the real API
    server passes on (etcd's own, e.g. "etcdserver: request timed out")."""


class EtcdConflict(Exception):
    """A write whose compare failed: another API server changed the key
    since this request read it (the request is run again, as the real
    one's GuaranteedUpdate retries)."""


class Etcd:
    """etcd v3 through its JSON gateway (POST /v3/kv/range, txn, ...: etcd's
    grpc-gateway, base64 keys and values, int64 as strings), over HTTPS with
    --etcd-cafile/--etcd-certfile/--etcd-keyfile, one kept-alive connection,
    the next of --etcd-servers when a connection fails (clientv3 balances
    over the endpoints)."""

    def __init__(self, servers, ca, cert, key, timeout):
        self.eps = [urllib.parse.urlsplit(u.strip()) for u in servers.split(",") if u.strip()]
        self.ctx = ssl.create_default_context(cafile=ca or None)
        if cert:
            self.ctx.load_cert_chain(cert, key or None)
        self.timeout = timeout
        self.conn = None
        self.i = 0
        self.lock = threading.Lock()

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, path, body):
        data = json.dumps(body).encode()
        with self.lock:
            err = None
            for _ in range(len(self.eps) + 1):
                ep = self.eps[self.i]
                try:
                    if self.conn is None:
                        self.conn = http.client.HTTPSConnection(ep.hostname, ep.port or 2379, context=self.ctx,
                                                                timeout=self.timeout)
                    self.conn.request("POST", path, data, {"Content-Type": "application/json"})
                    r = self.conn.getresponse()
                    raw = r.read()
                except socket.timeout:
                    self.close()
                    raise EtcdError("context deadline exceeded") from None
                except (OSError, http.client.HTTPException) as e:
                    self.close()
                    self.i = (self.i + 1) % len(self.eps)
                    err = 'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp %s:%d: %s"' \
                        % (ep.hostname, ep.port or 2379, ("connect: " + e.strerror.lower()) if getattr(e, "strerror", None) else e)
                    continue
                try:
                    out = json.loads(raw or b"{}")
                except ValueError:
                    out = {}
                if r.status != 200:
                    raise EtcdError(out.get("message") or out.get("error") or "etcd answered HTTP %d" % r.status)
                return out
            raise EtcdError(err)


def b64s(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def prefix_end(p):
    """The end of etcd's range of keys that start with p."""
    b = bytearray(p.encode())
    b[-1] += 1
    return bytes(b)


class EtcdStore:
    """Every object in etcd (--etcd-servers), where the real API server keeps
    it: /registry/RESOURCE/NAMESPACE/NAME (nodes under minions, services
    under services/specs, custom resource definitions under their group),
    the object's JSON as the value (the real one writes protobuf for the
    built-in kinds), resourceVersion the key's mod_revision and a list's
    the header's revision.  Every get and list is a linearizable range (the
    real one's quorum reads), so API servers on several nodes answer from
    one state.  A write compares the key's mod_revision with what this
    request read (or that it did not exist) and raises EtcdConflict when
    another server changed it in between.  No watch: the stand-in API
    server serves none."""

    SPECIAL = {"nodes": "minions", "services": "services/specs", "endpoints": "services/endpoints",
               "ingresses": "ingress"}
    BUILTIN_GROUPS = ("", "apps", "batch", "policy") + tuple(r.group for r in RESOURCE_LIST if r.group.endswith(".k8s.io")
                                                               and r.group != "apiextensions.k8s.io")

    def __init__(self, etcd):
        self.etcd = etcd
        self.lock = threading.RLock()
        self.rv = 0
        self.seen = {}  # key: mod_revision this request read (0: absent)

    key = staticmethod(Store.key)

    def begin(self):
        """A request starts: what it read before is forgotten."""
        self.seen = {}

    def prefix(self, res):
        if res.group in self.BUILTIN_GROUPS:
            p = self.SPECIAL.get(res.plural, res.plural)
        else:
            p = res.group + "/" + res.plural
        return "/registry/" + p + "/"

    def path(self, res, ns, name):
        return self.prefix(res) + ("%s/" % ns if res.namespaced and ns else "") + name

    def decode(self, kv):
        o = json.loads(base64.b64decode(kv.get("value", "")))
        o.setdefault("metadata", {})["resourceVersion"] = kv["mod_revision"]
        self.seen[base64.b64decode(kv["key"]).decode()] = int(kv["mod_revision"])
        return o

    def note_rev(self, out):
        self.rv = max(self.rv, int(out.get("header", {}).get("revision", 0)))

    def get(self, res, ns, name):
        k = self.path(res, ns, name)
        out = self.etcd.call("/v3/kv/range", {"key": b64s(k)})
        self.note_rev(out)
        kvs = out.get("kvs") or []
        if not kvs:
            self.seen[k] = 0
            return None
        return self.decode(kvs[0])

    def list(self, res, ns=None):
        p = self.prefix(res) + ("%s/" % ns if res.namespaced and ns else "")
        out = self.etcd.call("/v3/kv/range", {"key": b64s(p), "range_end": b64s(prefix_end(p))})
        self.rv = int(out.get("header", {}).get("revision", 0))
        items = [self.decode(kv) for kv in out.get("kvs") or []]
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return items

    def txn(self, k, op):
        """op on key k if it is as this request read it (else absent)."""
        cmp_ = [{"key": b64s(k), "target": "MOD", "result": "EQUAL", "mod_revision": str(self.seen.get(k, 0))}]
        out = self.etcd.call("/v3/kv/txn", {"compare": cmp_, "success": [op]})
        if not out.get("succeeded"):
            raise EtcdConflict(k)
        rev = int(out.get("header", {}).get("revision", 0))
        self.rv = max(self.rv, rev)
        return rev

    def put(self, res, obj):
        md = obj["metadata"]
        k = self.path(res, md.get("namespace", ""), md["name"])
        stored = dict(obj, metadata={x: v for x, v in md.items() if x != "resourceVersion"})
        rev = self.txn(k, {"request_put": {"key": b64s(k), "value": b64s(json.dumps(stored))}})
        md["resourceVersion"] = str(rev)
        self.seen[k] = rev

    def remove(self, res, ns, name):
        k = self.path(res, ns, name)
        self.txn(k, {"request_delete_range": {"key": b64s(k)}})
        self.seen[k] = 0

    def next_rv(self):
        return str(self.rv + 1)  # a placeholder: put() sets the revision etcd gave

    def save(self, whole=False):
        pass  # etcd has it once the txn is answered

    def healthy(self, health):
        """The etcd check of /livez and /readyz: a range of /registry/health
        within --etcd-healthcheck-timeout (2 s), on a connection of its own."""
        try:
            health.call("/v3/kv/range", {"key": b64s("/registry/health")})
            return True
        except EtcdError:
            return False


class Authz:
    """Who may do what: see the header."""

    ANON_PATHS = ("/healthz", "/livez", "/readyz", "/version")

    @staticmethod
    def allowed(user, groups, verb, res, ns, name, sub):
        if "system:masters" in groups or "kubeadm:cluster-admins" in groups:
            return True
        if user in ("system:kube-controller-manager", "system:kube-scheduler"):
            return True
        key = res.plural if res else ""
        if "system:nodes" in groups and user.startswith("system:node:"):
            me = user[len("system:node:"):]
            if verb in ("get", "list"):
                return key != "secrets"
            if key == "nodes":
                return name in (me, None) and verb in ("create", "update", "patch")
            if key == "pods":
                return verb in ("create", "update", "patch", "delete")
            if key in ("certificatesigningrequests", "events", "leases"):
                return verb in ("create", "update", "patch")
            return False
        if "system:bootstrappers" in groups:
            if key == "certificatesigningrequests":
                return verb in ("create", "get", "list")
            if key == "nodes":
                return verb == "get"
            if key == "configmaps" and ns == "kube-system" and name in ("kubeadm-config", "kubelet-config"):
                return verb == "get"
            return False
        if key == "configmaps" and ns == "kube-public" and name == "cluster-info" and verb == "get":
            return True
        return False


class API:
    def __init__(self, flags):
        self.flags = flags
        self.health = None
        if flags.get("etcd-servers") and etcd_binary():
            ca, cert, key = flags.get("etcd-cafile"), flags.get("etcd-certfile"), flags.get("etcd-keyfile")
            try:
                self.store = EtcdStore(Etcd(flags["etcd-servers"], ca, cert, key, ETCD_TIMEOUT))
                self.health = Etcd(flags["etcd-servers"], ca, cert, key, ETCD_HEALTH_TIMEOUT)
            except (OSError, ssl.SSLError, ValueError) as e:
                die('E0000 run.go:74] "command failed" err="failed to load the etcd client certificate: %s"' % e)
            self.wait_for_etcd()
        else:
            self.store = Store(STATE)
        self.started = now()
        self.version = flags.get("fake-version") or FAKE_VERSION
        svc = flags.get("service-cluster-ip-range", "10.96.0.0/12").split(",")[0]
        self.svc_base = svc.split("/")[0]
        for _ in range(10):
            try:
                self.bootstrap(flags)
                break
            except EtcdConflict:
                continue  # another API server of the cluster made them at the same time
            except EtcdError as e:
                die('E0000 run.go:74] "command failed" err="%s"' % e)

    def wait_for_etcd(self):
        """The real API server dials etcd until --etcd-servers answers; it
        exits when it cannot within its storage start-up timeout (60 s)."""
        t0 = now()
        while True:
            try:
                self.health.call("/v3/kv/range", {"key": b64s("/registry/health")})
                return
            except EtcdError as e:
                if now() - t0 > ETCD_START_TIMEOUT:
                    die('E0000 run.go:74] "command failed" err="context deadline exceeded"')
                klog("W", "[core] grpc: addrConn.createTransport failed to connect to %s. Err: %s"
                     % (self.flags["etcd-servers"].split(",")[0], e))
                time.sleep(1)

    def bootstrap(self, flags):
        with self.store.lock:
            self.store.begin()
            for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
                if not self.store.get(resource_by_name("namespaces"), "", ns):
                    self.create(resource_by_name("namespaces"), None, {"metadata": {"name": ns}}, save=False)
            svcres = resource_by_name("services")
            if not self.store.get(svcres, "default", "kubernetes"):
                self.create(svcres, "default", {
                    "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
                    "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                        "targetPort": int(flags.get("secure-port", 6443))}],
                             "type": "ClusterIP"}}, save=False)
            self.store.save(whole=True)

    # ---- authentication

    def authenticate(self, peercert, auth_header):
        if auth_header:
            if not auth_header.startswith("Bearer "):
                return None
            tok = auth_header[7:].strip()
            m = TOKEN_RE.match(tok)
            if not m:
                return None
            sec = self.store.get(resource_by_name("secrets"), "kube-system", "bootstrap-token-" + m.group(1))
            if not sec or sec.get("type") != "bootstrap.kubernetes.io/token":
                return None
            d = {k: unb64(v) for k, v in (sec.get("data") or {}).items()}
            if d.get("token-secret") != m.group(2) or d.get("usage-bootstrap-authentication") != "true":
                return None
            if d.get("expiration") and parse_rfc3339(d["expiration"]) < now():
                return None
            groups = ["system:bootstrappers"] + [g for g in d.get("auth-extra-groups", "").split(",") if g]
            return "system:bootstrap:" + m.group(1), groups + ["system:authenticated"]
        if peercert:
            cn, orgs = "", []
            for rdn in peercert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        orgs.append(v)
            return cn, orgs + ["system:authenticated"]
        return "system:anonymous", ["system:unauthenticated"]

    def impersonate(self, user, groups, who):
        """Impersonate-User: cluster admins may be anyone; a node may be the
        service account of a pod bound to it (what the node authorizer lets
        a kubelet request tokens for: the fake has no service-account
        tokens, so the kubelet's image acts call the API this way)."""
        m = re.match(r"^system:serviceaccount:([^:]+):([^:]+)$", who)
        ok = "system:masters" in groups
        if not ok and m and "system:nodes" in groups and user.startswith("system:node:"):
            me = user[len("system:node:"):]
            with self.store.lock:
                ok = any((p.get("spec") or {}).get("nodeName") == me
                         and ((p.get("spec") or {}).get("serviceAccountName") or "default") == m.group(2)
                         for p in self.store.list(resource_by_name("pods"), m.group(1)))
        if not ok:
            raise HTTPFail(403, "Forbidden", 'users "%s" is forbidden: User "%s" cannot impersonate resource "users" in API group "" '
                           'at the cluster scope' % (who, user))
        if m:
            return who, ["system:serviceaccounts", "system:serviceaccounts:" + m.group(1), "system:authenticated"]
        return who, ["system:authenticated"]

    def rbac_allows(self, user, groups, verb, res, ns, sub):
        """RBAC: a ClusterRoleBinding (anywhere) or a RoleBinding (in ns) for
        this user, one of its groups or its service account, to a role with
        a rule for the verb on the resource ("*" matches all)."""
        rname = res.plural + ("/" + sub if sub else "")

        def subject(s):
            if s.get("kind") == "User":
                return s.get("name") == user
            if s.get("kind") == "Group":
                return s.get("name") in groups
            if s.get("kind") == "ServiceAccount":
                return user == "system:serviceaccount:%s:%s" % (s.get("namespace"), s.get("name"))
            return False

        def rule(r):
            return (("*" in (r.get("apiGroups") or [])) or res.group in (r.get("apiGroups") or [])) and \
                   (("*" in (r.get("resources") or [])) or rname in (r.get("resources") or [])) and \
                   (("*" in (r.get("verbs") or [])) or verb in (r.get("verbs") or []))

        with self.store.lock:
            binds = [(b, None) for b in self.store.list(resource_by_name("clusterrolebindings"))]
            if ns:
                binds += [(b, ns) for b in self.store.list(resource_by_name("rolebindings"), ns)]
            for b, bns in binds:
                if not any(subject(s) for s in b.get("subjects") or []):
                    continue
                ref = b.get("roleRef") or {}
                if ref.get("kind") == "ClusterRole":
                    role = self.store.get(resource_by_name("clusterroles"), "", ref.get("name"))
                else:
                    role = self.store.get(resource_by_name("roles"), bns, ref.get("name")) if bns else None
                if any(rule(r) for r in (role or {}).get("rules") or []):
                    return True
        return False

    # ---- objects

    def create(self, res, ns, obj, save=True, dry=False):
        obj = copy.deepcopy(obj)
        md = obj.setdefault("metadata", {})
        if not md.get("name"):
            if md.get("generateName"):
                md["name"] = md["generateName"] + "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
            else:
                raise HTTPFail(422, "Invalid", "%s \"\" is invalid: metadata.name: Required value: name or generateName is required" % res.kind)
        if res.namespaced:
            ns = ns or md.get("namespace") or "default"
            if md.get("namespace") and md["namespace"] != ns:
                raise HTTPFail(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
            md["namespace"] = ns
            nsobj = self.store.get(resource_by_name("namespaces"), "", ns)
            if not nsobj:
                raise HTTPFail(404, "NotFound", 'namespaces "%s" not found' % ns, {"name": ns, "kind": "namespaces"})
            if (nsobj.get("status") or {}).get("phase") == "Terminating":
                raise HTTPFail(403, "Forbidden", '%s "%s" is forbidden: unable to create new content in namespace %s because it is being terminated'
                               % (res.plural, md["name"], ns))
        else:
            md.pop("namespace", None)
        if self.store.get(res, ns if res.namespaced else "", md["name"]):
            raise HTTPFail(409, "AlreadyExists", '%s "%s" already exists' % (Store.key(res), md["name"]),
                           {"name": md["name"], "kind": res.plural})
        obj["apiVersion"] = res.api_version
        obj["kind"] = res.kind
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = rfc3339()
        md.pop("deletionTimestamp", None)
        if res.kind not in ("ConfigMap", "Secret", "Namespace", "Node", "Event", "Lease"):
            md["generation"] = 1
        self.defaults(res, obj)
        rcname = (obj.get("spec") or {}).get("runtimeClassName") if res.kind == "Pod" else None
        if rcname and not self.store.get(resource_by_name("runtimeclasses"), "", rcname):
            # the RuntimeClass admission plugin (on by default)
            raise HTTPFail(403, "Forbidden", 'pods "%s" is forbidden: pod rejected: RuntimeClass "%s" not found'
                           % (md["name"], rcname))
        if res.kind == "PersistentVolumeClaim" and not (obj.get("spec") or {}).get("storageClassName"):
            # the DefaultStorageClass admission plugin (on by default)
            for sc in self.store.list(resource_by_name("storageclasses")):
                if (sc["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true":
                    obj.setdefault("spec", {})["storageClassName"] = sc["metadata"]["name"]
                    break
        if dry:
            return obj
        md["resourceVersion"] = self.store.next_rv()
        self.store.put(res, obj)
        if res.kind == "Secret" and obj.get("type") == "bootstrap.kubernetes.io/token" and knob("record-tokens") is not None:
            d = obj.get("data") or {}
            try:
                line = "%s.%s\n" % (unb64(d.get("token-id", "")), unb64(d.get("token-secret", "")))
                os.makedirs(os.path.dirname(TOKEN_LOG), exist_ok=True)
                with open(TOKEN_LOG, "a", encoding="utf-8") as f:
                    f.write(line)
            except (OSError, ValueError):
                pass
        if save:
            self.store.save()
        return obj

    def defaults(self, res, obj):
        spec = obj.setdefault("spec", {}) if res.kind in ("Pod", "Service", "Node", "DaemonSet", "Deployment", "Namespace") else None
        if res.kind == "Namespace":
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif res.kind == "Pod":
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("enableServiceLinks", True)
            spec.setdefault("serviceAccountName", "default")
            tol = spec.setdefault("tolerations", [])
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
                if not any(t.get("key") == key and t.get("effect") == "NoExecute" for t in tol) and \
                        not any(t.get("operator") == "Exists" and not t.get("key") for t in tol):
                    tol.append({"effect": "NoExecute", "key": key, "operator": "Exists", "tolerationSeconds": 300})
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                c.setdefault("imagePullPolicy", "IfNotPresent")
                c.setdefault("terminationMessagePath", "/dev/termination-log")
                c.setdefault("terminationMessagePolicy", "File")
                c.setdefault("resources", {})
            st = obj.setdefault("status", {})
            st.setdefault("phase", "Pending")
            st.setdefault("qosClass", "BestEffort")
        elif res.kind == "Service":
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            if spec.get("clusterIP") in (None, ""):
                used = {(s.get("spec") or {}).get("clusterIP") for s in self.store.list(res)}
                base = [int(x) for x in self.svc_base.split(".")]
                if obj["metadata"]["name"] == "kubernetes" and obj["metadata"].get("namespace") == "default":
                    n = 1
                else:
                    n = 10 if obj["metadata"]["name"] == "kube-dns" else 100
                while True:
                    ip = "%d.%d.%d.%d" % (base[0], base[1], base[2] + n // 256, base[3] + n % 256)
                    if ip not in used:
                        break
                    n += 1
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
            obj.setdefault("status", {"loadBalancer": {}})
        elif res.kind in ("DaemonSet", "Deployment"):
            spec.setdefault("revisionHistoryLimit", 10)
            if res.kind == "Deployment":
                spec.setdefault("replicas", 1)
                spec.setdefault("progressDeadlineSeconds", 600)
                spec.setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
            else:
                spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}})
            obj.setdefault("status", {})
        elif res.kind == "Node":
            obj.setdefault("status", {})

    def replace(self, res, ns, name, obj, sub=None, patch=None, ctype=None, dry=False):
        ns = ns if res.namespaced else ""
        cur = self.store.get(res, ns, name)
        if not cur:
            raise not_found(res, name)
        if patch is not None:
            if "json-patch" in (ctype or ""):
                raise HTTPFail(415, "UnsupportedMediaType", "the fake API server takes merge patches only")
            new = merge_patch(cur, patch)
        else:
            new = copy.deepcopy(obj)
            want_rv = (new.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
                raise HTTPFail(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply your changes to the latest version and try again'
                               % (Store.key(res), name), {"name": name, "kind": res.plural})
        if sub == "status":
            out = copy.deepcopy(cur)
            out["status"] = new.get("status", {})
        elif sub is None:
            out = new
            if "status" in cur and res.kind not in ("ConfigMap", "Secret"):
                out["status"] = cur["status"] if patch is None or "status" not in patch else new.get("status")
        else:
            out = new
        md = out.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "name"):
            md[k] = cur["metadata"][k]
        if res.namespaced:
            md["namespace"] = ns
        if "deletionTimestamp" in cur["metadata"]:
            md["deletionTimestamp"] = cur["metadata"]["deletionTimestamp"]
        out["apiVersion"], out["kind"] = res.api_version, res.kind
        if sub is None and res.group == "apps" and res.kind in IMMUTABLE_SELECTOR:
            old_sel, new_sel = (cur.get("spec") or {}).get("selector"), (out.get("spec") or {}).get("selector")
            if not same_selector(old_sel, new_sel):
                body = "Invalid value: %s: field is immutable" % go_label_selector(new_sel)
                raise HTTPFail(422, "Invalid", '%s.%s "%s" is invalid: spec.selector: %s' % (res.kind, res.group, name, body),
                               {"name": name, "group": res.group, "kind": res.kind,
                                "causes": [{"reason": "FieldValueInvalid", "message": body, "field": "spec.selector"}]})
        if "generation" in cur["metadata"]:
            changed = json.dumps(cur.get("spec"), sort_keys=True) != json.dumps(out.get("spec"), sort_keys=True)
            md["generation"] = cur["metadata"]["generation"] + (1 if changed and sub is None else 0)
        strip_rv = dict(md)
        strip_rv.pop("resourceVersion", None)
        cur_md = dict(cur["metadata"])
        cur_md.pop("resourceVersion", None)
        unchanged = json.dumps({**out, "metadata": strip_rv}, sort_keys=True) == json.dumps({**cur, "metadata": cur_md}, sort_keys=True)
        if dry:
            return out
        if unchanged:
            md["resourceVersion"] = cur["metadata"]["resourceVersion"]
            return out
        md["resourceVersion"] = self.store.next_rv()
        self.store.put(res, out)
        self.store.save()
        return out

    def delete(self, res, ns, name, propagation=None):
        ns = ns if res.namespaced else ""
        if propagation not in (None, "Orphan", "Background", "Foreground"):
            raise HTTPFail(422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: %s: '
                           'supported values: "Foreground", "Background", "Orphan"' % go_string(propagation))
        cur = self.store.get(res, ns, name)
        if not cur:
            raise not_found(res, name)
        if propagation == "Orphan" and res.kind != "Namespace":
            uid = cur["metadata"]["uid"]
            for r in RESOURCE_LIST:
                if r.namespaced != res.namespaced:
                    continue
                for o in self.store.list(r, ns if res.namespaced else None):
                    refs = o["metadata"].get("ownerReferences") or []
                    keep = [x for x in refs if x.get("uid") != uid]
                    if len(keep) != len(refs):
                        if keep:
                            o["metadata"]["ownerReferences"] = keep
                        else:
                            o["metadata"].pop("ownerReferences", None)
                        o["metadata"]["resourceVersion"] = self.store.next_rv()
                        self.store.put(r, o)
        if res.kind == "Namespace":
            if name in ("default", "kube-system", "kube-public", "kube-node-lease"):
                raise HTTPFail(403, "Forbidden", 'namespaces "%s" is forbidden: this namespace may not be deleted' % name)
            if (cur.get("status") or {}).get("phase") == "Terminating":
                left = any(self.store.list(r, name) for r in RESOURCE_LIST if r.namespaced)
                if not left:
                    self.store.remove(res, "", name)
                    self.store.next_rv()  # a deletion is a revision, as in etcd
                    self.store.save()
                    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                            "details": {"name": name, "kind": res.plural, "uid": cur["metadata"]["uid"]}}
                return cur
            cur["metadata"]["deletionTimestamp"] = rfc3339()
            cur["status"] = {"phase": "Terminating"}
            cur["metadata"]["resourceVersion"] = self.store.next_rv()
            self.store.put(res, cur)
            self.store.save()
            return cur
        self.store.remove(res, ns, name)
        self.store.next_rv()  # a deletion is a revision, as in etcd
        self.store.save()
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "kind": res.plural, "uid": cur["metadata"]["uid"]}}

    def list(self, res, ns, query):
        items = self.store.list(res, ns if res.namespaced else None)
        lsel = parse_selector((query.get("labelSelector") or [""])[0])
        fsel = (query.get("fieldSelector") or [""])[0]
        out = []
        for o in items:
            if lsel and not selector_matches(lsel, o["metadata"].get("labels")):
                continue
            if fsel and not field_selector_matches(fsel, o):
                continue
            # a shallow copy: the answer is written out under the store's lock
            out.append({k: v for k, v in o.items() if k not in ("apiVersion", "kind")})
        return {"kind": res.kind + "List", "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(self.store.rv)}, "items": out}

    # ---- health

    def ready(self, verbose, which="readyz"):
        checks = ["ping", "log", "etcd"]
        if which == "readyz":
            checks += ["etcd-readiness", "informer-sync"]
        checks += ["poststarthook/start-apiserver-admission-initializer", "poststarthook/generic-apiserver-start-informers",
                   "poststarthook/rbac/bootstrap-roles", "poststarthook/bootstrap-controller"]
        failing = set()
        if which == "readyz" and knob("apiserver-readyz-fail") is not None:
            failing.add("etcd")
        if self.health is not None and not self.store.healthy(self.health):
            # etcd's check (every endpoint) and, for /readyz, etcd-readiness
            failing.update(("etcd", "etcd-readiness") if which == "readyz" else ("etcd",))
        if now() - self.started < 1.0:
            failing.add("poststarthook/rbac/bootstrap-roles")
        ok = not failing
        if not verbose and ok:
            return 200, "ok"
        lines = []
        for c in checks:
            if c in failing:
                lines.append("[-]%s failed: reason withheld" % c)
            else:
                lines.append("[+]%s ok" % c)
        lines.append("%s check %s" % (which, "passed" if ok else "failed"))
        return (200 if ok else 500), "\n".join(lines) + "\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    # TCP_NODELAY, as Go sets it on every TCP connection (net.TCPConn's
    # default): the headers and the body are two writes here, and without
    # it each response waited for the client's delayed ACK (~40 ms a
    # request measured, 0.3 ms with it)
    disable_nagle_algorithm = True
    api = None

    def log_message(self, fmt, *args):  # quiet, like the real server at -v=0
        pass

    def send(self, code, body, ctype="application/json"):
        data = (json.dumps(body) if not isinstance(body, (str, bytes)) else body)
        data = data.encode() if isinstance(data, str) else data
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        raw = self.raw_body
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            try:
                return yaml_load(raw.decode())
            except YAMLError as e:
                raise HTTPFail(400, "BadRequest", "the body of the request was in an unknown format: %s" % e) from e

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def handle_any(self, method):
        api = self.api
        # the whole request is read before any answer, so that a kept-alive
        # connection's next request starts where this one ends
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n, self.close_connection = 0, True
        self.raw_body = self.rfile.read(n) if n > 0 else b""
        u = urllib.parse.urlsplit(self.path)
        path = u.path.rstrip("/") or "/"
        query = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        try:
            who = api.authenticate(self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None,
                                   self.headers.get("Authorization"))
            if who is None:
                raise HTTPFail(401, "Unauthorized", "Unauthorized")
            user, groups = who
            if self.headers.get("Impersonate-User"):
                user, groups = api.impersonate(user, groups, self.headers["Impersonate-User"])
            if path in Authz.ANON_PATHS:
                if method != "GET":
                    raise HTTPFail(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
                if path == "/version":
                    return self.send(200, version_info(api.version))
                code, text = api.ready("verbose" in query, path[1:])
                return self.send(code, text, "text/plain; charset=utf-8")
            if path in ("/api", "/apis") or path == "/api/v1" or (path.startswith("/apis/") and path.count("/") <= 3):
                return self.discovery(path)
            self.resource(method, path, query, user, groups)
        except HTTPFail as e:
            self.send(e.code, e.body)
        except EtcdError as e:
            # a read outside a resource's request (authentication, RBAC)
            self.send(500, status_obj(500, "", str(e)))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def discovery(self, path):
        if path == "/api":
            return self.send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if path == "/apis":
            groups = sorted({r.group for r in RESOURCE_LIST if r.group})
            return self.send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}} for g in groups]})
        parts = path.split("/")
        group, version = ("", "v1") if path == "/api/v1" else (parts[2], parts[3] if len(parts) > 3 else "v1")
        rs = [r for r in RESOURCE_LIST if r.group == group and r.version == version]
        if not rs:
            raise HTTPFail(404, "NotFound", "the server could not find the requested resource")
        return self.send(200, {"kind": "APIResourceList", "apiVersion": "v1",
                               "groupVersion": (group + "/" if group else "") + version,
                               "resources": [{"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                                              "kind": r.kind, "shortNames": r.short,
                                              "verbs": ["create", "delete", "get", "list", "patch", "update"]} for r in rs]})

    def resource(self, method, path, query, user, groups):
        api = self.api
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 3 and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise HTTPFail(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        res = resource_by_path(group, version, plural)
        if res is None:
            raise HTTPFail(404, "NotFound", "the server could not find the requested resource")
        if not res.namespaced and ns is not None:
            raise HTTPFail(404, "NotFound", "the server could not find the requested resource")
        verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[method]
        if sub in ("binding", "eviction") and method == "POST":
            verb = "create"
        if not Authz.allowed(user, groups, verb, res, ns, name, sub) and not api.rbac_allows(user, groups, verb, res, ns, sub):
            scope = ('in the namespace "%s"' % ns) if ns else "at the cluster scope"
            target = '%s "%s" ' % (res.plural, name) if name else "%s " % res.plural
            raise HTTPFail(403, "Forbidden", '%sis forbidden: User "%s" cannot %s resource "%s%s" in API group "%s" %s'
                           % (target, user, verb, res.plural, "/" + sub if sub else "", group, scope),
                           {"name": name, "kind": res.plural} if name else {"kind": res.plural})
        for attempt in range(5):
            try:
                with api.store.lock:
                    api.store.begin()
                    return self.act(method, res, ns, name, sub, query, user, groups)
            except EtcdConflict:
                # another API server wrote the object since this request
                # read it: read it again and redo (the real GuaranteedUpdate)
                if attempt == 4:
                    raise HTTPFail(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                                   'please apply your changes to the latest version and try again'
                                   % (Store.key(res), name or ""), {"name": name or "", "kind": res.plural}) from None
            except EtcdError as e:
                # the real one's answer to a storage error it cannot interpret:
                # 500, reason unknown, etcd's message (kubectl: "Error from server: ...")
                raise HTTPFail(500, "", str(e)) from None

    def act(self, method, res, ns, name, sub, query, user, groups):
        api = self.api
        dry = "All" in (query.get("dryRun") or [])
        if method == "GET":
            if name:
                o = api.store.get(res, ns if res.namespaced else "", name)
                if not o:
                    raise not_found(res, name)
                return self.send(200, o)
            return self.send(200, api.list(res, ns, query))
        if method == "POST":
            body = self.body() or {}
            if sub == "binding" and res.kind == "Pod":
                pod = api.store.get(res, ns, name)
                if not pod:
                    raise not_found(res, name)
                if pod["spec"].get("nodeName"):
                    raise HTTPFail(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "%s": pod %s is already assigned to node "%s"'
                                   % (name, name, pod["spec"]["nodeName"]))
                node = ((body.get("target") or {}).get("name"))
                pod["spec"]["nodeName"] = node
                conds = [c for c in pod["status"].get("conditions", []) if c.get("type") != "PodScheduled"]
                conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                              "lastTransitionTime": rfc3339()})
                pod["status"]["conditions"] = conds
                pod["metadata"]["resourceVersion"] = api.store.next_rv()
                api.store.put(res, pod)
                api.store.save()
                return self.send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
            if sub == "eviction" and res.kind == "Pod":
                api.delete(res, ns, name)
                return self.send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
            if name:
                raise HTTPFail(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            if res.kind == "CertificateSigningRequest":
                body.setdefault("spec", {})["username"] = user
                body["spec"]["groups"] = groups
            o = api.create(res, ns, body, dry=dry)
            return self.send(201, o)
        if method in ("PUT", "PATCH"):
            body = self.body()
            if body is None:
                raise HTTPFail(400, "BadRequest", "the body of the request was empty")
            if method == "PUT":
                o = api.replace(res, ns, name, body, sub, dry=dry)
            else:
                o = api.replace(res, ns, name, None, sub, patch=body, ctype=self.headers.get("Content-Type"), dry=dry)
            return self.send(200, o)
        if method == "DELETE":
            if not name:
                raise HTTPFail(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            opts = self.body() or {}
            prop = opts.get("propagationPolicy") or (query.get("propagationPolicy") or [None])[0]
            return self.send(200, api.delete(res, ns, name, prop))
        raise HTTPFail(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


class TLSServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, ctx):
        self.ctx = ctx
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        try:
            request.settimeout(30)
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


def parse_flags(argv):
    flags = {}
    for a in argv:
        if a.startswith("--"):
            k, _, v = a[2:].partition("=")
            flags[k] = v if _ else "true"
    return flags


def main():
    flags = parse_flags(sys.argv[1:])
    image = os.environ.get("FAKE_IMAGE", "")
    if ":" in image:
        flags.setdefault("fake-version", image.rsplit(":", 1)[1].lstrip("v"))
    for f in ("tls-cert-file", "tls-private-key-file", "client-ca-file"):
        if not flags.get(f):
            die("E0000 run.go:74] \"command failed\" err=\"--%s is required for the fake API server\"" % f)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(flags["tls-cert-file"], flags["tls-private-key-file"])
        ctx.load_verify_locations(flags["client-ca-file"])
    except (OSError, ssl.SSLError) as e:
        die("E0000 run.go:74] \"command failed\" err=\"failed to load the serving certificate: %s\"" % e)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    port = int(flags.get("secure-port", 6443))
    bind = flags.get("bind-address", "0.0.0.0")
    Handler.api = API(flags)
    try:
        srv = TLSServer((bind, port), Handler, ctx)
    except OSError as e:
        die("E0000 run.go:74] \"command failed\" err=\"failed to create listener: failed to listen on %s:%d: listen tcp %s:%d: bind: %s\""
            % (bind, port, bind, port, (e.strerror or str(e)).lower()))
    klog("I", "Serving securely on " + "%s:%d" % ("[::]" if bind in ("0.0.0.0", "::") else bind, port))
    srv.serve_forever()


if __name__ == "__main__":
    main()
