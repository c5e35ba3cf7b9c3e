# kubectl (fake) for provision's tests.
#
# What it copies (kubernetes.io "kubectl reference" pages of each command,
# "JSONPath Support", "Managing Kubernetes Objects Using Declarative
# Configuration" (last-applied-configuration, created/configured/unchanged),
# "Organizing Cluster Access Using kubeconfig Files"):
#   - kubeconfig: --kubeconfig, else the first file of $KUBECONFIG, else
#     ~/.kube/config, else http://localhost:8080 (and "The connection to
#     the server localhost:8080 was refused - did you specify the right host
#     or port?"); -n/--namespace, -A/--all-namespaces, the context's
#     namespace, --request-timeout.
#   - get TYPE[/NAME] [NAME...] with -o json|yaml|wide|name|jsonpath=...,
#     -l, --field-selector, --no-headers, --ignore-not-found; get --raw PATH;
#     the tables of nodes, pods, daemonsets, deployments, services,
#     namespaces, configmaps, secrets and CSRs; -o json prints a single
#     object or {"apiVersion":"v1","items":[...],"kind":"List",
#     "metadata":{"resourceVersion":""}} with 4-space indentation and
#     sorted keys, as kubectl does.
#   - apply -f FILE|DIR|- (client-side: last-applied-configuration
#     annotation; "created", "configured", "unchanged"; --dry-run=client),
#     diff -f (exit 0 same, 1 different, 2 an error: a change the API
#     server's dry run refuses), create -f / create namespace,
#     delete (--cascade=background|foreground|orphan), label/annotate (--overwrite, KEY- removes), taint (KEY[=V]:EFFECT,
#     trailing - removes), wait (--for=condition=C[=V], --for=delete,
#     --for=jsonpath='{...}'=V, --timeout), version (--client, -o json|yaml),
#     cordon, uncordon, drain (--ignore-daemonsets, --delete-emptydir-data,
#     --force), cluster-info.
#   - the global flags --profile and --profile-output (see profiling()).
#   - the disk cache of discovery (~/.kube/cache/discovery/HOST_PORT,
#     ~/.kube/cache/http: fakekube.py kube_disk_cache) written by every
#     command that maps resources, as the real kubectl does (not by
#     `get --raw` or `version`).
#   - messages and exit codes: "Error from server (NotFound): nodes "x" not
#     found", "(Forbidden)", "(AlreadyExists)", "Unable to connect to the
#     server: ...", "error: the server doesn't have a resource type "x"",
#     "No resources found in NS namespace.", "error: timed out waiting for
#     the condition on nodes/x"; exit 1 on errors.

R = resource_by_name
KUSTOMIZE = "v5.0.4-0.20230601165947-6ce0bf390ce3"


class Fail(Exception):
    pass


def out(s=""):
    sys.stdout.write(s + "\n")


# ---------------------------------------------------------------- flags


# Which flags each command accepts is the real kubectl's table of the
# minor built (CLI_FLAGS, from tests/fakes/cli/kubectl-X.Y.Z.flags: "kubectl
# options" and "kubectl COMMAND --help" of the real binary; "create
# namespace" takes create's).  A flag outside the table gets what the real
# kubectl (v1.32.4 was compared) prints on standard error, exit 1, before
# any server contact:
#   Error: unknown flag: --all-namespaces
#   See 'kubectl drain --help' for usage.
# and a flag in front of the command that is not a global one:
#   Error: flags cannot be placed before plugin name: --all-namespaces
GLOBAL = {"kubeconfig": "str", "namespace": "str", "context": "str", "request-timeout": "str", "v": "str",
          "server": "str", "insecure-skip-tls-verify": "bool", "token": "str", "profile": "str",
          "profile-output": "str"}
SHORTS = {"n": "namespace", "A": "all-namespaces", "o": "output", "l": "selector", "f": "filename", "w": "watch",
          "v": "v", "s": "server"}
COMMAND = [None]  # the command main() runs ("get", "drain", ...)


def parse(argv, spec):
    spec = dict(GLOBAL, **spec)
    spec.setdefault("all-namespaces", "bool")
    flags, pos = pflag_parse(argv, cli_names(COMMAND[0]), spec, SHORTS)
    profiling(flags)
    return flags, pos


# --profile NAME / --profile-output FILE (default profile.pprof), global
# flags, acted on as kubectl v1.32.4 does (seen on the real binary): once
# the flags parsed, before the command runs and before any server contact,
# "cpu" creates (truncates) FILE, root's umask applied -- so a command that
# then fails (a refused connection, an invalid label value) leaves an empty
# FILE; the other profiles (heap, goroutine, threadcreate, block, mutex)
# write FILE when the command succeeds, nothing when it fails; "none" (the
# default) nothing; any other name, or a FILE that cannot be created: exit 1,
#   E1129 04:10:51.636023   11612 run.go:72] "command failed" err="unknown profile 'bogus'"
PROFILE_AT_END = [None]


def profiling(flags):
    name = flags.get("profile", "none")
    path = flags.get("profile-output", "profile.pprof")
    if name == "none":
        return
    if name not in ("cpu", "heap", "goroutine", "threadcreate", "block", "mutex"):
        raise Fail(klog_line("unknown profile '%s'" % name))
    if name != "cpu":
        PROFILE_AT_END[0] = path
        return
    try:
        with open(path, "wb"):
            pass
    except OSError as e:
        raise Fail(klog_line("open %s: %s" % (path, os.strerror(e.errno).lower()))) from e


def klog_line(err):
    t = time.time()
    return 'E%s.%06d %7d run.go:72] "command failed" err="%s"' % (
        time.strftime("%m%d %H:%M:%S", time.localtime(t)), int(t % 1 * 1e6), os.getpid(), err.replace('"', '\\"'))


# ---------------------------------------------------------------- connection


class Ctx:
    def __init__(self, flags):
        self.flags = flags
        path = flags.get("kubeconfig")
        if not path:
            env = os.environ.get("KUBECONFIG", "")
            for p in env.split(":"):
                if p and os.path.exists(p):
                    path = p
                    break
        if not path:
            p = os.path.join(os.path.expanduser("~"), ".kube", "config")
            if os.path.exists(p):
                path = p
        self.kc = None
        if path:
            try:
                self.kc = load_kubeconfig(path, flags.get("context"))
            except KubeconfigError as e:
                raise Fail("error: %s" % e) from e
        timeout = parse_duration(flags.get("request-timeout", "0")) or 32.0
        if self.kc:
            self.client = Client(flags.get("server") or self.kc["server"], self.kc["ca"], self.kc["cert"], self.kc["key"],
                                 flags.get("token") or self.kc["token"], flags.get("insecure-skip-tls-verify") or self.kc["insecure"],
                                 timeout=timeout)
        else:
            self.client = Client(flags.get("server") or "http://localhost:8080", token=flags.get("token"),
                                 insecure=flags.get("insecure-skip-tls-verify", False), timeout=timeout)
        self.ns = flags.get("namespace") or (self.kc or {}).get("namespace") or "default"
        self.all_ns = flags.get("all-namespaces", False)
        self.cached = False

    def call(self, method, path, body=None, ctype="application/json", query=None):
        # a command that maps resources does discovery first, through the
        # disk cache (fakekube.py kube_disk_cache): ~/.kube/cache, even when
        # the call then fails (not when the server cannot be reached)
        try:
            return self.client.call(method, path, body, ctype, query)
        except ConnError as e:
            self.cached = True
            raise Fail(conn_message(self.client, e)) from e
        finally:
            if not self.cached and not path.startswith("/version"):
                self.cached = True
                kube_disk_cache(self.client)

    def get(self, path, query=None):
        return self.call("GET", path, query=query)


def conn_message(client, e):
    if e.kind == "refused":
        return "The connection to the server %s was refused - did you specify the right host or port?" % client.hostport()
    return "Unable to connect to the server: %s" % e


def api_error(e):
    # An Invalid Status with details is printed from its details, as
    # kubectl's cmdutil.CheckErr does: 'The KIND "NAME" is invalid: FIELD:
    # MESSAGE' for one cause, the causes as "* " lines for more.
    reason = e.reason or "Unknown"
    det = e.status.get("details") or {}
    if reason == "Invalid" and (det.get("kind") or det.get("name")):
        head = 'The %s "%s" is invalid' % (det.get("kind", ""), det.get("name", ""))
        causes = ["%s: %s" % (c.get("field", ""), c.get("message", "")) for c in det.get("causes") or []]
        if len(causes) == 1:
            return "%s: %s" % (head, causes[0])
        if causes:
            return "%s: \n%s" % (head, "\n".join("* " + c for c in causes))
        return head
    return "Error from server (%s): %s" % (reason, e)


# ---------------------------------------------------------------- resources and names


def resolve(tok):
    res = R(tok)
    if res is None:
        raise Fail('error: the server doesn\'t have a resource type "%s"' % tok)
    return res


def targets(pos):
    """TYPE NAME..., TYPE/NAME ..., or TYPE -> [(res, name|None)]."""
    if not pos:
        raise Fail("error: You must specify the type of resource to get. Use \"kubectl api-resources\" for a complete list "
                   "of supported resources.")
    if "/" in pos[0]:
        out_ = []
        for p in pos:
            t, _, n = p.partition("/")
            if not n:
                raise Fail("error: arguments in resource/name form must have a single resource and name")
            out_.append((resolve(t), n))
        return out_
    res = [resolve(t) for t in pos[0].split(",")]
    if len(pos) == 1:
        return [(r, None) for r in res]
    return [(res[0], n) for n in pos[1:]]


def with_kind(res, obj):
    obj = dict(obj)
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    return obj


def qname(res, obj_or_name):
    name = obj_or_name if isinstance(obj_or_name, str) else obj_or_name["metadata"]["name"]
    return "%s/%s" % (res.qualified, name)


def fetch(ctx, res, name, sel=None, fsel=None):
    ns = None if not res.namespaced else (None if ctx.all_ns and not name else ctx.ns)
    q = {}
    if sel:
        q["labelSelector"] = sel
    if fsel:
        q["fieldSelector"] = fsel
    try:
        if name:
            return [with_kind(res, ctx.get(res.path(ns, name)))]
        return [with_kind(res, o) for o in ctx.get(res.path(ns), q or None)["items"]]
    except APIError as e:
        raise Fail(api_error(e)) from e


# ---------------------------------------------------------------- JSONPath


class JPError(Exception):
    pass


def jp_parse_path(expr):
    """'.items[*].metadata.name' -> list of steps."""
    steps = []
    i = 0
    s = expr.strip()
    if s.startswith("$"):
        i = 1
    while i < len(s):
        c = s[i]
        if c == ".":
            if s[i:i + 2] == "..":
                raise JPError("recursive descent is not supported by this fake")
            m = re.match(r"\.((?:[A-Za-z0-9_\-/]|\\\.)+|\*)", s[i:])
            if not m:
                if i == len(s) - 1:
                    i += 1
                    continue
                raise JPError("unrecognized character in action: %r" % s[i:])
            steps.append(("key", m.group(1).replace("\\.", ".")))
            i += m.end()
        elif c == "[":
            j = s.index("]", i) if not s[i:].startswith("[?(") else s.index(")]", i) + 1
            inner = s[i + 1:j]
            i = j + 1
            if inner == "*":
                steps.append(("all", None))
            elif inner.startswith("?("):
                m = re.match(r"^\?\(@\.([A-Za-z0-9_.\-]+)\s*(==|!=)\s*(?:\"([^\"]*)\"|'([^']*)'|([^)\s]+))\s*\)$", inner)
                if not m:
                    raise JPError("unsupported filter %s" % inner)
                val = m.group(3) if m.group(3) is not None else (m.group(4) if m.group(4) is not None else m.group(5))
                steps.append(("filter", (m.group(1), m.group(2), val)))
            elif re.match(r"^-?\d+$", inner):
                steps.append(("index", int(inner)))
            elif re.match(r"^-?\d*:-?\d*$", inner):
                a, b = inner.split(":")
                steps.append(("slice", (int(a) if a else None, int(b) if b else None)))
            elif inner[:1] in "'\"":
                steps.append(("key", inner[1:-1]))
            else:
                raise JPError("invalid array index %s" % inner)
        else:
            m = re.match(r"([A-Za-z0-9_\-]+)", s[i:])
            if not m:
                raise JPError("unrecognized character in action: %r" % s[i:])
            steps.append(("key", m.group(1)))
            i += m.end()
    return steps


def jp_eval(steps, nodes):
    for kind, arg in steps:
        nxt = []
        for n in nodes:
            if kind == "key":
                if arg == "*":
                    if isinstance(n, dict):
                        nxt.extend(n.values())
                    elif isinstance(n, list):
                        nxt.extend(n)
                elif isinstance(n, dict) and arg in n:
                    nxt.append(n[arg])
            elif kind == "all":
                if isinstance(n, list):
                    nxt.extend(n)
                elif isinstance(n, dict):
                    nxt.extend(n.values())
            elif kind == "index":
                if isinstance(n, list) and -len(n) <= arg < len(n):
                    nxt.append(n[arg])
            elif kind == "slice":
                if isinstance(n, list):
                    nxt.extend(n[arg[0]:arg[1]])
            elif kind == "filter":
                if isinstance(n, list):
                    for e in n:
                        v = get_path(e, arg[0]) if isinstance(e, dict) else None
                        sv = json.dumps(v) if isinstance(v, bool) else ("" if v is None else str(v))
                        if (arg[1] == "==") == (sv == arg[2]):
                            if arg[1] == "==" and v is None:
                                continue
                            nxt.append(e)
        nodes = nxt
    return nodes


def jp_str(v):
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    return str(v)


def jp_tokens(template):
    toks = []
    i = 0
    while i < len(template):
        j = template.find("{", i)
        if j < 0:
            toks.append(("text", template[i:]))
            break
        if j > i:
            toks.append(("text", template[i:j]))
        depth, k, q = 0, j, None
        while k < len(template):
            ch = template[k]
            if q:
                if ch == q:
                    q = None
            elif ch in "\"'":
                q = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        if k >= len(template):
            raise JPError("unclosed action")
        toks.append(("expr", template[j + 1:k].strip()))
        i = k + 1
    return toks


def jsonpath(template, data):
    toks = jp_tokens(template)
    outp = []

    def run(toks, cur):
        i = 0
        while i < len(toks):
            kind, v = toks[i]
            if kind == "text":
                outp.append(v)
            elif v.startswith("range "):
                depth, j = 1, i + 1
                while j < len(toks):
                    if toks[j][0] == "expr" and toks[j][1].startswith("range "):
                        depth += 1
                    elif toks[j] == ("expr", "end"):
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                body = toks[i + 1:j]
                for item in jp_eval(jp_parse_path(v[6:]), [cur]):
                    run(body, item)
                i = j
            elif v == "end":
                pass
            elif v[:1] in "\"'":
                lit = v[1:-1]
                outp.append(lit.encode().decode("unicode_escape") if "\\" in lit else lit)
            else:
                vals = jp_eval(jp_parse_path(v if v.startswith((".", "[", "$")) else "." + v), [cur])
                outp.append(" ".join(jp_str(x) for x in vals))
            i += 1

    run(toks, data)
    return "".join(outp)


# ---------------------------------------------------------------- printing


def age(obj):
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    return human_age(now() - parse_rfc3339(ts)) if ts else "<unknown>"


def node_row(n, wide):
    labels = n["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
    ready = next((c for c in (n.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    st = "Ready" if ready and ready["status"] == "True" else ("Unknown" if ready and ready["status"] == "Unknown" else "NotReady")
    if (n.get("spec") or {}).get("unschedulable"):
        st += ",SchedulingDisabled"
    info = (n.get("status") or {}).get("nodeInfo") or {}
    row = [n["metadata"]["name"], st, ",".join(roles), age(n), info.get("kubeletVersion", "")]
    if wide:
        addrs = {a["type"]: a["address"] for a in (n.get("status") or {}).get("addresses") or []}
        row += [addrs.get("InternalIP", "<none>"), addrs.get("ExternalIP", "<none>"), info.get("osImage", ""),
                info.get("kernelVersion", ""), info.get("containerRuntimeVersion", "")]
    return row


def pod_status_text(p):
    st = p.get("status") or {}
    if p["metadata"].get("deletionTimestamp"):
        return "Terminating"
    inits = st.get("initContainerStatuses") or []
    total_init = len((p.get("spec") or {}).get("initContainers") or [])
    for i, s in enumerate(inits):
        state = s.get("state") or {}
        if "terminated" in state and state["terminated"].get("exitCode") == 0:
            continue
        if "waiting" in state and state["waiting"].get("reason") not in (None, "PodInitializing"):
            return "Init:" + state["waiting"]["reason"]
        return "Init:%d/%d" % (i, total_init)
    reason = st.get("phase", "Pending")
    for s in st.get("containerStatuses") or []:
        state = s.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            reason = state["terminated"].get("reason", "Error")
    return reason


def pod_row(p, wide, with_ns):
    st = p.get("status") or {}
    cs = st.get("containerStatuses") or []
    n = len((p.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(c.get("restartCount", 0) for c in cs)
    rtext = str(restarts)
    last = [c.get("lastState", {}).get("terminated", {}).get("finishedAt") for c in cs]
    last = [x for x in last if x]
    if restarts and last:
        rtext = "%d (%s ago)" % (restarts, human_age(now() - parse_rfc3339(max(last))))
    row = ([p["metadata"]["namespace"]] if with_ns else []) + [p["metadata"]["name"], "%d/%d" % (ready, n),
                                                              pod_status_text(p), rtext, age(p)]
    if wide:
        row += [st.get("podIP", "<none>"), (p.get("spec") or {}).get("nodeName") or "<none>", "<none>", "<none>"]
    return row


def table(res, objs, wide, with_ns, no_headers):
    k = res.kind
    if k == "Node":
        head = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"] + (["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                                                               "CONTAINER-RUNTIME"] if wide else [])
        rows = [node_row(o, wide) for o in objs]
    elif k == "Pod":
        head = (["NAMESPACE"] if with_ns else []) + ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] + \
            (["IP", "NODE", "NOMINATED NODE", "READINESS GATES"] if wide else [])
        rows = [pod_row(o, wide, with_ns) for o in objs]
    else:
        if k == "DaemonSet":
            head = ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]

            def f(o):
                s = o.get("status") or {}
                sel = ((o.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
                return [o["metadata"]["name"]] + [str(s.get(x, 0)) for x in ("desiredNumberScheduled", "currentNumberScheduled",
                                                                              "numberReady", "updatedNumberScheduled",
                                                                              "numberAvailable")] + \
                    [",".join("%s=%s" % kv for kv in sorted(sel.items())) or "<none>", age(o)]
        elif k == "Deployment":
            head = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]

            def f(o):
                s = o.get("status") or {}
                return [o["metadata"]["name"], "%d/%d" % (s.get("readyReplicas", 0), (o.get("spec") or {}).get("replicas", 1)),
                        str(s.get("updatedReplicas", 0)), str(s.get("availableReplicas", 0)), age(o)]
        elif k == "Service":
            head = ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]

            def f(o):
                sp = o.get("spec") or {}
                ports = ",".join("%s/%s" % (p.get("port"), p.get("protocol", "TCP")) for p in sp.get("ports") or [])
                return [o["metadata"]["name"], sp.get("type", "ClusterIP"), sp.get("clusterIP", "<none>"), "<none>",
                        ports or "<none>", age(o)]
        elif k == "Namespace":
            head = ["NAME", "STATUS", "AGE"]

            def f(o):
                return [o["metadata"]["name"], (o.get("status") or {}).get("phase", "Active"), age(o)]
        elif k == "ConfigMap":
            head = ["NAME", "DATA", "AGE"]

            def f(o):
                return [o["metadata"]["name"], str(len(o.get("data") or {})), age(o)]
        elif k == "Secret":
            head = ["NAME", "TYPE", "DATA", "AGE"]

            def f(o):
                return [o["metadata"]["name"], o.get("type", "Opaque"), str(len(o.get("data") or {})), age(o)]
        elif k == "CertificateSigningRequest":
            head = ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]

            def f(o):
                sp, st = o.get("spec") or {}, o.get("status") or {}
                conds = [c["type"] for c in st.get("conditions") or []]
                if st.get("certificate"):
                    conds.append("Issued")
                return [o["metadata"]["name"], age(o), sp.get("signerName", ""), sp.get("username", ""), "<none>",
                        ",".join(conds) or "Pending"]
        else:
            head = ["NAME", "AGE"]

            def f(o):
                return [o["metadata"]["name"], age(o)]
        if with_ns and res.namespaced:
            head = ["NAMESPACE"] + head
            rows = [[o["metadata"].get("namespace", "")] + f(o) for o in objs]
        else:
            rows = [f(o) for o in objs]
    allrows = rows if no_headers else [head] + rows
    if not allrows:
        return
    widths = [max(len(r[i]) for r in allrows) for i in range(len(allrows[0]))]
    for r in allrows:
        out("".join(r[i].ljust(widths[i] + 3) if i < len(r) - 1 else r[i] for i in range(len(r))).rstrip())


def print_objs(ctx, res, objs, fmt, single, no_headers=False):
    fmt = fmt or ""
    if fmt in ("json", "yaml"):
        data = objs[0] if single and len(objs) == 1 else {"apiVersion": "v1", "items": objs, "kind": "List",
                                                            "metadata": {"resourceVersion": ""}}
        sys.stdout.write(kjson(data) if fmt == "json" else yaml_dump(data))
    elif fmt.startswith("jsonpath=") or fmt.startswith("jsonpath:"):
        data = objs[0] if single and len(objs) == 1 else {"apiVersion": "v1", "items": objs, "kind": "List",
                                                            "metadata": {"resourceVersion": ""}}
        try:
            sys.stdout.write(jsonpath(fmt[9:].strip("'"), data))
        except JPError as e:
            raise Fail("error: error parsing jsonpath %s, %s" % (fmt[9:], e)) from e
    elif fmt == "name":
        for o in objs:
            out(qname(res, o))
    elif fmt in ("", "wide"):
        table(res, objs, fmt == "wide", ctx.all_ns and res.namespaced, no_headers)
    else:
        raise Fail('error: unable to match a printer suitable for the output format "%s", allowed formats are: '
                   "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,"
                   "jsonpath-file,name,template,templatefile,wide,yaml" % fmt)


# ---------------------------------------------------------------- commands


def cmd_get(argv):
    flags, pos = parse(argv, {"output": "str", "selector": "str", "field-selector": "str", "raw": "str",
                              "no-headers": "bool", "ignore-not-found": "bool", "show-labels": "bool", "watch": "bool",
                              "chunk-size": "str", "show-managed-fields": "bool"})
    ctx = Ctx(flags)
    if flags.get("raw"):
        try:
            status, body = ctx.client.raw("GET", flags["raw"])
        except ConnError as e:
            raise Fail(conn_message(ctx.client, e)) from e
        text = body.decode(errors="replace")
        if status >= 400:
            try:
                st = json.loads(text)
                raise Fail("Error from server (%s): %s" % (st.get("reason", "Unknown"), st.get("message", text)))
            except ValueError:
                reason = {500: "InternalServerError", 503: "ServiceUnavailable", 404: "NotFound", 403: "Forbidden",
                          401: "Unauthorized"}.get(status, "Unknown")
                raise Fail('Error from server (%s): an error on the server ("%s") has prevented the request from succeeding'
                           % (reason, text.replace("\n", "\\n")))
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return 0
    objs_all = []
    single = False
    tg = targets(pos)
    res0 = tg[0][0]
    missing = []
    for res, name in tg:
        if name:
            single = len(tg) == 1
            try:
                objs_all.extend(fetch(ctx, res, name))
            except Fail as e:
                if flags.get("ignore-not-found") and "(NotFound)" in str(e):
                    continue
                missing.append(str(e))
        else:
            objs_all.extend(fetch(ctx, res, None, flags.get("selector"), flags.get("field-selector")))
    fmt = flags.get("output", "")
    if objs_all or fmt in ("json", "yaml"):
        if len({o["kind"] for o in objs_all}) > 1 and fmt in ("", "wide"):
            for res, _ in tg:
                sub = [o for o in objs_all if o["kind"] == res.kind]
                if sub:
                    print_objs(ctx, res, sub, fmt, False, flags.get("no-headers"))
        else:
            print_objs(ctx, res0, objs_all, fmt, single, flags.get("no-headers"))
    elif not missing and not any(n for _, n in tg):
        if res0.namespaced and not ctx.all_ns:
            sys.stderr.write("No resources found in %s namespace.\n" % ctx.ns)
        else:
            sys.stderr.write("No resources found\n")
    if missing:
        raise Fail("\n".join(missing))
    return 0


def read_manifests(paths, ctx_ns):
    docs = []
    for p in paths:
        if p == "-":
            text = sys.stdin.read()
            srcs = [("-", text)]
        elif os.path.isdir(p):
            srcs = [(os.path.join(p, f), read_file(os.path.join(p, f))) for f in sorted(os.listdir(p))
                    if f.endswith((".yaml", ".yml", ".json"))]
        else:
            try:
                srcs = [(p, read_file(p))]
            except OSError as e:
                raise Fail('error: the path "%s" does not exist' % p) from e
        for src, text in srcs:
            try:
                loaded = [json.loads(text)] if text.lstrip().startswith("{") else yaml_load_all(text)
            except (ValueError, YAMLError) as e:
                raise Fail('error: error parsing %s: %s' % (src, e)) from e
            for d in loaded:
                if not isinstance(d, dict):
                    continue
                if d.get("kind") == "List":
                    docs.extend((src, x) for x in d.get("items") or [])
                else:
                    docs.append((src, d))
    out_ = []
    for src, d in docs:
        av, kind = d.get("apiVersion", ""), d.get("kind", "")
        if not av or not kind:
            raise Fail('error: error validating "%s": error validating data: [apiVersion not set, kind not set]; if you choose '
                       "to ignore these errors, turn validation off with --validate=false" % src)
        res = resource_for_kind(av, kind)
        if res is None:
            raise Fail('error: resource mapping not found for name: "%s" namespace: "%s" from "%s": no matches for kind "%s" in '
                       'version "%s"\nensure CRDs are installed first' % ((d.get("metadata") or {}).get("name", ""),
                                                                         (d.get("metadata") or {}).get("namespace", ""), src,
                                                                         kind, av))
        ns = ((d.get("metadata") or {}).get("namespace") or ctx_ns) if res.namespaced else None
        out_.append((res, ns, d))
    return out_


LAST = "kubectl.kubernetes.io/last-applied-configuration"


def applied(doc):
    d = json.loads(json.dumps(doc))
    ann = (d.get("metadata") or {}).get("annotations") or {}
    ann.pop(LAST, None)
    return json.dumps(d, separators=(",", ":"), sort_keys=True)


def three_way(last, new, live):
    """The merge patch client-side apply sends: new values, and null for
    what the last applied configuration had and the new one drops."""
    if not isinstance(new, dict):
        return new
    patch = {}
    last = last if isinstance(last, dict) else {}
    live = live if isinstance(live, dict) else {}
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(live.get(k), dict):
            sub = three_way(last.get(k), v, live.get(k))
            if sub != {}:
                patch[k] = sub
        elif live.get(k) != v:
            patch[k] = v
    for k in last:
        if k not in new and k in live:
            patch[k] = None
    return patch


def cmd_apply(argv, create_only=False):
    flags, pos = parse(argv, {"filename": "list", "dry-run": "str", "output": "str", "validate": "str",
                              "server-side": "bool", "force-conflicts": "bool", "prune": "bool", "selector": "str",
                              "recursive": "bool", "save-config": "bool"})
    ctx = Ctx(flags)
    if create_only and pos and pos[0] in ("namespace", "ns"):
        if len(pos) < 2:
            raise Fail("error: exactly one NAME is required, got 0")
        try:
            ctx.call("POST", R("namespaces").path(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": pos[1]}})
        except APIError as e:
            raise Fail(api_error(e)) from e
        out("namespace/%s created" % pos[1])
        return 0
    if not flags.get("filename"):
        raise Fail("error: must specify one of -f and -k")
    dry = flags.get("dry-run", "none")
    rc = 0
    for res, ns, doc in read_manifests(flags["filename"], ctx.ns):
        doc = json.loads(json.dumps(doc))
        name = (doc.get("metadata") or {}).get("name")
        if ns and res.namespaced:
            doc["metadata"]["namespace"] = ns
        last = applied(doc)
        suffix = " (dry run)" if dry == "client" else (" (server dry run)" if dry == "server" else "")
        try:
            try:
                live = ctx.get(res.path(ns, name))
            except APIError as e:
                if e.code != 404:
                    raise
                live = None
            if live is None:
                body = json.loads(json.dumps(doc))
                if not create_only:
                    body.setdefault("metadata", {}).setdefault("annotations", {})[LAST] = last + "\n"
                if dry != "client":
                    ctx.call("POST", res.path(ns), body, query={"dryRun": "All"} if dry == "server" else None)
                out("%s created%s" % (qname(res, name), suffix))
                continue
            if create_only:
                raise APIError(409, {"reason": "AlreadyExists", "message": '%s "%s" already exists' % (
                    res.plural + ("." + res.group if res.group else ""), name)})
            prev = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST, "").strip()
            if prev == last:
                out("%s unchanged%s" % (qname(res, name), suffix))
                continue
            prev_obj = json.loads(prev) if prev else {}
            patch = three_way(prev_obj, doc, live)
            patch.setdefault("metadata", {}).setdefault("annotations", {})[LAST] = last + "\n"
            if dry != "client":
                ctx.call("PATCH", res.path(ns, name), patch, "application/merge-patch+json",
                         query={"dryRun": "All"} if dry == "server" else None)
            out("%s configured%s" % (qname(res, name), suffix))
        except APIError as e:
            sys.stderr.write(api_error(e) + "\n")
            rc = 1
    return rc


def normalize(o):
    o = json.loads(json.dumps(o))
    md = o.get("metadata") or {}
    for k in ("resourceVersion", "generation", "uid", "creationTimestamp", "managedFields"):
        md.pop(k, None)
    ann = md.get("annotations") or {}
    ann.pop(LAST, None)
    if not ann:
        md.pop("annotations", None)
    o.pop("status", None)
    return o


def cmd_diff(argv):
    # kubectl diff's exit status: 0 the same, 1 differences, >1 an error
    # (kubectl diff --help): every error here exits 2.
    try:
        return diff_objects(argv)
    except Fail as e:
        sys.stderr.write(str(e).rstrip("\n") + "\n")
    except APIError as e:
        sys.stderr.write(api_error(e) + "\n")
    except ConnError as e:
        sys.stderr.write("Unable to connect to the server: %s\n" % e)
    return 2


def diff_objects(argv):
    import difflib
    flags, pos = parse(argv, {"filename": "list", "server-side": "bool", "force-conflicts": "bool"})
    ctx = Ctx(flags)
    if not flags.get("filename"):
        raise Fail("error: must specify one of -f and -k")
    differs = False
    diffs = []  # printed once every object was compared: an error prints none (like kubectl's temp dirs)
    for res, ns, doc in read_manifests(flags["filename"], ctx.ns):
        name = doc["metadata"]["name"]
        try:
            live = ctx.get(res.path(ns, name))
        except APIError as e:
            if e.code != 404:
                raise Fail(api_error(e)) from e
            live = None
        if ns and res.namespaced:
            doc.setdefault("metadata", {})["namespace"] = ns
        if live is None:
            # Like the real kubectl: a new object is created as a server-side
            # dry run, which nothing persists -- so a Namespace of the same
            # manifest does not exist for the objects after it, and the API
            # server answers NotFound: namespaces "NS" not found (exit 2).
            try:
                ctx.call("POST", res.path(ns), json.loads(json.dumps(doc)), query={"dryRun": "All"})
            except APIError as e:
                raise Fail(api_error(e)) from e
            merged, before = normalize(doc), None
        else:
            prev = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST, "").strip()
            patch = three_way(json.loads(prev) if prev else {}, doc, live)
            # the real kubectl diff patches the live object as a server-side
            # dry run: what the API server refuses (an immutable field) is
            # an error, exit 2, not a difference
            try:
                ctx.call("PATCH", res.path(ns, name), patch, "application/merge-patch+json", query={"dryRun": "All"})
            except APIError as e:
                raise Fail(api_error(e)) from e
            merged = normalize(merge_patch_local(live, patch))
            before = normalize(live)
        a = yaml_dump(before).splitlines(True) if before is not None else []
        b = yaml_dump(merged).splitlines(True)
        if a != b:
            differs = True
            label = "%s.%s.%s.%s" % (res.group + "." if res.group else "", res.version, res.kind, (ns + "." if ns else "") + name)
            diffs.extend(difflib.unified_diff(a, b, "/tmp/LIVE/" + label, "/tmp/MERGED/" + label))
    sys.stdout.writelines(diffs)
    return 1 if differs else 0


def merge_patch_local(target, patch):
    if not isinstance(patch, dict):
        return patch
    out_ = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out_.pop(k, None)
        else:
            out_[k] = merge_patch_local(out_.get(k), v)
    return out_


def cmd_delete(argv):
    flags, pos = parse(argv, {"filename": "list", "ignore-not-found": "bool", "wait": "bool", "selector": "str",
                              "all": "bool", "force": "bool", "grace-period": "int", "now": "bool", "timeout": "dur",
                              "cascade": "opt:background"})
    # --cascade (kubectl's GetCascadingStrategy): background (the default),
    # foreground, orphan, or a deprecated boolean (true: background,
    # false: orphan); sent as DeleteOptions.propagationPolicy
    cascade = flags.get("cascade", "background")
    if cascade in GO_BOOLS:
        cascade = "background" if GO_BOOLS[cascade] else "orphan"
    if cascade not in ("background", "foreground", "orphan"):
        raise Fail('error: invalid cascade value (%s). Must be "background", "foreground", or "orphan"' % cascade)
    opts = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": cascade.capitalize()}
    ctx = Ctx(flags)
    items = []
    if flags.get("filename"):
        items = [(res, ns, d["metadata"]["name"]) for res, ns, d in read_manifests(flags["filename"], ctx.ns)]
    else:
        for res, name in targets(pos):
            if name:
                items.append((res, ctx.ns if res.namespaced else None, name))
            elif flags.get("selector") or flags.get("all"):
                for o in fetch(ctx, res, None, flags.get("selector")):
                    items.append((res, o["metadata"].get("namespace"), o["metadata"]["name"]))
            else:
                raise Fail("error: resource(s) were provided, but no name was specified")
    rc = 0
    for res, ns, name in items:
        try:
            ctx.call("DELETE", res.path(ns, name), opts)
            out('%s "%s" deleted' % (res.qualified, name))
        except APIError as e:
            if e.code == 404 and flags.get("ignore-not-found"):
                continue
            sys.stderr.write(api_error(e) + "\n")
            rc = 1
    return rc


def cmd_label(argv, field="labels", verb="labeled"):
    flags, pos = parse(argv, {"overwrite": "bool", "selector": "str", "all": "bool", "dry-run": "str", "list": "bool",
                              "resource-version": "str"})
    ctx = Ctx(flags)
    tg_args = [p for p in pos if "=" not in p and not p.endswith("-")]
    changes = [p for p in pos if "=" in p or (p.endswith("-") and p not in tg_args)]
    if not changes:
        raise Fail("error: at least one %s update is required" % field[:-1])
    # The changes are parsed before any server contact, as kubectl v1.32.4
    # does (seen on the real binary): every value first, in order, then the
    # keys; `label node N -- a=b --profile=cpu --profile-output=F` names
    # --profile-output=F's value.
    sets = [ch for ch in changes if not (ch.endswith("-") and "=" not in ch)]
    for ch in sets:
        v = ch.split("=", 1)[1]
        if field == "labels" and v and not re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$", v):
            raise Fail('error: invalid label value: "%s": a valid label must be an empty string or consist of alphanumeric '
                       "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                       "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                       "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')" % (ch,))
    for ch in sets:
        k = ch.split("=", 1)[0]
        if field == "labels" and not re.match(r"^(([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$", k):
            raise Fail('error: invalid label spec: %s' % ch)
    tg = targets(tg_args)
    objs = []
    for res, name in tg:
        if name:
            objs.extend((res, o) for o in fetch(ctx, res, name))
        elif flags.get("selector") or flags.get("all"):
            objs.extend((res, o) for o in fetch(ctx, res, None, flags.get("selector")))
        else:
            raise Fail("error: resource(s) were provided, but no name was specified")
    for res, o in objs:
        cur = dict((o["metadata"].get(field) or {}))
        new = dict(cur)
        for ch in changes:
            if ch.endswith("-") and "=" not in ch:
                new.pop(ch[:-1], None)
                continue
            k, v = ch.split("=", 1)
            if k in cur and cur[k] != v and not flags.get("overwrite"):
                raise Fail("error: '%s' already has a value (%s), and --overwrite is false" % (k, cur[k]))
            new[k] = v
        if new == cur:
            out("%s not %s" % (qname(res, o), verb))
            continue
        patch = {k: v for k, v in new.items() if cur.get(k) != v}
        patch.update({k: None for k in cur if k not in new})
        try:
            ctx.call("PATCH", res.path(o["metadata"].get("namespace") if res.namespaced else None, o["metadata"]["name"]),
                     {"metadata": {field: patch}}, "application/merge-patch+json")
        except APIError as e:
            raise Fail(api_error(e)) from e
        removed_only = all(v is None for v in patch.values())
        out("%s %s" % (qname(res, o), ("un" + verb) if removed_only else verb))
    return 0


def cmd_taint(argv):
    flags, pos = parse(argv, {"overwrite": "bool", "selector": "str", "all": "bool"})
    ctx = Ctx(flags)
    if len(pos) < 3:
        raise Fail("error: at least one taint update is required")
    res = resolve(pos[0])
    if res.kind != "Node":
        raise Fail('error: invalid resource type %s, only node types are supported' % pos[0])
    name, specs = pos[1], pos[2:]
    o = fetch(ctx, res, name)[0]
    taints = list((o.get("spec") or {}).get("taints") or [])
    removed = added = False
    for s in specs:
        if s.endswith("-"):
            s = s[:-1]
            key, _, eff = s.partition(":")
            key = key.split("=")[0]
            keep = [t for t in taints if not (t.get("key") == key and (not eff or t.get("effect") == eff))]
            if len(keep) == len(taints):
                raise Fail('error: taint "%s" not found' % s)
            taints, removed = keep, True
            continue
        m = re.match(r"^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$", s)
        if not m:
            raise Fail('error: invalid taint spec: %s, unknown effect' % s)
        t = {"key": m.group(1), "effect": m.group(3)}
        if m.group(2):
            t["value"] = m.group(2)
        same = [x for x in taints if x.get("key") == t["key"] and x.get("effect") == t["effect"]]
        if same and not flags.get("overwrite"):
            raise Fail("error: node %s already has %s taint(s) with same effect(s) and --overwrite is false" % (name, t["key"]))
        taints = [x for x in taints if x not in same] + [t]
        added = True
    try:
        ctx.call("PATCH", res.path(None, name), {"spec": {"taints": taints or None}}, "application/merge-patch+json")
    except APIError as e:
        raise Fail(api_error(e)) from e
    out("node/%s %s" % (name, "modified" if added and removed else ("tainted" if added else "untainted")))
    return 0


def condition_status(o, cond):
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type", "").lower() == cond.lower():
            return c.get("status")
    return None


def cmd_wait(argv):
    flags, pos = parse(argv, {"for": "str", "timeout": "dur", "selector": "str", "all": "bool", "field-selector": "str",
                              "output": "str"})
    ctx = Ctx(flags)
    cond = flags.get("for")
    if not cond:
        raise Fail("error: --for must be set")
    timeout = parse_duration(flags.get("timeout", "30s"))
    deadline = now() + timeout
    tg = targets(pos)
    while True:
        objs, gone = [], []
        for res, name in tg:
            try:
                if name:
                    objs.extend((res, o) for o in fetch(ctx, res, name))
                else:
                    objs.extend((res, o) for o in fetch(ctx, res, None, flags.get("selector"), flags.get("field-selector")))
            except Fail as e:
                if "(NotFound)" in str(e):
                    gone.append((res, name))
                    if cond != "delete":
                        raise
                else:
                    raise
        if not objs and not gone and not any(n for _, n in tg):
            raise Fail("error: no matching resources found")
        pending = []
        if cond == "delete":
            pending = objs
        else:
            for res, o in objs:
                if cond.startswith("condition="):
                    c = cond[len("condition="):]
                    want = "true"
                    if "=" in c:
                        c, want = c.split("=", 1)
                    st = condition_status(o, c)
                    if st is None or st.lower() != want.lower():
                        pending.append((res, o))
                elif cond.startswith("jsonpath="):
                    expr = cond[len("jsonpath="):]
                    m = re.match(r"^'?(\{.*\})'?(?:=(.*))?$", expr)
                    if not m:
                        raise Fail("error: jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3")
                    got = jsonpath(m.group(1), o)
                    if (m.group(2) is not None and got != m.group(2)) or (m.group(2) is None and not got):
                        pending.append((res, o))
                else:
                    raise Fail("error: unrecognized condition: %s" % json.dumps(cond))
        if not pending:
            for res, o in objs:
                out("%s condition met" % qname(res, o))
            for res, n in gone:
                out("%s condition met" % qname(res, n))
            return 0
        if now() >= deadline:
            res, o = pending[0]
            raise Fail("error: timed out waiting for the condition on %s/%s" % (res.plural + ("." + res.group if res.group else ""),
                                                                                 o["metadata"]["name"]))
        time.sleep(min(1.0, max(0.1, deadline - now())))


def cmd_version(argv):
    flags, pos = parse(argv, {"client": "bool", "output": "str", "short": "bool"})
    client = version_info()
    fmt = flags.get("output", "")
    server = None
    err = None
    if not flags.get("client"):
        try:
            ctx = Ctx(flags)
            server = ctx.get("/version")
        except Fail as e:
            err = str(e)
    if fmt == "json":
        d = {"clientVersion": client, "kustomizeVersion": KUSTOMIZE}
        if server:
            d["serverVersion"] = server
        out(json.dumps(d, indent=2))
    elif fmt == "yaml":
        d = {"clientVersion": client, "kustomizeVersion": KUSTOMIZE}
        if server:
            d["serverVersion"] = server
        sys.stdout.write(yaml_dump(d))
    else:
        out("Client Version: v" + FAKE_VERSION)
        if FAKE_MINOR == 30:
            out("Kustomize Version: " + KUSTOMIZE)
        if server:
            out("Server Version: " + server.get("gitVersion", ""))
    if err and fmt not in ("json", "yaml"):
        raise Fail(err)
    return 0 if not err else 1


def set_unschedulable(ctx, name, value):
    res = R("nodes")
    o = fetch(ctx, res, name)[0]
    if bool((o.get("spec") or {}).get("unschedulable")) == value:
        out("node/%s already %s" % (name, "cordoned" if value else "uncordoned"))
        return
    try:
        ctx.call("PATCH", res.path(None, name), {"spec": {"unschedulable": True if value else None}},
                 "application/merge-patch+json")
    except APIError as e:
        raise Fail(api_error(e)) from e
    out("node/%s %s" % (name, "cordoned" if value else "uncordoned"))


def cmd_cordon(argv, value=True):
    flags, pos = parse(argv, {"selector": "str", "dry-run": "str"})
    ctx = Ctx(flags)
    if not pos:
        raise Fail("error: USAGE: cordon NODE [flags]")
    for n in pos:
        set_unschedulable(ctx, n, value)
    return 0


def cmd_drain(argv):
    flags, pos = parse(argv, {"ignore-daemonsets": "bool", "delete-emptydir-data": "bool", "force": "bool",
                              "timeout": "dur", "grace-period": "int", "selector": "str", "pod-selector": "str",
                              "disable-eviction": "bool", "skip-wait-for-delete-timeout": "str", "dry-run": "str"})
    ctx = Ctx(flags)
    if not pos:
        raise Fail("error: USAGE: drain NODE [flags]")
    name = pos[0]
    set_unschedulable(ctx, name, True)
    pods = ctx.get(R("pods").path(), {"fieldSelector": "spec.nodeName=" + name})["items"]
    ds, evict, bare = [], [], []
    for p in pods:
        owners = p["metadata"].get("ownerReferences") or []
        if "kubernetes.io/config.mirror" in (p["metadata"].get("annotations") or {}):
            continue
        if any(o.get("kind") == "DaemonSet" for o in owners):
            ds.append(p)
        elif not owners:
            bare.append(p)
            evict.append(p)
        else:
            evict.append(p)
    errs = []
    if ds and not flags.get("ignore-daemonsets"):
        errs.append("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): " +
                    ", ".join("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]) for p in ds))
    if bare and not flags.get("force"):
        errs.append("cannot delete Pods that declare no controller (use --force to override): " +
                    ", ".join("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]) for p in bare))
    if errs:
        raise Fail('error: unable to drain node "%s" due to error: %s, continuing command...\nThere are pending nodes to be '
                   'drained:\n %s\n%s' % (name, ", ".join(errs), name, "\n".join("error: " + e for e in errs)))
    if ds:
        sys.stderr.write("Warning: ignoring DaemonSet-managed Pods: %s\n" %
                         ", ".join("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]) for p in ds))
    for p in evict:
        out("evicting pod %s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]))
    for p in evict:
        try:
            ctx.call("POST", R("pods").path(p["metadata"]["namespace"], p["metadata"]["name"], "eviction"),
                     {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": p["metadata"]["name"],
                                                                                  "namespace": p["metadata"]["namespace"]}})
        except APIError as e:
            if e.code != 404:
                raise Fail(api_error(e)) from e
        out("pod/%s evicted" % p["metadata"]["name"])
    out("node/%s drained" % name)
    return 0


def cmd_cluster_info(argv):
    flags, _ = parse(argv, {})
    ctx = Ctx(flags)
    ctx.get("/version")
    out("Kubernetes control plane is running at %s" % ctx.client.server)
    out("CoreDNS is running at %s/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy" % ctx.client.server)
    out("")
    out("To further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.")
    return 0


def main():
    argv = sys.argv[1:]
    # global flags may come before the command, no other flag
    pre = []
    try:
        while argv and argv[0].startswith("-") and argv[0] != "-":
            a = argv.pop(0)
            name = a.lstrip("-").split("=")[0]
            name = SHORTS.get(name, name) if not a.startswith("--") else name
            if ("-" + a.lstrip("-").split("=")[0] if not a.startswith("--") else "--" + name) not in CLI_FLAGS["global"]:  # noqa: F821
                sys.stderr.write("Error: flags cannot be placed before plugin name: %s\n" % a)
                return 1
            pre.append(a)
            if "=" not in a and GLOBAL.get(name) != "bool":
                if not argv:
                    raise FlagError("flag needs an argument: %s" % a)
                pre.append(argv.pop(0))
    except FlagError as e:
        sys.stderr.write("Error: %s\nSee 'kubectl --help' for usage.\n" % e)
        return 1
    if not argv:
        out("kubectl controls the Kubernetes cluster manager.")
        return 0
    cmd, rest = argv[0], pre + argv[1:]
    COMMAND[0] = cmd
    table_ = {"get": cmd_get, "apply": cmd_apply, "create": lambda a: cmd_apply(a, create_only=True), "diff": cmd_diff,
              "delete": cmd_delete, "label": cmd_label, "annotate": lambda a: cmd_label(a, "annotations", "annotated"),
              "taint": cmd_taint, "wait": cmd_wait, "version": cmd_version, "cordon": cmd_cordon,
              "uncordon": lambda a: cmd_cordon(a, False), "drain": cmd_drain, "cluster-info": cmd_cluster_info}
    if cmd not in table_:
        sys.stderr.write('error: unknown command "%s" for "kubectl"\n' % cmd)
        return 1
    try:
        rc = table_[cmd](rest)
        if rc == 0 and PROFILE_AT_END[0]:
            with open(PROFILE_AT_END[0], "wb") as f:
                f.write(b"fake kubectl profile\n")
        return rc
    except FlagError as e:
        sys.stderr.write("Error: %s\nSee 'kubectl %s --help' for usage.\n" % (e, cmd))
        return 1
    except FlagNotModelled as e:
        sys.stderr.write("kubectl stand-in (tests/fakes/kube/kubectl.py): %s (kubectl %s)\n" % (e, cmd))
        return 1
    except Fail as e:
        sys.stderr.write(str(e).rstrip("\n") + "\n")
        return 1
    except APIError as e:
        sys.stderr.write(api_error(e) + "\n")
        return 1
    except ConnError as e:
        sys.stderr.write("Unable to connect to the server: %s\n" % e)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
