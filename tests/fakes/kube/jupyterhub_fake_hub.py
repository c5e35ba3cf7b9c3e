# The stand-ins the fake kubelet puts into the hub's JupyterHub
# (tests/fakes/kube/chart_jupyterhub.py writes this file beside the hub's
# jupyterhub_config.py, with spawner.json, and the config imports it).  It
# runs inside Debian's real JupyterHub 3.0, as the hub's user (uid 1000),
# and acts out what the chart's hub image has and Debian's package lacks:
#
#   - NativeAuthenticator's users: the users who signed up and whom an admin
#     approved are the lines NAME:PASSWORD of the knob hub-native-users
#     (read at each login); anyone else, or a wrong password, is refused;
#   - JupyterHub 5's allow rules, for a hub image of z2jh 4.x (JupyterHub
#     5.5.0; jupyterhub/auth.py Authenticator.check_allowed at 5.5.0): a
#     user is let in when Authenticator.allow_all is true or the name is in
#     allowed_users (to which the hub adds the admins, and the users it
#     already has, only when allowed_users is not empty -- what JupyterHub
#     3.0 does too).  JupyterHub 4 and older let in everyone while
#     allowed_users was empty;
#   - KubeSpawner (6.2.0 in z2jh 3.3.8's hub image, 7.0.0 in 4.4.0's;
#     kubespawner/spawner.py and slugs.py at those tags): the names of a
#     user's pod and home claim from the templates (pod_name_template,
#     pvc_name_template: the chart's singleuser.storage.dynamic
#     .pvcNameTemplate, else KubeSpawner's own), `{username}` and the other
#     fields by the slug scheme (6: escaped, "escape"; 7: slug_scheme, "safe"
#     by default), the claim name remembered in the spawner's state (7:
#     remember_pvc_name) and, for a state written by KubeSpawner 6, the
#     claim of the escaped name used when it exists and the new one does not
#     (7: handle_legacy_names); the claim made when missing
#     (storage_pvc_ensure), the pod with the claim as the home volume at
#     singleuser.storage.homeMountPath (subPath: dynamic.subPath) and the
#     profile's node selector, resources, environment and runtime class;
#     the calls go to the API server as the hub's service account (a client
#     certificate the kubelet made for system:serviceaccount:NS:hub; the
#     real hub uses that account's token), so the chart's Role hub applies.
#
# Where it differs, on purpose: the notebook server is acted out here, in
# the hub's process (no pod network): once the pod runs, start() returns a
# server on 127.0.0.1 that answers every path with the pod's and the
# claim's names (the notebook's container is the kubelet's placeholder,
# which logs what its home holds); stop() deletes the pod and keeps the
# claim, as KubeSpawner does.  No events, no named servers, no extra
# containers.
import asyncio
import hashlib
import hmac
import json
import os
import re
import ssl
import string
import urllib.error
import urllib.request

from jupyterhub.auth import Authenticator, DummyAuthenticator, PAMAuthenticator
from jupyterhub.spawner import Spawner
from tornado import httpserver, netutil, web
from traitlets import Bool

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE_USERS = "/etc/fake-kubernetes/knobs/hub-native-users"


def settings():
    with open(os.path.join(HERE, "spawner.json"), encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- authenticators


class FakeNativeAuthenticator(Authenticator):
    """NativeAuthenticator's approved users, from the knob."""

    async def authenticate(self, handler, data):
        name = self.normalize_username(data.get("username", ""))
        try:
            with open(NATIVE_USERS, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        for ln in lines:
            user, _, password = ln.partition(":")
            if user == name and hmac.compare_digest(password.encode(), data.get("password", "").encode()):
                return name
        return None


class JupyterHub5Allow(Authenticator):
    """JupyterHub 5's check: allow_all, or a name in allowed_users (put
    before an authenticator class, authenticator() below)."""

    allow_all = Bool(False, config=True)

    def check_allowed(self, username, authentication=None):
        return bool(self.allow_all) or username in self.allowed_users


BASES = {"native": FakeNativeAuthenticator, "pam": PAMAuthenticator, "dummy": DummyAuthenticator}


def authenticator(kind, jupyterhub5):
    base = BASES[kind]
    if not jupyterhub5:
        return base
    return type("JupyterHub5" + base.__name__, (JupyterHub5Allow, base), {"__module__": __name__})


# ---------------------------------------------------------------- slugs

SAFE = set(string.ascii_lowercase + string.digits)


def escaped(name):
    """KubeSpawner 6's slug (7's "escape" scheme): every character but a-z
    0-9 becomes '-' and the hex of its UTF-8 bytes, then all lower case."""
    out = []
    for ch in name:
        if ch in SAFE:
            out.append(ch)
        else:
            out.extend("-%02X" % b for b in ch.encode("utf-8"))
    return "".join(out).lower()


def _valid_object_name(s):
    return (0 < len(s) <= 63 and s[0] in string.ascii_lowercase and s[-1] in SAFE
            and re.fullmatch(r"[a-z0-9-]+", s) is not None)


def _safe_part(name, max_length):
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).lstrip("-")[:max_length].rstrip("-")
    if s and s[0] not in string.ascii_lowercase:
        s = "x-" + s[:max_length - 2]
    return s or "x"


def _hashed(name, max_length=32):
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return "%s---%s" % (_safe_part(name, max_length - 11), digest)


def safe(name, max_length=None):
    """KubeSpawner 7's "safe" slug: the name itself when it is a valid
    object name without '--' (and short enough), else a cleaned prefix, '---'
    and 8 hex digits of its SHA-256."""
    if "--" not in name and _valid_object_name(name) and (max_length is None or len(name) <= max_length):
        return name
    return _hashed(name, max_length or 32)


# ---------------------------------------------------------------- the spawner


class FakeKubeSpawner(Spawner):
    """KubeSpawner 6 or 7 as the hub image has it (spawner.json)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.s = settings()
        self.major = self.s["kubespawner"]
        self.scheme = self.s.get("slug_scheme") or ("safe" if self.major >= 7 else "escape")
        self.namespace = self.s["namespace"]
        self.pod_name = self.expand(self.s["pod_name_template"])
        self.pvc_name = self.expand(self.s["pvc_name_template"])
        self._pvc_exists = False
        self._state_version = None
        self._http = None

    def fields(self, scheme):
        raw = self.user.name
        if self.major < 7:
            return {"username": escaped(raw), "servername": escaped(self.name or ""),
                    "unescaped_username": raw, "userid": self.user.id}
        f = {"userid": self.user.id, "unescaped_username": raw, "escaped_username": escaped(raw),
             "safe_username": safe(raw, 48), "pod_name": getattr(self, "pod_name", "pod_name_unavailable!"),
             "pvc_name": getattr(self, "pvc_name", "pvc_name_unavailable!")}
        if scheme == "escape":
            f.update(username=f["escaped_username"], servername="", user_server=f["escaped_username"])
        else:
            f.update(username=f["safe_username"], servername="", user_server=f["safe_username"])
        return f

    def expand(self, template, scheme=None):
        out = template.format(**self.fields(scheme or self.scheme))
        return out if template.endswith("-") else out.rstrip("-")

    # ---- the API, as the hub's service account

    def _call(self, method, path, body=None):
        ctx = ssl.create_default_context(cafile=self.s["ca"])
        ctx.check_hostname = False
        ctx.load_cert_chain(self.s["cert"], self.s["key"])
        req = urllib.request.Request(self.s["server"] + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, {}

    async def api(self, method, path, body=None):
        return await asyncio.get_running_loop().run_in_executor(None, self._call, method, path, body)

    def path(self, kind, name=""):
        return "/api/v1/namespaces/%s/%s%s" % (self.namespace, kind, "/" + name if name else "")

    async def exists(self, kind, name):
        st, _ = await self.api("GET", self.path(kind, name))
        return st == 200

    # ---- state

    def get_state(self):
        state = super().get_state()
        state.update(pod_name=self.pod_name, namespace=self.namespace)
        if self.major >= 7:
            state["kubespawner_version"] = "7.0.0"
            if self._pvc_exists:
                state["pvc_name"] = self.pvc_name
        return state

    def load_state(self, state):
        super().load_state(state)
        if "pod_name" in state:
            self.pod_name = state["pod_name"]
        if self.major < 7:
            return
        if "pvc_name" in state:
            self.pvc_name = state["pvc_name"]
            self._pvc_exists = True
        if "kubespawner_version" in state:
            self._state_version = state["kubespawner_version"]
        elif state:
            self._state_version = "unknown"

    def clear_state(self):
        super().clear_state()
        self.pod_name = self.expand(self.s["pod_name_template"])

    # ---- start, poll, stop

    def profile(self):
        profiles = self.s.get("profiles") or []
        want = (self.user_options or {}).get("profile")
        for p in profiles:
            if want and p.get("slug") == want:
                return p
        for p in profiles:
            if p.get("default"):
                return p
        return profiles[0] if profiles else {}

    def pod_manifest(self):
        o = self.profile().get("kubespawner_override") or {}
        vol = self.expand(self.s["volume_name_template"])
        mount = {"name": vol, "mountPath": self.s["home"]}
        if self.s.get("sub_path"):
            mount["subPath"] = self.expand(self.s["sub_path"])
        res = {"requests": {}, "limits": {}}
        for key, kind, what in (("cpu_guarantee", "requests", "cpu"), ("cpu_limit", "limits", "cpu"),
                                ("mem_guarantee", "requests", "memory"), ("mem_limit", "limits", "memory")):
            if o.get(key) is not None:
                res[kind][what] = str(o[key])
        for k, v in (o.get("extra_resource_limits") or {}).items():
            res["limits"][k] = str(v)
        spec = {"containers": [{"name": "notebook", "image": self.s["image"],
                                "ports": [{"name": "notebook-port", "containerPort": 8888}],
                                "resources": res,
                                "env": [{"name": k, "value": str(v)} for k, v in (o.get("environment") or {}).items()],
                                "volumeMounts": [mount] + list(self.s.get("extra_volume_mounts") or [])}],
                "volumes": [{"name": vol, "persistentVolumeClaim": {"claimName": self.pvc_name}}]
                + list(self.s.get("extra_volumes") or []),
                "restartPolicy": "OnFailure"}
        if o.get("node_selector"):
            spec["nodeSelector"] = dict(o["node_selector"])
        spec.update((o.get("extra_pod_config") or {}))
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": self.pod_name,
                             "labels": {"component": "singleuser-server", "app": "jupyterhub",
                                        "hub.jupyter.org/servername": self.name or ""},
                             "annotations": {"hub.jupyter.org/username": self.user.name}},
                "spec": spec}

    async def start(self):
        if (self.major >= 7 and not self._pvc_exists and self._state_version == "unknown"):
            legacy = self.expand(self.s["pvc_name_template"], "escape")
            if legacy != self.pvc_name and not await self.exists("persistentvolumeclaims", self.pvc_name) \
                    and await self.exists("persistentvolumeclaims", legacy):
                self.log.warning("Using legacy pvc %s for %s", legacy, self.user.name)
                self.pvc_name = legacy
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": self.pvc_name, "labels": {"component": "singleuser-storage", "app": "jupyterhub"},
                            "annotations": {"hub.jupyter.org/username": self.user.name}},
               "spec": {"accessModes": self.s.get("access_modes") or ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": self.s.get("capacity") or "10Gi"}}}}
        if self.s.get("storage_class"):
            pvc["spec"]["storageClassName"] = self.s["storage_class"]
        st, _ = await self.api("POST", self.path("persistentvolumeclaims"), pvc)
        if st not in (200, 201, 409):
            raise RuntimeError("could not create PVC %s: HTTP %d" % (self.pvc_name, st))
        self._pvc_exists = True
        st, _ = await self.api("POST", self.path("pods"), self.pod_manifest())
        if st not in (200, 201):
            raise RuntimeError("could not create pod %s: HTTP %d" % (self.pod_name, st))
        for _ in range(int(self.start_timeout)):
            st, pod = await self.api("GET", self.path("pods", self.pod_name))
            if st == 200 and (pod.get("status") or {}).get("phase") == "Running":
                break
            await asyncio.sleep(1)
        else:
            raise TimeoutError("pod %s did not start in %s seconds" % (self.pod_name, self.start_timeout))
        app = web.Application([(r".*", Answer, {"spawner": self})])
        socks = netutil.bind_sockets(0, "127.0.0.1")
        self._http = httpserver.HTTPServer(app)
        self._http.add_sockets(socks)
        return ("127.0.0.1", socks[0].getsockname()[1])

    async def poll(self):
        if self._http is None:
            return 0
        st, _ = await self.api("GET", self.path("pods", self.pod_name))
        return None if st == 200 else 1

    async def stop(self, now=False):
        if self._http is not None:
            self._http.stop()
            self._http = None
        await self.api("DELETE", self.path("pods", self.pod_name))


class Answer(web.RequestHandler):
    def initialize(self, spawner):
        self.spawner = spawner

    def get(self):
        self.write({"pod": self.spawner.pod_name, "pvc": self.spawner.pvc_name})
