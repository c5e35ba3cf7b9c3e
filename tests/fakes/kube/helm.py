# helm (fake) for provision's tests: the helm program of the release
# archive (helm-vX.Y.Z-linux-amd64.tar.gz) that the helm role installs.
#
# What it copies (helm.sh docs: "helm upgrade", "helm list", "helm status",
# "helm uninstall", "helm version", "Charts" (Chart.yaml, values.yaml,
# templates/), "Values Files" (later -f files and --set win), "Built-in
# Objects" (.Values, .Release.Name/.Namespace/.Revision/.IsInstall,
# .Chart.Name/.Version/.AppVersion), the storage of releases as Secrets
# "sh.helm.release.v1.NAME.vREVISION" of type helm.sh/release.v1 with labels
# name/owner=helm/status/version and the release gzipped and base64-encoded
# in data.release):
#   helm version [--short] [--template] [-c/--client: helm 3]
#   helm upgrade --install NAME CHART [-n NS] [--create-namespace]
#        [-f/--values FILE]... [--set K=V]... [--wait] [--timeout D]
#        [--version V] [--server-side true|false|auto: helm 4]
#   helm list [-n NS | -A] [-a: helm 3] [--deployed] [--failed] [--pending]
#        [--superseded] [--uninstalled] [--uninstalling] [--filter REGEX]
#        [-o table|json|yaml]
#   helm status NAME [-n NS] [-o json]
#   helm get values NAME [-n NS] [-a/--all] [--revision N] [-o table|json|yaml]
#   helm get metadata NAME [-n NS] [--revision N] [-o table|json|yaml]
#   helm history NAME [-n NS] [--max N] [-o table|json|yaml]
#   helm rollback NAME [REVISION] [-n NS] [--wait] [--timeout D]
#   helm uninstall NAME [-n NS] [--wait[=...]] [--timeout D]
# Per Helm major (the version built, HELM_FAKE_VERSION; tests/fakes/README.md,
# "Helm 3 and Helm 4"), as helm/helm's sources at v3.17.3 and v4.2.4 say:
#   - the flags: the real table of that major (CLI_FLAGS);
#   - list without a state flag: helm 3 deployed and failed releases only,
#     helm 4 every state (pkg/action/list.go SetStateMask); the state flags
#     together are every state in both;
#   - --wait: helm 3 a boolean (its readiness, below); helm 4 a strategy
#     (pkg/cmd/flags.go AddWaitFlag): "legacy" is helm 3's readiness,
#     "watcher" (a bare --wait) kstatus, "hookOnly" (no --wait) none,
#     true/false the deprecated booleans (watcher, hookOnly) with helm's
#     warning, anything else refused;
#   - the apply method a release is stored with (release.v1 apply_method,
#     helm 4 only; `helm get metadata` shows it): a release helm 4
#     installs first is server-side ("ssa"); an upgrade with
#     --server-side=auto (the default) keeps the last revision's method, a
#     revision without one (Helm 3's) being client-side ("csa")
#     (pkg/action/upgrade.go getUpgradeServerSideValue).  Both apply the
#     objects alike here (the API server stand-in has no server-side apply);
#   - "Kubernetes cluster unreachable" (helm 3) / "kubernetes cluster
#     unreachable" (helm 4), `helm version`'s BuildInfo (helm 4 adds
#     KubeClientVersion).
# Both majors store and read releases alike (Secrets, below): a release one
# installed the other lists, upgrades and keeps the history of.
# Release states as helm v3.17.1 keeps them (pkg/action/install.go,
# upgrade.go, rollback.go): the new revision is stored pending-install or
# pending-upgrade before its objects are applied; an upgrade of a release
# whose last revision is pending-* fails with "UPGRADE FAILED: another
# operation (install/upgrade/rollback) is in progress" (errPending); a
# failed last revision is upgraded from (the last deployed one, else the
# failed one).  SIGINT or SIGTERM while upgrade --install applies or waits:
# "Release NAME has been cancelled." on stdout, the revision stored failed
# ("Upgrade \"NAME\" failed: context canceled", or "Release \"NAME\"
# failed: context canceled" for a first install), "Error: UPGRADE FAILED:
# context canceled" (a first install through upgrade --install: "Error:
# context canceled", not wrapped), exit 1 (cmd/helm/upgrade.go, install.go
# runInstall: signal.Notify(os.Interrupt, syscall.SIGTERM)); killed
# (SIGKILL) it leaves the revision pending.  rollback stores a new revision
# from the old one's chart, values and manifest, supersedes the deployed
# ones, and prints "Rollback was a success! Happy Helming!".
# upgrade, rollback and uninstall write the discovery cache under
# ~/.kube/cache as the real helm's kube client does (fakekube.py
# kube_disk_cache).
# CHART is a chart directory or a .tgz of one.  Templates are rendered with
# the small subset of Go templates charts use for plain values ({{ .Values.a.b
# }}, .Release.*, .Chart.*, `| quote`, `| default X`, if/else/end, {{- -}}
# trimming, `toYaml X | nindent N`, `| indent N`); anything else fails with
# "parse error".  --wait waits until the release's Deployments and
# DaemonSets are ready and its PVCs Bound (helm's --wait), and until the
# chart's stand-in (below) says it is ready.
# What the chart's own programs (operators, provisioners) would do to the
# cluster is not in its templates: a chart's stand-in, chart_NAME.py (see
# fakekube.py "charts" and tests/fakes/README.md), registered for the
# chart's name, is called after each install or upgrade (installed), while
# --wait waits (ready) and at uninstall (uninstalled); the kubelet acts out
# the chart's images with the same file's image acts.
# Kubeconfig: --kubeconfig, $KUBECONFIG, ~/.kube/config.
# Flags: each command accepts what the real helm of its major accepts for
# it (the table build.sh embeds, see "Flags" below and tests/fakes/README.md);
# the ones listed above are those it acts on.

import gzip
import signal

import tarfile

try:
    HELM_FAKE_VERSION  # noqa: F821  (set by build.sh in front of this file)
except NameError:
    HELM_FAKE_VERSION = os.environ.get("FAKE_HELM_VERSION", "4.3.0")
# What `helm version` of each release archive the stand-in can be built as
# prints: helm/helm's tag commit, the Go of the release build and (helm 4)
# the client-go it was built with as a Kubernetes minor
# (internal/version/version.go).  3.18.4: the archive's own output; 4.2.4:
# tag v4.2.4 (3900f434...), go.mod k8s.io/client-go v0.36.1, built with
# Go 1.26 (.github/env GOLANG_VERSION=1.26: the patch release setup-go
# took that day is not known here, so the stand-in says go1.26); 4.3.0 and
# 3.22.0 (the pins of roles/artifacts.yaml): the real archives' output as
# public transcripts of `helm version` give it alike (4.3.0: bec5b06e...,
# go1.27.1, KubeClientVersion v1.37; 3.22.0: 144ca65f..., the tag commit
# Helm's v3.22.0 release notes list first, go1.26.8).
HELM_BUILDS = {
    "3.18.4": ("d80839cf37d860c8aa9a0503fe463278f26cd5e2", "go1.24.4", None),
    "3.22.0": ("144ca65f8501953fa8b41cd1d37c7223051c85b7", "go1.26.8", None),
    "4.2.4": ("3900f434fd3ef2b84065dc04508df48f288dba00", "go1.26", "v1.36"),
    "4.3.0": ("bec5b06ed841fe5269972d864d5177944fd5970f", "go1.27.1", "v1.37"),
}
if HELM_FAKE_VERSION not in HELM_BUILDS:
    raise SystemExit("helm stand-in: no build data for Helm %s (tests/fakes/kube/helm.py HELM_BUILDS)" % HELM_FAKE_VERSION)
HELM_VERSION = "v" + HELM_FAKE_VERSION
HELM_MAJOR = int(HELM_FAKE_VERSION.split(".")[0])
HELM_GIT_COMMIT, HELM_GO_VERSION, HELM_KUBE_CLIENT = HELM_BUILDS[HELM_FAKE_VERSION]
# pkg/kube/client.go IsReachable: helm 4 lowered the word
UNREACHABLE = "Kubernetes cluster unreachable" if HELM_MAJOR == 3 else "kubernetes cluster unreachable"
R = resource_by_name


class Fail(Exception):
    pass


class Cancelled(Exception):
    """SIGINT or SIGTERM during upgrade --install (helm's context cancelled)."""


def client(flags):
    path = flags.get("kubeconfig") or next((p for p in os.environ.get("KUBECONFIG", "").split(":") if p and os.path.exists(p)),
                                           None) or os.path.expanduser("~/.kube/config")
    try:
        return Client.from_kubeconfig(path, timeout=30)
    except KubeconfigError as e:
        raise Fail("%s: %s" % (UNREACHABLE, e)) from e


# Flags: which ones each command accepts is the real Helm's table (CLI_FLAGS,
# from tests/fakes/cli/helm-X.Y.Z.flags, the table of the Helm major built,
# read from the real binary's help: see tests/fakes/README.md, "Flags").
# 3.18.4 and 3.22.0 get helm 3.17.3's table (between 3.17.3 and 3.18.4
# cmd/helm and pkg/cli add one flag, registry login's --plain-http), 4.2.4
# and 4.3.0 helm 4.1.4's.  A flag outside the table: "Error: unknown flag: --x" on
# standard error and exit 1, as cobra prints it for helm (SilenceUsage, no
# usage text) and helm's main exits.  A flag in the table that is not
# below: the stand-in's "does not act on" message.
GLOBAL_KINDS = {"namespace": "str", "kubeconfig": "str", "kube-context": "str", "debug": "bool"}
LIST_STATES = ("deployed", "failed", "pending", "superseded", "uninstalled", "uninstalling")
KINDS = {
    "upgrade": ({"install": "bool", "create-namespace": "bool", "values": "csv", "set": "list",
                 "wait": "bool" if HELM_MAJOR == 3 else "opt:watcher", "server-side": "str",
                 "timeout": "dur", "version": "str", "output": "str", "reuse-values": "bool",
                 "reset-values": "bool"},
                {"f": "values", "i": "install", "o": "output"}),
    "list": (dict({"all": "bool", "all-namespaces": "bool", "filter": "str", "output": "str", "short": "bool"},
                  **{st: "bool" for st in LIST_STATES}),
             {"a": "all", "A": "all-namespaces", "f": "filter", "o": "output", "q": "short"}),
    "version": ({"short": "bool", "template": "str", "client": "bool"}, {"c": "client"}),
    "status": ({"output": "str"}, {"o": "output"}),
    "uninstall": ({"wait": "bool" if HELM_MAJOR == 3 else "opt:watcher", "timeout": "dur"}, {}),
    "get values": ({"all": "bool", "revision": "int", "output": "str"}, {"a": "all", "o": "output"}),
    "get metadata": ({"revision": "int", "output": "str"}, {"o": "output"}),
    "history": ({"max": "int", "output": "str"}, {"o": "output"}),
    "rollback": ({"wait": "bool", "timeout": "dur", "dry-run": "bool", "force": "bool", "no-hooks": "bool",
                  "recreate-pods": "bool", "cleanup-on-fail": "bool", "history-max": "int", "wait-for-jobs": "bool"}, {}),
}
ALIASES = {"ls": "list", "delete": "uninstall", "un": "uninstall", "del": "uninstall", "hist": "history"}


def parse(cmd, argv):
    kinds, shorts = KINDS[cmd]
    return pflag_parse(argv, cli_names(cmd), dict(GLOBAL_KINDS, **kinds), dict(shorts, n="namespace"))


# ---------------------------------------------------------------- charts


def load_chart(path):
    files = {}
    if os.path.isdir(path):
        for root, _, names in os.walk(path):
            for n in names:
                p = os.path.join(root, n)
                files[os.path.relpath(p, path)] = read_file(p)
    elif os.path.isfile(path) and path.endswith((".tgz", ".tar.gz")):
        with tarfile.open(path, "r:gz") as t:
            for m in t.getmembers():
                if m.isfile():
                    rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
                    files[rel] = t.extractfile(m).read().decode()
    else:
        raise Fail("path %s not found" % json.dumps(path) if not os.path.exists(path) else
                   "repo %s not found" % path.split("/")[0])
    if "Chart.yaml" not in files:
        raise Fail("Chart.yaml file is missing")
    meta = yaml_load(files["Chart.yaml"]) or {}
    return meta, files


def deep_merge(a, b):
    out = dict(a)
    for k, v in (b or {}).items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def set_value(vals, expr):
    for part in expr.split(","):
        k, _, v = part.partition("=")
        cur = vals
        keys = k.split(".")
        for key in keys[:-1]:
            cur = cur.setdefault(key, {})
        cur[keys[-1]] = _plain(v) if v not in ("",) else ""


def lookup(ctx, path):
    cur = ctx
    for p in path.lstrip(".").split("."):
        if not p:
            continue
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def render(text, ctx, name):
    toks = re.split(r"(\{\{-?.*?-?\}\})", text, flags=re.S)
    out, stack = [], [True]
    pending_trim = False
    for t in toks:
        if not (t.startswith("{{") and t.endswith("}}")):
            if pending_trim:
                t = t.lstrip()
                pending_trim = False
            if all(stack):
                out.append(t)
            continue
        left, right = t.startswith("{{-"), t.endswith("-}}")
        body = t[3 if left else 2:-3 if right else -2].strip()
        if left and out:
            out[-1] = out[-1].rstrip()
        pending_trim = right
        if body.startswith("/*"):
            continue
        if body.startswith("if "):
            stack.append(bool(evaluate(body[3:], ctx, name)) if all(stack) else False)
            continue
        if body == "else":
            stack[-1] = not stack[-1] if all(stack[:-1]) else False
            continue
        if body == "end":
            if len(stack) == 1:
                raise Fail("parse error at (%s): unexpected {{end}}" % name)
            stack.pop()
            continue
        if all(stack):
            v = evaluate(body, ctx, name)
            out.append("" if v is None else (json.dumps(v) if isinstance(v, bool) else str(v)) if not isinstance(v, (dict, list)) else yaml_dump(v).rstrip())
    if len(stack) != 1:
        raise Fail("parse error at (%s): unexpected EOF" % name)
    return "".join(out)


def evaluate(expr, ctx, name):
    parts = [p.strip() for p in expr.split("|")]
    head = parts[0]
    if head.startswith("toYaml "):
        v = lookup(ctx, head[7:].strip())
        v = yaml_dump(v).rstrip() if v is not None else "null"
    elif head.startswith("."):
        v = lookup(ctx, head)
    elif head.startswith('"') and head.endswith('"'):
        v = head[1:-1]
    else:
        raise Fail('parse error at (%s): function "%s" not defined' % (name, head.split()[0]))
    for f in parts[1:]:
        if f == "quote":
            v = json.dumps("" if v is None else str(v))
        elif f.startswith("default "):
            d = f[8:].strip()
            if v in (None, "", False, 0, {}, []):
                v = d[1:-1] if d.startswith('"') else (lookup(ctx, d) if d.startswith(".") else _plain(d))
        elif f == "toYaml":
            v = yaml_dump(v).rstrip() if v is not None else "null"
        elif f.startswith(("nindent ", "indent ")):
            n = int(f.split()[1])
            text = "" if v is None else str(v)
            v = "\n".join((" " * n + ln) if ln else ln for ln in text.split("\n"))
            if f.startswith("nindent"):
                v = "\n" + v
        else:
            raise Fail('parse error at (%s): function "%s" not defined' % (name, f.split()[0]))
    return v


# ---------------------------------------------------------------- releases


def releases(c, ns):
    path = R("secrets").path(ns)
    items = c.get(path, {"labelSelector": "owner=helm"})["items"]
    out = []
    for s in items:
        try:
            raw = base64.b64decode(base64.b64decode(s["data"]["release"]))
            rel = json.loads(gzip.decompress(raw))
        except (KeyError, ValueError, OSError):
            continue
        out.append(rel)
    return out


def latest(c, ns, name):
    rs = [r for r in releases(c, ns) if r["name"] == name]
    return max(rs, key=lambda r: r["version"]) if rs else None


def store(c, rel):
    data = base64.b64encode(gzip.compress(json.dumps(rel).encode())).decode()
    sec = {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
           "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (rel["name"], rel["version"]), "namespace": rel["namespace"],
                        "labels": {"name": rel["name"], "owner": "helm", "status": rel["info"]["status"],
                                   "version": str(rel["version"])}},
           "data": {"release": b64(data)}}
    try:
        c.post(R("secrets").path(rel["namespace"]), sec)
    except APIError as e:
        if e.code != 409:
            raise
        c.put(R("secrets").path(rel["namespace"], sec["metadata"]["name"]), sec)


def apply_manifest(c, ns, text):
    objs = []
    for d in yaml_load_all(text):
        if not isinstance(d, dict) or not d.get("kind"):
            continue
        res = resource_for_kind(d.get("apiVersion", ""), d["kind"])
        if res is None:
            raise Fail('unable to build kubernetes objects from release manifest: resource mapping not found for name: "%s" '
                       'namespace: "%s" from "": no matches for kind "%s" in version "%s"'
                       % (d["metadata"].get("name"), ns, d["kind"], d.get("apiVersion")))
        rns = (d["metadata"].get("namespace") or ns) if res.namespaced else None
        if res.namespaced:
            d["metadata"]["namespace"] = rns
        d["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
        try:
            c.post(res.path(rns), d)
        except APIError as e:
            if e.code != 409:
                raise
            cur = c.get(res.path(rns, d["metadata"]["name"]))
            d["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            c.put(res.path(rns, d["metadata"]["name"]), d)
        objs.append((res, rns, d["metadata"]["name"]))
    return objs


def hooks(rel):
    return CHART_HOOKS.get((rel.get("chart") or {}).get("metadata", {}).get("name"))


def ready(c, objs, rel=None):
    """None when the release is ready (helm's --wait), else (why not, kind,
    namespace, name)."""
    for res, ns, name in objs:
        o = c.get(res.path(ns, name))
        st = o.get("status") or {}
        if res.kind == "Deployment" and st.get("readyReplicas", 0) < (o.get("spec") or {}).get("replicas", 1):
            return "Deployment is not ready: %s/%s" % (ns, name), res.kind, ns, name
        if res.kind == "DaemonSet" and st.get("numberReady", 0) < st.get("desiredNumberScheduled", 1):
            return "DaemonSet is not ready: %s/%s" % (ns, name), res.kind, ns, name
        if res.kind == "PersistentVolumeClaim" and st.get("phase") != "Bound":
            return "PersistentVolumeClaim is not bound: %s/%s" % (ns, name), res.kind, ns, name
    h = hooks(rel) if rel else None
    if h is not None and hasattr(h, "ready"):
        why = h.ready(c, rel)
        if why is not None:
            return why, "Pod", rel["namespace"], rel["name"]
    return None


def wait_strategy(flags):
    """What upgrade --wait waits for: "legacy" (helm 3's readiness),
    "watcher" (helm 4's kstatus) or "hookOnly" (nothing)."""
    w = flags.get("wait")
    if HELM_MAJOR == 3:
        return "legacy" if w else "hookOnly"
    if w is None:
        return "hookOnly"
    if w in ("true", "false"):
        # pkg/cmd/flags.go waitValue.Set: slog's default text handler
        alt = "watcher" if w == "true" else "hookOnly"
        sys.stderr.write('level=WARN msg="--wait=%s is deprecated (boolean value) and can be replaced with --wait=%s"\n'
                         % (w, alt))
        return alt
    if w not in ("watcher", "legacy", "hookOnly"):
        raise FlagError('invalid argument %s for "--wait" flag: invalid wait input %s. Valid inputs are watcher, '
                        'hookOnly, and legacy' % (json.dumps(w), json.dumps(w)))
    return w


def fmt_time(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f000 +0000 UTC")


def status_text(rel):
    t = datetime.datetime.fromtimestamp(rel["info"]["last_deployed"], datetime.timezone.utc)
    return ("NAME: %s\nLAST DEPLOYED: %s\nNAMESPACE: %s\nSTATUS: %s\nREVISION: %d\nTEST SUITE: None\n"
            % (rel["name"], t.strftime("%a %b %e %H:%M:%S %Y"), rel["namespace"], rel["info"]["status"], rel["version"]))


def cmd_upgrade(flags, pos):
    if len(pos) != 2:
        raise Fail('"helm upgrade" requires 2 arguments\n\nUsage:  helm upgrade [RELEASE] [CHART] [flags]')
    name, chart = pos
    ns = flags.get("namespace", "default")
    strategy = wait_strategy(flags)
    ssa_opt = flags.get("server-side", "auto")
    if ssa_opt not in ("true", "false", "auto"):
        raise Fail("UPGRADE FAILED: invalid/unknown release server-side apply method: %s" % ssa_opt)
    c = client(flags)
    meta, files = load_chart(chart)
    if flags.get("version") and str(meta.get("version")) != flags["version"]:
        raise Fail('chart "%s" matching %s not found' % (meta.get("name"), flags["version"]))
    # The user-supplied values (what the release keeps as its config and
    # `helm get values` prints): the -f files in order, then --set; the
    # chart's own values.yaml is coalesced under them only to render.
    user = {}
    for f in flags.get("values", []):
        try:
            user = deep_merge(user, yaml_load(read_file(f)) or {})
        except OSError as e:
            raise Fail("open %s: no such file or directory" % f) from e
    for s in flags.get("set", []):
        set_value(user, s)
    prev = latest(c, ns, name)
    if prev is None and not flags.get("install"):
        raise Fail('UPGRADE FAILED: "%s" has no deployed releases' % name)
    if prev is not None and prev["info"]["status"].startswith("pending-"):
        raise Fail("UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress")
    kube_disk_cache(c)
    # the release upgraded from: the last deployed one, else a failed last one
    if prev is not None and prev["info"]["status"] != "deployed":
        prev = next((r for r in sorted(releases(c, ns), key=lambda r: -r["version"])
                     if r["name"] == name and r["info"]["status"] == "deployed"), prev)
    last_rev = latest(c, ns, name)["version"] if prev is not None else 0
    # pkg/action/upgrade.go reuseValues: --reset-values takes only the new
    # values; --reuse-values merges the new ones over the last release's
    # config; neither, and no new values at all: the last config again.
    if prev is not None and not flags.get("reset-values"):
        if flags.get("reuse-values"):
            user = deep_merge(prev.get("config") or {}, user)
        elif not user:
            user = prev.get("config") or {}
    chart_vals = yaml_load(files.get("values.yaml", "")) or {}
    vals = deep_merge(chart_vals, user)
    try:
        c.get(R("namespaces").path(None, ns))
    except APIError as e:
        if e.code != 404:
            raise
        if not flags.get("create-namespace"):
            raise Fail('INSTALLATION FAILED: create: failed to create: namespaces "%s" not found' % ns) from e
        c.post(R("namespaces").path(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    rev = last_rev + 1
    ctx = {"Values": vals, "Release": {"Name": name, "Namespace": ns, "Revision": rev, "IsInstall": prev is None,
                                       "IsUpgrade": prev is not None, "Service": "Helm"},
           "Chart": {"Name": meta.get("name"), "Version": str(meta.get("version")), "AppVersion": str(meta.get("appVersion", ""))}}
    manifest = []
    for p in sorted(files):
        if p.startswith("templates/") and p.endswith((".yaml", ".yml")) and not os.path.basename(p).startswith("_"):
            manifest.append("---\n# Source: %s/%s\n%s" % (meta.get("name"), p, render(files[p], ctx, p)))
    manifest = "\n".join(manifest)
    if prev is None:
        print('Release "%s" does not exist. Installing it now.' % name)
    rel = {"name": name, "namespace": ns, "version": rev, "config": user, "manifest": manifest,
           "chart": {"metadata": meta, "values": chart_vals}, "info": {"status": "pending-install" if prev is None else "pending-upgrade",
                                                 "first_deployed": prev["info"]["first_deployed"] if prev else now(),
                                                 "last_deployed": now(), "description": ""}}
    if HELM_MAJOR >= 4:
        # pkg/cmd/upgrade.go (a first install: server-side unless
        # --server-side=false), pkg/action/upgrade.go
        # getUpgradeServerSideValue (auto: the last revision's method, none
        # being client-side)
        if prev is None:
            ssa = ssa_opt != "false"
        else:
            ssa = ssa_opt == "true" or (ssa_opt == "auto" and prev.get("apply_method") == "ssa")
        rel["apply_method"] = "ssa" if ssa else "csa"
    verb = "INSTALLATION" if prev is None else "UPGRADE"
    # stored pending before anything is applied: a helm killed from here on
    # leaves it so (the pessimistic lock of pkg/action/upgrade.go)
    store(c, rel)

    def cancelled(signum, frame):
        print("Release %s has been cancelled." % name, flush=True)
        raise Cancelled()
    signal.signal(signal.SIGINT, cancelled)
    signal.signal(signal.SIGTERM, cancelled)
    try:
        objs = apply_manifest(c, ns, manifest)
        h = hooks(rel)
        if h is not None and hasattr(h, "installed"):
            h.installed(c, rel)
        if strategy in ("legacy", "watcher"):
            deadline = now() + parse_duration(flags.get("timeout", "5m0s"))
            while True:
                why = ready(c, objs, rel)
                if why is None:
                    break
                if now() > deadline:
                    if strategy == "watcher":
                        # pkg/kube/statuswait.go: each object not Current,
                        # then the context's error, errors.Join'ed
                        raise Fail("%s FAILED: resource %s/%s/%s not ready. status: InProgress, message: %s\n"
                                   "context deadline exceeded" % ((verb,) + why[1:] + (why[0],)))
                    sys.stderr.write("wait: %s\n" % why[0])
                    raise Fail("%s FAILED: context deadline exceeded" % verb)
                time.sleep(2)
    except Cancelled:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        rel["info"]["status"] = "failed"
        rel["info"]["description"] = ('Release "%s" failed: context canceled' if prev is None
                                      else 'Upgrade "%s" failed: context canceled') % name
        store(c, rel)
        raise Fail("context canceled" if prev is None else "UPGRADE FAILED: context canceled")
    except Fail:
        rel["info"]["status"] = "failed"
        rel["info"]["description"] = "Release %s failed: context deadline exceeded" % ("install" if prev is None else "upgrade")
        store(c, rel)
        raise
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # the release upgraded from (a failed one when none was deployed) and any
    # deployed one are superseded (pkg/action/upgrade.go)
    for r in releases(c, ns):
        if r["name"] == name and (r["info"]["status"] == "deployed" or (prev and r["version"] == prev["version"])):
            r["info"]["status"] = "superseded"
            store(c, r)
    rel["info"]["status"] = "deployed"
    rel["info"]["description"] = "Install complete" if prev is None else "Upgrade complete"
    store(c, rel)
    if prev is not None:
        print('Release "%s" has been upgraded. Happy Helming!' % name)
    sys.stdout.write(status_text(rel))
    return 0


def cmd_list(flags, pos):
    c = client(flags)
    ns = None if flags.get("all-namespaces") else flags.get("namespace", "default")
    # pkg/action/list.go SetStateMask: -a (helm 3) every state; else the
    # states the flags name; none: helm 3 deployed and failed, helm 4 every
    # state.  Only --superseded: every superseded revision, not the newest
    # of each release (Run's filterLatestReleases).
    named = [st for st in LIST_STATES if flags.get(st)]
    if flags.get("all") or (not named and HELM_MAJOR >= 4):
        named = list(LIST_STATES)
    elif not named:
        named = ["deployed", "failed"]
    states = {"pending-install", "pending-upgrade", "pending-rollback"} if "pending" in named else set()
    states |= set(named) - {"pending"}
    flt = re.compile(flags["filter"]) if flags.get("filter") else None
    rels = {}
    for r in releases(c, ns):
        k = (r["namespace"], r["name"]) if named != ["superseded"] else (r["namespace"], r["name"], r["version"])
        if k not in rels or r["version"] > rels[k]["version"]:
            rels[k] = r
    rels = {k: r for k, r in rels.items() if (flt is None or flt.search(r["name"])) and r["info"]["status"] in states}
    rows = [{"name": r["name"], "namespace": r["namespace"], "revision": str(r["version"]),
             "updated": fmt_time(r["info"]["last_deployed"]), "status": r["info"]["status"],
             "chart": "%s-%s" % (r["chart"]["metadata"].get("name"), r["chart"]["metadata"].get("version")),
             "app_version": str(r["chart"]["metadata"].get("appVersion", ""))} for _, r in sorted(rels.items())]
    fmt = flags.get("output", "table")
    if fmt == "json":
        print(json.dumps(rows, separators=(",", ":")))
    elif fmt == "yaml":
        sys.stdout.write(yaml_dump(rows))
    else:
        table = [["NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION"]] + \
            [[r["name"], r["namespace"], r["revision"], r["updated"], r["status"], r["chart"], r["app_version"]] for r in rows]
        w = [max(len(x[i]) for x in table) for i in range(7)]
        for x in table:
            print("\t".join(x[i].ljust(w[i]) for i in range(7)).rstrip())
    return 0


def cmd_get_values(flags, pos):
    """cmd/helm/get_values.go and pkg/action/get_values.go of v3.15.4: the
    release's user-supplied values (its config), or with --all the chart's
    values coalesced under them; table output is YAML under a header line,
    yaml and json the values alone (output.EncodeYAML: keys sorted;
    output.EncodeJSON: one line)."""
    if len(pos) != 1:
        raise Fail('"helm get values" requires 1 argument\n\nUsage:  helm get values RELEASE_NAME [flags]')
    fmt = flags.get("output", "table")
    if fmt not in ("table", "json", "yaml"):
        raise FlagError('invalid argument %s for "-o, --output" flag: invalid format type' % json.dumps(fmt))
    c = client(flags)
    ns = flags.get("namespace", "default")
    rev = int(flags.get("revision") or 0)
    if rev:
        rel = next((r for r in releases(c, ns) if r["name"] == pos[0] and r["version"] == rev), None)
    else:
        rel = latest(c, ns, pos[0])
    if rel is None:
        raise Fail("release: not found")
    vals = rel.get("config") or {}
    if flags.get("all"):
        vals = deep_merge((rel.get("chart") or {}).get("values") or {}, vals)
    if fmt == "json":
        print(json.dumps(vals, sort_keys=True, separators=(",", ":")))
        return 0
    if fmt == "table":
        print("COMPUTED VALUES:" if flags.get("all") else "USER-SUPPLIED VALUES:")
    sys.stdout.write(yaml_dump(vals))
    return 0


def release_at(c, flags, name):
    """The release NAME's --revision (default the newest), or Fail."""
    ns = flags.get("namespace", "default")
    rev = int(flags.get("revision") or 0)
    if rev:
        rel = next((r for r in releases(c, ns) if r["name"] == name and r["version"] == rev), None)
    else:
        rel = latest(c, ns, name)
    if rel is None:
        raise Fail("release: not found")
    return rel


def output_format(flags):
    fmt = flags.get("output", "table")
    if fmt not in ("table", "json", "yaml"):
        raise FlagError('invalid argument %s for "-o, --output" flag: invalid format type' % json.dumps(fmt))
    return fmt


def cmd_get_metadata(flags, pos):
    """cmd/helm/get_metadata.go of v3.17.3, pkg/cmd/get_metadata.go of
    v4.2.4 (which adds LABELS and APPLY_METHOD): the release's chart,
    revision, status and when it was deployed (RFC 3339)."""
    if len(pos) != 1:
        raise Fail('"helm get metadata" requires 1 argument\n\nUsage:  helm get metadata RELEASE_NAME [flags]')
    fmt = output_format(flags)
    rel = release_at(client(flags), flags, pos[0])
    meta = rel["chart"]["metadata"]
    deployed = datetime.datetime.fromtimestamp(rel["info"]["last_deployed"], datetime.timezone.utc) \
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    m = {"name": rel["name"], "chart": meta.get("name"), "version": str(meta.get("version")),
         "appVersion": str(meta.get("appVersion", "")), "namespace": rel["namespace"], "revision": rel["version"],
         "status": rel["info"]["status"], "deployedAt": deployed}
    if HELM_MAJOR >= 4 and rel.get("apply_method"):
        m["applyMethod"] = rel["apply_method"]
    if fmt == "json":
        print(json.dumps(m, separators=(",", ":")))
        return 0
    if fmt == "yaml":
        sys.stdout.write(yaml_dump(m))
        return 0
    lines = ["NAME: %s" % m["name"], "CHART: %s" % m["chart"], "VERSION: %s" % m["version"],
             "APP_VERSION: %s" % m["appVersion"], "ANNOTATIONS: "]
    if HELM_MAJOR >= 4:
        lines.append("LABELS: ")
    lines += ["DEPENDENCIES: ", "NAMESPACE: %s" % m["namespace"], "REVISION: %d" % m["revision"],
              "STATUS: %s" % m["status"], "DEPLOYED_AT: %s" % deployed]
    if HELM_MAJOR >= 4:
        lines.append("APPLY_METHOD: %s" % {"": "client-side apply (defaulted)", "csa": "client-side apply",
                                            "ssa": "server-side apply"}.get(rel.get("apply_method", ""),
                                                                            "unknown (%s)" % json.dumps(rel.get("apply_method"))))
    print("\n".join(lines))
    return 0


def cmd_history(flags, pos):
    """cmd/helm/history.go of v3.17.1 (pkg/cmd/history.go of v4.2.4: the
    same fields): the newest --max revisions (256), oldest first; json
    fields revision, updated, status, chart, app_version, description in
    that order."""
    if len(pos) != 1:
        raise Fail('"helm history" requires 1 argument\n\nUsage:  helm history RELEASE_NAME [flags]')
    fmt = output_format(flags)
    c = client(flags)
    rs = sorted((r for r in releases(c, flags.get("namespace", "default")) if r["name"] == pos[0]),
                key=lambda r: r["version"])
    if not rs:
        raise Fail("release: not found")
    rs = rs[-int(flags.get("max") or 256):]
    rows = [{"revision": r["version"], "updated": datetime.datetime.fromtimestamp(
                r["info"]["last_deployed"], datetime.timezone.utc).isoformat(),
             "status": r["info"]["status"],
             "chart": "%s-%s" % (r["chart"]["metadata"].get("name"), r["chart"]["metadata"].get("version")),
             "app_version": str(r["chart"]["metadata"].get("appVersion", "")),
             "description": r["info"].get("description", "")} for r in rs]
    if fmt == "json":
        print(json.dumps(rows, separators=(",", ":")))
    elif fmt == "yaml":
        sys.stdout.write(yaml_dump(rows))
    else:
        print("REVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION\tDESCRIPTION")
        for x in rows:
            print("%d\t%s\t%s\t%s\t%s\t%s" % (x["revision"], x["updated"], x["status"], x["chart"], x["app_version"],
                                               x["description"]))
    return 0


def cmd_rollback(flags, pos):
    """pkg/action/rollback.go of v3.17.1: a new revision (the last + 1)
    from REVISION's chart, values and manifest (default: the one before the
    last), stored pending-rollback, applied, waited for with --wait, then
    deployed, and the deployed ones superseded.  The state of the last
    revision is not checked (a pending one is rolled back from)."""
    if not pos:
        raise Fail('"helm rollback" requires at least 1 argument\n\nUsage:  helm rollback <RELEASE> [REVISION] [flags]')
    name, ns = pos[0], flags.get("namespace", "default")
    c = client(flags)
    rs = [r for r in releases(c, ns) if r["name"] == name]
    if not rs:
        raise Fail("release: not found")
    cur = max(rs, key=lambda r: r["version"])
    try:
        want = int(pos[1]) if len(pos) > 1 else cur["version"] - 1
    except ValueError as e:
        raise Fail("could not convert revision to a number: %s" % e) from e
    old = next((r for r in rs if r["version"] == want), None)
    if old is None:
        raise Fail("release has no %d version" % want)
    kube_disk_cache(c)
    rel = {"name": name, "namespace": ns, "version": cur["version"] + 1, "config": old.get("config") or {},
           "manifest": old["manifest"], "chart": old["chart"],
           "info": {"status": "pending-rollback", "first_deployed": cur["info"]["first_deployed"],
                    "last_deployed": now(), "description": "Rollback to %d" % want}}
    store(c, rel)
    objs = apply_manifest(c, ns, rel["manifest"])
    if flags.get("wait"):
        deadline = now() + parse_duration(flags.get("timeout", "5m0s"))
        while True:
            why = ready(c, objs, rel)
            if why is None:
                break
            if now() > deadline:
                rel["info"]["status"] = "failed"
                rel["info"]["description"] = 'Release "%s" failed: context deadline exceeded' % name
                store(c, rel)
                raise Fail("release %s failed: context deadline exceeded" % name)
            time.sleep(2)
    for r in rs:
        if r["info"]["status"] == "deployed":
            r["info"]["status"] = "superseded"
            store(c, r)
    rel["info"]["status"] = "deployed"
    store(c, rel)
    print("Rollback was a success! Happy Helming!")
    return 0


def main():
    argv = sys.argv[1:]
    # the command is the first word that is not a flag or a global flag's
    # value (cobra's search for the subcommand)
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name = argv[i].lstrip("-")
        if "=" not in name and GLOBAL_KINDS.get({"n": "namespace"}.get(name, name), "str") != "bool":
            i += 1
        i += 1
    if i >= len(argv):
        print("The Kubernetes package manager")
        return 0
    cmd, rest = argv[i], argv[:i] + argv[i + 1:]
    cmd = ALIASES.get(cmd, cmd)
    if cmd == "get":
        # helm get's subcommands: values is the one modelled (all, hooks,
        # manifest, metadata, notes are real and refused as not modelled)
        j = next((k for k, a in enumerate(rest) if not a.startswith("-") and (k == 0 or not rest[k - 1].startswith("-")
                                                                               or "=" in rest[k - 1])), None)
        sub = rest[j] if j is not None else None
        if sub in ("all", "hooks", "manifest", "notes"):
            sys.stderr.write("helm stand-in (tests/fakes/kube/helm.py): helm get %s is a real command that the stand-in does not act on\n" % sub)
            return 1
        if sub not in ("values", "metadata"):
            print("This command consists of multiple subcommands which can be used to get extended information about the release")
            return 0
        cmd, rest = "get " + sub, rest[:j] + rest[j + 1:]
    if cmd not in KINDS:
        sys.stderr.write('Error: unknown command "%s" for "helm"\n' % cmd)
        return 1
    try:
        flags, pos = parse(cmd, rest)
        if cmd == "version":
            if flags.get("template"):
                # text/template: the template as it is, {{.Version}} filled
                # in, no newline (helm prints none after a template)
                sys.stdout.write(re.sub(r"\{\{-? *\.Version *-?\}\}", HELM_VERSION, flags["template"]))
            elif flags.get("short"):
                print("%s+g%s" % (HELM_VERSION, HELM_GIT_COMMIT[:7]))
            else:
                print('version.BuildInfo{Version:"%s", GitCommit:"%s", GitTreeState:"clean", GoVersion:"%s"%s}'
                      % (HELM_VERSION, HELM_GIT_COMMIT, HELM_GO_VERSION,
                         ', KubeClientVersion:"%s"' % HELM_KUBE_CLIENT if HELM_KUBE_CLIENT else ""))
            return 0
        if cmd == "upgrade":
            return cmd_upgrade(flags, pos)
        if cmd == "list":
            return cmd_list(flags, pos)
        if cmd == "get values":
            return cmd_get_values(flags, pos)
        if cmd == "get metadata":
            return cmd_get_metadata(flags, pos)
        if cmd == "history":
            return cmd_history(flags, pos)
        if cmd == "rollback":
            return cmd_rollback(flags, pos)
        if cmd == "status":
            if not pos:
                raise Fail('"helm status" requires 1 argument')
            c = client(flags)
            rel = latest(c, flags.get("namespace", "default"), pos[0])
            if rel is None:
                raise Fail("release: not found")
            if flags.get("output") == "json":
                print(json.dumps({k: rel[k] for k in ("name", "namespace", "version", "info", "config")}))
            else:
                sys.stdout.write(status_text(rel))
            return 0
        if cmd == "uninstall":
            # --wait: helm 4's strategies as upgrade's (its value checked,
            # its warning printed); the objects go at once here, so every
            # strategy has nothing to wait for
            wait_strategy(flags)
            c = client(flags)
            ns = flags.get("namespace", "default")
            rel = latest(c, ns, pos[0]) if pos else None
            if rel is None:
                raise Fail("uninstall: Release not loaded: %s: release: not found" % (pos[0] if pos else ""))
            kube_disk_cache(c)
            h = hooks(rel)
            if h is not None and hasattr(h, "uninstalled"):
                h.uninstalled(c, rel)
            for d in yaml_load_all(rel["manifest"]):
                if isinstance(d, dict) and d.get("kind"):
                    res = resource_for_kind(d.get("apiVersion", ""), d["kind"])
                    try:
                        c.delete(res.path((d["metadata"].get("namespace") or ns) if res.namespaced else None, d["metadata"]["name"]))
                    except APIError:
                        pass
            for r in releases(c, ns):
                if r["name"] == pos[0]:
                    c.delete(R("secrets").path(ns, "sh.helm.release.v1.%s.v%d" % (r["name"], r["version"])))
            print('release "%s" uninstalled' % pos[0])
            return 0
        raise Fail('unknown command "%s" for "helm"' % cmd)
    except FlagNotModelled as e:
        sys.stderr.write("helm stand-in (tests/fakes/kube/helm.py): %s\n" % e)
        return 1
    except (Fail, FlagError) as e:
        sys.stderr.write("Error: %s\n" % e)
        return 1
    except ConnError as e:
        sys.stderr.write("Error: %s: %s\n" % (UNREACHABLE, e))
        return 1
    except APIError as e:
        sys.stderr.write("Error: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
