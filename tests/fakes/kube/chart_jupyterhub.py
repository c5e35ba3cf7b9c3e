# Stand-in for what the programs of the chart jupyterhub/jupyterhub 3.3.8
# and 4.4.0 (Zero to JupyterHub) do once they run: the hub image
# (quay.io/jupyterhub/k8s-hub) is acted out by the REAL JupyterHub of
# Debian 12 (package jupyterhub 3.0, with node-configurable-http-proxy),
# started by the kubelet on the node the hub pod lands on, so that
# /hub/health, the login page and the REST API are answered by a real hub.
# Copied from the real chart and hub image (z2jh "Configuration
# Reference", jupyterhub_config.py and z2jh.py of the hub image,
# JupyterHub's docs):
#   - the hub reads the chart's values from its Secret (the real hub: the
#     Secret mounted at /usr/local/etc/jupyterhub/secret/values.yaml), here
#     through the API as the hub's service account (ServiceAccount, Role
#     and RoleBinding hub, with the real chart's rules);
#   - hub.config.JupyterHub.authenticator_class: "dummy" (the chart's
#     default) is JupyterHub's DummyAuthenticator, which accepts any
#     password; anything else is a real authenticator (below);
#     hub.config.Authenticator.admin_users / allowed_users as given;
#   - what the hub image's version changes (its tag: z2jh 4.x's hub runs
#     JupyterHub 5.5.0 and KubeSpawner 7.0.0, 3.x's JupyterHub 4.1.6 and
#     KubeSpawner 6.2.0): JupyterHub 5 lets in only users its allow
#     settings name (hub.config.Authenticator.allow_all or allowed_users),
#     and KubeSpawner 7 names pods and claims by its slug_scheme
#     (hub.config.KubeSpawner.slug_scheme, "safe" by default) --
#     tests/fakes/kube/jupyterhub_fake_hub.py, loaded into the hub, acts
#     both out, with the spawner (below);
#   - hub.cookieSecret (hex) is the cookie secret, proxy.secretToken the
#     proxy's API token;
#   - hub.db.type: sqlite-memory is an in-memory database, "other" uses
#     hub.db.url, and a path under a volume mounted in the hub container
#     (hub.extraVolumes / extraVolumeMounts, e.g. a hostPath) is that
#     folder on the node; sqlite-pvc is /srv/jupyterhub/jupyterhub.sqlite;
#   - the hub container runs as uid 1000 (the hub image's user jovyan), so
#     its database folder must be writable by 1000;
#   - the hub answers /hub/health once it runs (the chart's readiness
#     probe): helm --wait waits for it (Chart.ready);
#   - notebooks are spawned as KubeSpawner does (jupyterhub_fake_hub.py):
#     the user's home claim (singleuser.storage: dynamic, the storage class,
#     capacity, the claim's name template) and pod (the profile of
#     singleuser.profileList the spawn asks for, else the default), through
#     the API as the hub's service account.
# Where it differs, on purpose:
#   - no container runtime: the hub is a transient systemd unit
#     fake-jupyterhub-NAMESPACE.service on that node, restarted when the
#     config it was given changes (a new hub pod after an upgrade);
#   - no Services and no kube-proxy: the hub starts its proxy itself
#     (JupyterHub's default, the same configurable-http-proxy program the
#     proxy pod runs) listening on the proxy-public Service's nodePort on
#     the hub's node, where the real chart's proxy pod listens on 8000 and
#     kube-proxy opens the NodePort on every node; the proxy pod is a
#     placeholder;
#   - the Debian package has no NativeAuthenticator, OAuthenticator or
#     LDAPAuthenticator: NativeAuthenticator's approved users are the
#     NAME:PASSWORD lines of the knob hub-native-users; OAuthenticator and
#     LDAPAuthenticator run as JupyterHub's PAMAuthenticator (a real
#     password check, against the node's accounts), logged as such in the
#     hub container's log;
#   - the hub's calls to the API use a client certificate the kubelet makes
#     for system:serviceaccount:NAMESPACE:hub with the cluster CA of the
#     hub's node (a control plane), not the account's token;
#   - the notebook server is acted out in the hub's process (no pod
#     network: it answers the hub and the proxy); the notebook's container
#     is the kubelet's placeholder, which logs what its home holds;
#   - the knob hub-api-token (a token) adds a service "test" with that API
#     token and the admin:users and admin:servers scopes (a test starts and
#     stops servers with it); the REST API reports JupyterHub 3.0 whatever
#     the hub image.

JHUB_UID = 1000
JHUB_DIR = "/var/lib/fake-kubernetes/jupyterhub"
JHUB_REAL_AUTH = {"dummy": "dummy", "dummyauthenticator": "dummy",
                  "jupyterhub.auth.dummyauthenticator": "dummy", "pam": "pam",
                  "jupyterhub.auth.pamauthenticator": "pam", "native": "native",
                  "nativeauthenticator.nativeauthenticator": "native"}
JHUB_CA = "/etc/kubernetes/pki"
# KubeSpawner's own name templates (6.2.0, 7.0.0): the pod's, and the
# claim's when the chart leaves singleuser.storage.dynamic.pvcNameTemplate
# unset (3.3.8 sets claim-{username}{servername}, 4.4.0 does not)
JHUB_POD_NAME = {6: "jupyter-{username}--{servername}", 7: "jupyter-{user_server}"}
JHUB_PVC_NAME = {6: "claim-{username}--{servername}", 7: "claim-{user_server}"}


def jhub_unit(ns):
    return "fake-jupyterhub-%s" % ns


def jhub_values(cl, ns):
    sec = cl.get(R("secrets").path(ns, "hub"))
    if "values.yaml" in (sec.get("data") or {}):
        return yaml_load(unb64(sec["data"]["values.yaml"])) or {}
    return yaml_load((sec.get("stringData") or {}).get("values.yaml", "")) or {}


def jhub_node_port(cl, ns):
    svc = cl.get(R("services").path(ns, "proxy-public"))
    for p in (svc.get("spec") or {}).get("ports") or []:
        if p.get("name") == "http" and p.get("nodePort"):
            return int(p["nodePort"])
    return None


def jhub_db_url(vals, mounts):
    db = (vals.get("hub") or {}).get("db") or {}
    kind = db.get("type") or "sqlite-pvc"
    if kind == "sqlite-memory":
        return "sqlite://", None
    url = db.get("url") if kind == "other" else "sqlite:////srv/jupyterhub/jupyterhub.sqlite"
    if not url:
        raise ContainerFailed("hub.db.type is %s but hub.db.url is not set" % kind)
    if not url.startswith("sqlite:///"):
        raise ContainerFailed("database %s: only SQLite can be acted out here" % url.split(":")[0])
    path = url[len("sqlite:///"):]
    for mpath, vol in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
        mp = mpath.rstrip("/")
        if path.startswith(mp + "/") and vol[0] in ("hostPath", "nfs"):
            host = os.path.join(vol[1], path[len(mp) + 1:])
            return "sqlite:///" + host, os.path.dirname(host)
    raise ContainerFailed("the database folder of %s is not a volume mounted in the hub container" % url)


def jhub_free_port():
    """A free TCP port on 127.0.0.1 (the hub's own API and the proxy's
    API; in the real chart they are the hub and proxy-api Services)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jhub_image_major(image):
    """The chart major of a hub image quay.io/jupyterhub/k8s-hub:X.Y.Z (0: unknown)."""
    tag = image.split("@")[0].rsplit("/", 1)[-1].partition(":")[2]
    m = re.match(r"([0-9]+)\.", tag)
    return int(m.group(1)) if m else 0


def jhub_config(vals, port, db_url, major=3, hub_dir=None):
    hub, proxy = vals.get("hub") or {}, vals.get("proxy") or {}
    conf = hub.get("config") or {}
    cls = str((conf.get("JupyterHub") or {}).get("authenticator_class") or "dummy")
    auth = JHUB_REAL_AUTH.get(cls.lower(), "pam")
    a = conf.get("Authenticator") or {}
    cookie, token = hub.get("cookieSecret"), proxy.get("secretToken")
    if not cookie or not token:
        raise ContainerFailed("hub.cookieSecret and proxy.secretToken must be set (the chart generates them "
                              "when not given; this stand-in does not)")
    lines = [
        "# Written by the fake kubelet for the hub container (tests/fakes/kube/chart_jupyterhub.py).",
        "import sys",
        "sys.path.insert(0, %r)" % (hub_dir or JHUB_DIR),
        "import jupyterhub_fake_hub",
        "c.JupyterHub.ip = '0.0.0.0'",
        "c.JupyterHub.port = %d" % port,
        "c.JupyterHub.hub_ip = '127.0.0.1'",
        "c.JupyterHub.hub_port = %d" % jhub_free_port(),
        "c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:%d'" % jhub_free_port(),
        "c.ConfigurableHTTPProxy.auth_token = %r" % str(token),
        "c.JupyterHub.cookie_secret = bytes.fromhex(%r)" % str(cookie),
        "c.JupyterHub.db_url = %r" % db_url,
        "c.JupyterHub.authenticator_class = jupyterhub_fake_hub.authenticator(%r, %r)" % (auth, major >= 4),
        "c.Authenticator.admin_users = set(%r)" % sorted(str(u) for u in a.get("admin_users") or []),
        "c.JupyterHub.spawner_class = jupyterhub_fake_hub.FakeKubeSpawner",
        "c.Spawner.start_timeout = %d" % int((vals.get("singleuser") or {}).get("startTimeout") or 300),
    ]
    if a.get("allowed_users"):
        lines.append("c.Authenticator.allowed_users = set(%r)" % sorted(str(u) for u in a["allowed_users"]))
    if major >= 4 and "allow_all" in a:
        lines.append("c.Authenticator.allow_all = %r" % bool(a["allow_all"]))
    api_token = knob("hub-api-token")
    if api_token:
        lines += ["c.JupyterHub.services = [{'name': 'test', 'api_token': %r}]" % api_token.strip(),
                  "c.JupyterHub.load_roles = [{'name': 'test', 'scopes': ['admin:users', 'admin:servers'], "
                  "'services': ['test']}]"]
    return "\n".join(lines) + "\n", cls, auth


def jhub_spawner(vals, ns, major, server, hub_dir):
    """spawner.json: what jupyterhub_fake_hub.FakeKubeSpawner does, from the
    chart's values as the hub image's jupyterhub_config.py reads them."""
    su = vals.get("singleuser") or {}
    st = su.get("storage") or {}
    dyn = st.get("dynamic") or {}
    ks = ((vals.get("hub") or {}).get("config") or {}).get("KubeSpawner") or {}
    kmajor = 7 if major >= 4 else 6
    img = su.get("image") or {}
    if st.get("type", "dynamic") != "dynamic":
        raise ContainerFailed("singleuser.storage.type %s: only dynamic storage is acted out here" % st.get("type"))

    def listed(v):
        return list(v.values()) if isinstance(v, dict) else list(v or [])
    return {"namespace": ns, "server": server, "ca": os.path.join(hub_dir, "ca.crt"),
            "cert": os.path.join(hub_dir, "hub-sa.crt"), "key": os.path.join(hub_dir, "hub-sa.key"),
            "kubespawner": kmajor, "slug_scheme": ks.get("slug_scheme"),
            "pod_name_template": ks.get("pod_name_template") or JHUB_POD_NAME[kmajor],
            "pvc_name_template": ks.get("pvc_name_template") or dyn.get("pvcNameTemplate") or JHUB_PVC_NAME[kmajor],
            "volume_name_template": dyn.get("volumeNameTemplate") or "volume-{username}{servername}",
            "home": st.get("homeMountPath") or "/home/jovyan", "sub_path": dyn.get("subPath"),
            "storage_class": dyn.get("storageClass"), "capacity": st.get("capacity"),
            "access_modes": dyn.get("storageAccessModes"),
            "image": "%s:%s" % (img.get("name"), img.get("tag")),
            "profiles": su.get("profileList") or [],
            "extra_volumes": listed(st.get("extraVolumes")), "extra_volume_mounts": listed(st.get("extraVolumeMounts"))}


def jhub_credentials(d, ns):
    """The hub's client certificate for system:serviceaccount:NS:hub, made
    once with the cluster CA of this node (a control plane)."""
    crt, key = os.path.join(d, "hub-sa.crt"), os.path.join(d, "hub-sa.key")
    if not (os.path.exists(crt) and os.path.exists(key)):
        if not os.path.exists(os.path.join(JHUB_CA, "ca.key")):
            raise ContainerFailed("the hub stand-in calls the API with a certificate made with the cluster CA: "
                                  "%s/ca.key is not on this node" % JHUB_CA)
        make_leaf(os.path.join(JHUB_CA, "ca.crt"), os.path.join(JHUB_CA, "ca.key"), key, crt,
                  "system:serviceaccount:%s:hub" % ns, ("system:serviceaccounts", "system:serviceaccounts:" + ns))
    shutil.copyfile(os.path.join(JHUB_CA, "ca.crt"), os.path.join(d, "ca.crt"))
    for f in (crt, key, os.path.join(d, "ca.crt")):
        os.chown(f, JHUB_UID, JHUB_UID)
        os.chmod(f, 0o600)


@image_act("jupyterhub/k8s-hub")
def act_jupyterhub_hub(kubelet, pod, c, argv, env, mounts, log):
    cl = kubelet.client_as(pod)  # the hub's service account (the chart's Role hub)
    ns = pod["metadata"].get("namespace", "default")
    if cl is None:
        raise ContainerFailed("no API yet", 0)
    try:
        vals = jhub_values(cl, ns)
        port = jhub_node_port(cl, ns)
    except APIError as e:
        raise ContainerFailed("cannot read the hub's values: %s" % e) from e
    if port is None:
        raise ContainerFailed("proxy-public has no nodePort (proxy.service.type NodePort and nodePorts.http)")
    db_url, db_dir = jhub_db_url(vals, mounts)
    if db_dir and not os.path.isdir(db_dir):
        raise ContainerFailed('hostPath type check failed: %s is not a directory' % db_dir)
    if db_dir and os.stat(db_dir).st_uid != JHUB_UID and os.stat(db_dir).st_mode & 0o002 == 0:
        kubelet.container_log(log, "sqlite3.OperationalError: unable to open database file (%s is not writable by uid %d)"
                              % (db_dir, JHUB_UID), "stderr")
        raise ContainerFailed("unable to open database file")
    major = jhub_image_major(c.get("image", ""))
    d = os.path.join(JHUB_DIR, ns)
    os.makedirs(d, exist_ok=True)
    os.chown(d, JHUB_UID, JHUB_UID)
    os.chmod(d, 0o700)
    text, cls, auth = jhub_config(vals, port, db_url, major, d)
    spawner = json.dumps(jhub_spawner(vals, ns, major, kubelet.client.server, d), sort_keys=True, indent=1)
    cfg, sp, mod = (os.path.join(d, f) for f in ("jupyterhub_config.py", "spawner.json", "jupyterhub_fake_hub.py"))
    unit = jhub_unit(ns)
    active = subprocess.run(["systemctl", "is-active", "--quiet", unit + ".service"], check=False).returncode == 0
    if read_file(sp, "") != spawner:  # read at each spawn: the hub need not restart for it
        write_file(sp, spawner, 0o600)
        os.chown(sp, JHUB_UID, JHUB_UID)
    if active and jhub_same(read_file(cfg, ""), text):
        return jhub_tick(unit)
    jhub_credentials(d, ns)
    for path, content in ((cfg, text), (mod, globals().get("JHUB_FAKE_HUB_SOURCE", ""))):
        write_file(path, content, 0o600)
        os.chown(path, JHUB_UID, JHUB_UID)
    if auth != cls:
        kubelet.container_log(log, "authenticator_class %s is not in Debian's jupyterhub: running %s in its place" % (cls, auth))
    subprocess.run(["systemctl", "stop", unit + ".service"], capture_output=True, check=False)
    subprocess.run(["systemctl", "reset-failed", unit + ".service"], capture_output=True, check=False)
    r = subprocess.run(["systemd-run", "--unit=" + unit, "--collect", "--quiet", "-p", "User=%d" % JHUB_UID,
                        "-p", "WorkingDirectory=" + d, "-p", "StandardOutput=append:" + log,
                        "-p", "StandardError=append:" + log, "-E", "HOME=" + d,
                        "/usr/bin/jupyterhub", "-f", cfg], capture_output=True, text=True, check=False, timeout=30)
    if r.returncode != 0:
        raise ContainerFailed("failed to start container: %s" % r.stderr.strip(), 128)
    return jhub_tick(unit)


def jhub_same(old, new):
    """The same config but for the loopback ports picked at each start."""
    def strip(t):
        return [ln for ln in t.splitlines() if not ln.startswith(("c.JupyterHub.hub_port", "c.ConfigurableHTTPProxy.api_url"))]
    return strip(old) == strip(new)


def jhub_tick(unit):
    def tick():
        if subprocess.run(["systemctl", "is-active", "--quiet", unit + ".service"], check=False).returncode != 0:
            raise ContainerFailed("jupyterhub exited")
    return tick


@chart_hooks("jupyterhub")
class JupyterHubChart:
    @staticmethod
    def ready(c, rel):
        """The hub Deployment's readiness probe: GET /hub/health on the
        hub's node, through the proxy's port."""
        ns = rel["namespace"]
        try:
            port = jhub_node_port(c, ns)
            dep = c.get(R("deployments").path(ns, "hub"))
            pods = c.get(R("pods").path(ns), {"labelSelector": "component=hub"})["items"]
        except APIError as e:
            return str(e)
        # the Deployment's new pod, not the one it replaces (strategy Recreate)
        st = dep.get("status") or {}
        if st.get("observedGeneration", 0) < dep["metadata"].get("generation", 1) or not st.get("readyReplicas"):
            return "the hub's new pod is not ready"
        hosts = [(p.get("status") or {}).get("hostIP") for p in pods
                 if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
        if not port or not hosts or not hosts[0]:
            return "the hub pod is not running"
        try:
            st, _ = Client("http://%s:%d" % (hosts[0], port), timeout=5).raw("GET", "/hub/health")
        except ConnError as e:
            return "hub health: %s" % e
        return None if st == 200 else "hub health: HTTP %d" % st

    @staticmethod
    def uninstalled(c, rel):
        subprocess.run(["systemctl", "stop", jhub_unit(rel["namespace"]) + ".service"], capture_output=True, check=False)
