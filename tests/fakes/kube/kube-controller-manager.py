# kube-controller-manager (fake image) for provision's tests, run by the
# fake kubelet from the static pod manifest kubeadm wrote, with its flags
# (--kubeconfig, --cluster-signing-cert-file/--cluster-signing-key-file,
# --allocate-node-cidrs, --cluster-cidr, --node-cidr-mask-size).
#
# The controllers it acts out, as the Kubernetes documentation describes
# them ("Controllers", "Authenticating with Bootstrap Tokens" (bootstrap
# signer, token cleaner), "TLS bootstrapping" (CSR approving and signing
# for kubernetes.io/kube-apiserver-client-kubelet), "Nodes" (node
# lifecycle: heartbeats, not-ready/unreachable taints, 40 s grace),
# "DaemonSet", "Deployments"/"ReplicaSet", "Garbage Collection",
# "Namespaces" (termination)):
#   bootstrapsigner   cluster-info gets one jws-kubeconfig-ID per valid
#                     signing token, and loses it when the token goes;
#   tokencleaner      expired bootstrap token Secrets are deleted;
#   csrapproving/csrsigning  node client CSRs from bootstrap tokens and
#                     nodes are approved and signed by the cluster CA;
#   nodeipam          each Node gets a /24 (--node-cidr-mask-size) of
#                     --cluster-cidr when --allocate-node-cidrs=true;
#   nodelifecycle     a Node without a status update for 40 s becomes
#                     Ready=Unknown; NotReady/Unknown nodes get the
#                     node.kubernetes.io/not-ready or unreachable NoSchedule
#                     taint, Ready nodes lose them;
#   daemonset         one pod per eligible node (nodeSelector, required
#                     node affinity, tolerations against NoSchedule taints),
#                     bound to the node; a changed template replaces pods;
#                     pods of its namespace that match its selector and
#                     have no controller (a DaemonSet deleted with
#                     --cascade=orphan left them) are adopted: it becomes
#                     their controller owner, then replaces them when their
#                     controller-revision-hash is not its template's (the
#                     controller's ClaimPods; "Replacing pods" of a
#                     DaemonSet's docs).  Not copied: maxUnavailable
#                     (stale pods are replaced all at once);
#   deployment        a ReplicaSet per template and its pods (left to the
#                     scheduler); status replicas/ready/available;
#   garbagecollector  pods whose owner is gone are deleted; so are the
#                     Secrets of kube-system owned by a bootstrap token
#                     the tokencleaner deleted (kubeadm's kubeadm-certs);
#   namespace         a terminating namespace is emptied, then removed;
#   persistentvolume-binder  a PersistentVolume whose claimRef names an
#                     existing claim (namespace, name, uid) -- how an
#                     external provisioner hands over what it made -- is
#                     bound to it: the claim gets spec.volumeName and
#                     status Bound (access modes, capacity), the volume
#                     status Bound; a Bound volume whose claim is gone
#                     becomes Released (its provisioner then deletes it
#                     when the reclaim policy is Delete); a volume without
#                     claimRef is Available.  Not acted out: matching
#                     claims to unbound volumes by size and class.
# Not acted out: service accounts and their tokens, endpoints, jobs,
# statefulsets, leader election (one instance only).
#
# The loop: every second the Nodes are listed (node lifecycle needs them:
# heartbeats age without any change in the API) and every controller runs
# when the list's resourceVersion (the store's) shows a change that is not
# a node's status (a kubelet's heartbeat), when a bootstrap token expired,
# after an error, and at least every RESYNC seconds -- what the real
# controllers' informers would wake them up for.  Within one pass, a list
# is not asked for again while the pass changed nothing.

R = resource_by_name
TOKEN_TYPE = "bootstrap.kubernetes.io/token"
GRACE = 40.0
RESYNC = 30.0


def parse_flags(argv):
    flags = {}
    for a in argv:
        if a.startswith("--"):
            k, eq, v = a[2:].partition("=")
            flags[k] = v if eq else "true"
    return flags


def tolerates(tols, taint):
    for t in tols or []:
        if t.get("operator") == "Exists" and not t.get("key"):
            if not t.get("effect") or t.get("effect") == taint.get("effect"):
                return True
            continue
        if t.get("key") != taint.get("key"):
            continue
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def node_fits(spec, node, daemon=False):
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms"))
    if terms:
        ok_any = False
        for term in terms:
            ok = True
            for ex in term.get("matchExpressions") or []:
                v = labels.get(ex["key"])
                op = ex.get("operator")
                vals = ex.get("values") or []
                if op == "In" and v not in vals or op == "NotIn" and v in vals or \
                        op == "Exists" and v is None or op == "DoesNotExist" and v is not None:
                    ok = False
            for ex in term.get("matchFields") or []:
                if ex.get("key") == "metadata.name" and ex.get("operator") == "In" and node["metadata"]["name"] not in ex.get("values", []):
                    ok = False
            ok_any = ok_any or ok
        if not ok_any:
            return False
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(spec.get("tolerations"), taint):
            if daemon and taint.get("key") in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable") and \
                    taint.get("effect") == "NoSchedule":
                continue  # the DaemonSet controller adds these tolerations to its pods
            return False
    if (node.get("spec") or {}).get("unschedulable") and not daemon:
        return False
    return True


def template_hash(tmpl):
    return hashlib.sha256(json.dumps(tmpl, sort_keys=True).encode()).hexdigest()[:10]


def rand5():
    return "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def ready_cond(node):
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return None


def pod_ready(p):
    for c in (p.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


class CM:
    def __init__(self, flags):
        self.flags = flags
        self.c = Client.from_kubeconfig(flags.get("kubeconfig", "/etc/kubernetes/controller-manager.conf"), timeout=10,
                                        keepalive=True)
        self.cidr = flags.get("cluster-cidr") if flags.get("allocate-node-cidrs") == "true" else None
        self.mask = int(flags.get("node-cidr-mask-size", "24"))
        self.lists = {}  # (path, query) -> (client writes then, items): this pass's lists
        self.expiry = None  # the earliest expiration of a bootstrap token seen

    def items(self, res, ns=None, query=None):
        key = (res.path(ns), json.dumps(query, sort_keys=True))
        got = self.lists.get(key)
        if got and got[0] == self.c.writes:
            return got[1]  # nothing was written since: the same answer
        items = self.c.get(res.path(ns), query)["items"]
        self.lists[key] = (self.c.writes, items)
        return items

    def pods_in(self, ns):
        """The pods of namespace ns: from this pass's list of all pods while
        nothing was written since (the same answer), else asked for."""
        got = self.lists.get((R("pods").path(), "null"))
        if got and got[0] == self.c.writes:
            return [p for p in got[1] if p["metadata"].get("namespace") == ns]
        return self.items(R("pods"), ns)

    # -- tokens

    def tokens(self):
        toks = {}
        self.expiry = None
        gone = set()
        for s in self.items(R("secrets"), "kube-system", {"fieldSelector": "type=" + TOKEN_TYPE}):
            d = {k: unb64(v) for k, v in (s.get("data") or {}).items()}
            exp = d.get("expiration")
            if exp and parse_rfc3339(exp) <= now():
                self.c.delete(R("secrets").path("kube-system", s["metadata"]["name"]))
                klog("I", "Deleted expired bootstrap token", secret=s["metadata"]["name"])
                gone.add(s["metadata"].get("uid"))
                continue
            if exp:
                t = parse_rfc3339(exp)
                self.expiry = t if self.expiry is None else min(self.expiry, t)
            if "token-id" in d and d.get("usage-bootstrap-signing") == "true":
                toks[d["token-id"]] = d["token-secret"]
        if gone:
            # the garbage collector's part: Secrets owned by a token that
            # went (kubeadm's kubeadm-certs, owned by its 2 h token)
            for s in self.items(R("secrets"), "kube-system"):
                if any(o.get("uid") in gone for o in s["metadata"].get("ownerReferences") or []):
                    try:
                        self.c.delete(R("secrets").path("kube-system", s["metadata"]["name"]))
                    except APIError:
                        pass
        try:
            cm = self.c.get(R("configmaps").path("kube-public", "cluster-info"))
        except APIError as e:
            if e.code == 404:
                return
            raise
        data = dict(cm.get("data") or {})
        kc = data.get("kubeconfig", "")
        want = {"kubeconfig": kc}
        for tid, tsec in toks.items():
            want["jws-kubeconfig-" + tid] = jws_detached(kc, tid, tsec)
        keep = {k: v for k, v in data.items() if not k.startswith("jws-kubeconfig-")}
        keep.update(want)
        if keep != data:
            patch = {"data": {k: keep.get(k) for k in set(data) | set(keep)}}
            self.c.patch(R("configmaps").path("kube-public", "cluster-info"), patch)

    # -- certificates

    def csrs(self):
        for csr in self.items(R("csr")):
            spec, st = csr.get("spec") or {}, csr.get("status") or {}
            if st.get("certificate"):
                continue
            name = csr["metadata"]["name"]
            if spec.get("signerName") != "kubernetes.io/kube-apiserver-client-kubelet":
                continue
            req = unb64(spec["request"])
            out = openssl("req", "-noout", "-subject", "-nameopt", "RFC2253", data=req.encode()).decode()
            subj = dict(p.split("=", 1) for p in out.strip().split("=", 1)[1].split(",") if "=" in p)
            groups = spec.get("groups") or []
            approved = any(c.get("type") == "Approved" for c in st.get("conditions") or [])
            if not approved:
                if subj.get("O") == "system:nodes" and subj.get("CN", "").startswith("system:node:") and \
                        ("system:bootstrappers" in groups or "system:nodes" in groups):
                    csr["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved",
                                                     "message": "Auto approving kubelet client certificate after SubjectAccessReview.",
                                                     "lastUpdateTime": rfc3339(), "lastTransitionTime": rfc3339()}]}
                    csr = self.c.put(R("csr").path(None, name, "approval"), csr)
                    approved = True
            if approved:
                cert = sign(self.flags["cluster-signing-cert-file"], self.flags["cluster-signing-key-file"], req,
                            subj.get("CN", ""), [subj["O"]] if subj.get("O") else [], usage="client")
                csr["status"] = dict(csr.get("status") or {}, certificate=b64(cert))
                self.c.put(R("csr").path(None, name, "status"), csr)
                klog("I", "Signed the certificate signing request", csr=name, subject=subj.get("CN"))

    # -- nodes

    def nodes(self, nodes=None):
        w = self.c.writes
        nodes = self.items(R("nodes")) if nodes is None else nodes
        used = {(n.get("spec") or {}).get("podCIDR") for n in nodes}
        for n in nodes:
            name = n["metadata"]["name"]
            spec = n.get("spec") or {}
            patch = {}
            if self.cidr and not spec.get("podCIDR"):
                cidr = self.next_cidr(used)
                if cidr:
                    used.add(cidr)
                    patch["podCIDR"] = cidr
                    patch["podCIDRs"] = [cidr]
                    klog("I", "Set node PodCIDR", node=name, podCIDRs=[cidr])
            rc = ready_cond(n)
            hb = parse_rfc3339(rc["lastHeartbeatTime"]) if rc and rc.get("lastHeartbeatTime") else None
            if rc and hb and now() - hb > GRACE and rc.get("status") != "Unknown":
                conds = []
                for c in n["status"]["conditions"]:
                    c = dict(c, status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                             lastTransitionTime=rfc3339())
                    conds.append(c)
                self.c.patch(R("nodes").path(None, name, "status"), {"status": {"conditions": conds}})
                rc = conds[-1]
            taints = [t for t in spec.get("taints") or [] if t.get("key") not in ("node.kubernetes.io/not-ready",
                                                                                  "node.kubernetes.io/unreachable")]
            status = rc.get("status") if rc else "False"
            if status == "False":
                taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
            elif status == "Unknown":
                taints.append({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"})
            if json.dumps(taints, sort_keys=True) != json.dumps(spec.get("taints") or [], sort_keys=True):
                patch["taints"] = taints or None
            if patch:
                self.c.patch(R("nodes").path(None, name), {"spec": patch})
        if self.c.writes == w:
            return nodes
        # the Nodes as they are now, but only those this pass looked at: one
        # that registered meanwhile gets its podCIDR in the next pass before
        # a DaemonSet pod goes there (the real nodeipam controller sets it
        # within milliseconds of the Node's creation; flanneld on a Node
        # without one exits: "pod cidr not assigned")
        seen = {n["metadata"]["name"] for n in nodes}
        return [n for n in self.items(R("nodes")) if n["metadata"]["name"] in seen]

    def next_cidr(self, used):
        base, bits = self.cidr.split("/")
        a = [int(x) for x in base.split(".")]
        start = a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3]
        count = 1 << (self.mask - int(bits))
        for i in range(count):
            v = start + (i << (32 - self.mask))
            c = "%d.%d.%d.%d/%d" % (v >> 24 & 255, v >> 16 & 255, v >> 8 & 255, v & 255, self.mask)
            if c not in used:
                return c
        klog("E", "Error allocating a pod CIDR: CIDR allocation failed; there are no remaining CIDRs left to allocate")
        return None

    # -- workloads

    def daemonsets(self, nodes, pods):
        for ds in self.items(R("daemonsets")):
            ns, name = ds["metadata"]["namespace"], ds["metadata"]["name"]
            tmpl = (ds.get("spec") or {}).get("template") or {}
            h = template_hash(tmpl)
            mine = [p for p in pods if any(o.get("uid") == ds["metadata"]["uid"] for o in p["metadata"].get("ownerReferences") or [])]
            for p in pods:
                pm = p["metadata"]
                if pm.get("namespace") != ns or pm.get("deletionTimestamp") or \
                        any(o.get("controller") for o in pm.get("ownerReferences") or []) or \
                        not label_selector_matches((ds.get("spec") or {}).get("selector"), pm.get("labels")):
                    continue
                ref = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name, "uid": ds["metadata"]["uid"],
                       "controller": True, "blockOwnerDeletion": True}
                try:
                    mine.append(self.c.patch(R("pods").path(ns, pm["name"]),
                                             {"metadata": {"ownerReferences": (pm.get("ownerReferences") or []) + [ref]}}))
                except APIError:
                    pass
            by_node = {}
            for p in mine:
                by_node.setdefault(p["spec"].get("nodeName"), []).append(p)
            eligible = [n for n in nodes if node_fits(tmpl.get("spec") or {}, n, daemon=True)]
            for n in eligible:
                nn = n["metadata"]["name"]
                cur = by_node.pop(nn, [])
                stale = [p for p in cur if (p["metadata"].get("labels") or {}).get("controller-revision-hash") != h]
                for p in stale:
                    self.c.delete(R("pods").path(ns, p["metadata"]["name"]))
                if len(cur) - len(stale) == 0:
                    pod = {"metadata": {"name": "%s-%s" % (name, rand5()), "namespace": ns,
                                        "labels": dict((tmpl.get("metadata") or {}).get("labels") or {},
                                                       **{"controller-revision-hash": h, "pod-template-generation": "1"}),
                                        "annotations": (tmpl.get("metadata") or {}).get("annotations") or {},
                                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                                             "uid": ds["metadata"]["uid"], "controller": True,
                                                             "blockOwnerDeletion": True}]},
                           "spec": dict(tmpl.get("spec") or {}, nodeName=nn)}
                    self.c.post(R("pods").path(ns), pod)
            for nn, ps in by_node.items():
                for p in ps:
                    self.c.delete(R("pods").path(ns, p["metadata"]["name"]))
            mine = [p for p in self.pods_in(ns) if any(o.get("uid") == ds["metadata"]["uid"]
                                                                for o in p["metadata"].get("ownerReferences") or [])]
            ready = sum(1 for p in mine if pod_ready(p))
            st = {"currentNumberScheduled": len(mine), "desiredNumberScheduled": len(eligible), "numberMisscheduled": 0,
                  "numberReady": ready, "numberAvailable": ready,
                  # the pods of the current template (pkg/controller/daemon: by controller-revision-hash)
                  "updatedNumberScheduled": sum(1 for p in mine if (p["metadata"].get("labels") or {}).get("controller-revision-hash") == h),
                  "observedGeneration": ds["metadata"].get("generation", 1)}
            if len(eligible) - ready:
                st["numberUnavailable"] = len(eligible) - ready
            if {k: v for k, v in (ds.get("status") or {}).items()} != st:
                self.c.put(R("daemonsets").path(ns, name, "status"), dict(ds, status=st))

    def deployments(self, pods):
        for d in self.items(R("deployments")):
            ns, name = d["metadata"]["namespace"], d["metadata"]["name"]
            spec = d.get("spec") or {}
            tmpl = spec.get("template") or {}
            h = template_hash(tmpl)
            rsname = "%s-%s" % (name, h[:10])
            replicas = spec.get("replicas", 1)
            rss = [r for r in self.items(R("replicasets"), ns) if any(o.get("uid") == d["metadata"]["uid"]
                                                                       for o in r["metadata"].get("ownerReferences") or [])]
            rs = next((r for r in rss if r["metadata"]["name"] == rsname), None)
            for old in rss:
                if old["metadata"]["name"] != rsname:
                    self.c.delete(R("replicasets").path(ns, old["metadata"]["name"]))
            if rs is None:
                rs = self.c.post(R("replicasets").path(ns), {
                    "metadata": {"name": rsname, "namespace": ns,
                                 "labels": dict((tmpl.get("metadata") or {}).get("labels") or {}, **{"pod-template-hash": h[:10]}),
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                      "uid": d["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
                    "spec": {"replicas": replicas, "selector": spec.get("selector"), "template": tmpl}})
            elif (rs.get("spec") or {}).get("replicas") != replicas:
                rs = self.c.patch(R("replicasets").path(ns, rsname), {"spec": {"replicas": replicas}})
            mine = [p for p in pods if any(o.get("uid") == rs["metadata"]["uid"] for o in p["metadata"].get("ownerReferences") or [])]
            for p in mine[replicas:]:
                self.c.delete(R("pods").path(ns, p["metadata"]["name"]))
            for _ in range(replicas - len(mine)):
                self.c.post(R("pods").path(ns), {
                    "metadata": {"name": "%s-%s" % (rsname, rand5()), "namespace": ns,
                                 "labels": dict((tmpl.get("metadata") or {}).get("labels") or {}, **{"pod-template-hash": h[:10]}),
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rsname,
                                                      "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
                    "spec": tmpl.get("spec") or {}})
            mine = [p for p in self.pods_in(ns) if any(o.get("uid") == rs["metadata"]["uid"]
                                                                for o in p["metadata"].get("ownerReferences") or [])]
            ready = sum(1 for p in mine if pod_ready(p))
            avail = ready >= replicas - 1 if replicas > 1 else ready >= replicas
            st = {"observedGeneration": d["metadata"].get("generation", 1), "replicas": len(mine), "updatedReplicas": len(mine),
                  "readyReplicas": ready, "availableReplicas": ready,
                  "conditions": [{"type": "Available", "status": "True" if avail else "False",
                                  "reason": "MinimumReplicasAvailable" if avail else "MinimumReplicasUnavailable",
                                  "message": "Deployment has minimum availability." if avail else
                                  "Deployment does not have minimum availability."},
                                 {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                                  "message": 'ReplicaSet "%s" has successfully progressed.' % rsname}]}
            if ready < len(mine):
                st["unavailableReplicas"] = len(mine) - ready
            old = dict(d.get("status") or {})
            if json.dumps({k: v for k, v in old.items() if k != "conditions"}, sort_keys=True) != \
                    json.dumps({k: v for k, v in st.items() if k != "conditions"}, sort_keys=True) or \
                    [c["status"] for c in old.get("conditions", [])] != [c["status"] for c in st["conditions"]]:
                for c in st["conditions"]:
                    c["lastUpdateTime"] = c["lastTransitionTime"] = rfc3339()
                self.c.put(R("deployments").path(ns, name, "status"), dict(d, status=st))
            rst = {"replicas": len(mine), "readyReplicas": ready, "availableReplicas": ready, "fullyLabeledReplicas": len(mine),
                   "observedGeneration": rs["metadata"].get("generation", 1)}
            if (rs.get("status") or {}) != rst:
                self.c.put(R("replicasets").path(ns, rsname, "status"), dict(rs, status=rst))

    def gc(self, pods):
        uids = set()
        for res in (R("daemonsets"), R("replicasets"), R("nodes"), R("deployments")):
            uids |= {o["metadata"]["uid"] for o in self.items(res)}
        for p in pods:
            refs = p["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "Node" for o in refs):
                continue  # mirror pods: the kubelet owns them
            if refs and not any(o.get("uid") in uids for o in refs):
                try:
                    self.c.delete(R("pods").path(p["metadata"]["namespace"], p["metadata"]["name"]))
                except APIError:
                    pass

    def namespaces(self):
        for ns in self.items(R("namespaces")):
            if (ns.get("status") or {}).get("phase") != "Terminating":
                continue
            name = ns["metadata"]["name"]
            left = 0
            for r in RESOURCE_LIST:
                if not r.namespaced:
                    continue
                for o in self.items(r, name):
                    left += 1
                    try:
                        self.c.delete(r.path(name, o["metadata"]["name"]))
                    except APIError:
                        pass
            if not left:
                # a second delete of an empty terminating namespace removes it
                try:
                    self.c.delete(R("namespaces").path(None, name))
                except APIError:
                    pass

    def volumes(self):
        claims = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in self.items(R("persistentvolumeclaims"))}
        for pv in self.items(R("persistentvolumes")):
            name, spec = pv["metadata"]["name"], pv.get("spec") or {}
            phase = (pv.get("status") or {}).get("phase")
            ref = spec.get("claimRef")
            if not ref:
                if phase != "Available":
                    self.c.patch(R("persistentvolumes").path(None, name, "status"), {"status": {"phase": "Available"}})
                continue
            pvc = claims.get((ref.get("namespace"), ref.get("name")))
            if pvc is None or (ref.get("uid") and pvc["metadata"].get("uid") != ref.get("uid")):
                if phase == "Bound":
                    self.c.patch(R("persistentvolumes").path(None, name, "status"), {"status": {"phase": "Released"}})
                    klog("I", "volume is released", volume=name)
                continue
            vn = (pvc.get("spec") or {}).get("volumeName")
            if vn and vn != name:
                continue
            md = pvc["metadata"]
            if not vn:
                self.c.patch(R("persistentvolumeclaims").path(md["namespace"], md["name"]), {"spec": {"volumeName": name}})
            if (pvc.get("status") or {}).get("phase") != "Bound":
                self.c.patch(R("persistentvolumeclaims").path(md["namespace"], md["name"], "status"),
                             {"status": {"phase": "Bound", "accessModes": spec.get("accessModes") or [],
                                         "capacity": spec.get("capacity") or {}}})
                klog("I", "claim bound", claim="%s/%s" % (md["namespace"], md["name"]), volume=name)
            if phase != "Bound":
                self.c.patch(R("persistentvolumes").path(None, name, "status"), {"status": {"phase": "Bound"}})

    @staticmethod
    def node_shape(nodes):
        """What of the Nodes the controllers other than node lifecycle read:
        all but their status (and the resourceVersion a heartbeat moves)."""
        return json.dumps([dict({k: v for k, v in n.items() if k != "status"},
                                metadata={k: v for k, v in n["metadata"].items() if k != "resourceVersion"}) for n in nodes],
                          sort_keys=True)

    def pass_all(self):
        self.tokens()
        self.csrs()
        nodes = self.nodes()
        pods = self.items(R("pods"))
        self.daemonsets(nodes, pods)
        pods = self.items(R("pods"))
        self.deployments(pods)
        self.gc(self.items(R("pods")))
        self.namespaces()
        self.volumes()
        return nodes

    def run(self):
        klog("I", "Starting controllers", controllers="bootstrapsigner,tokencleaner,csrapproving,csrsigning,nodeipam,"
             "nodelifecycle,daemonset,deployment,replicaset,garbagecollector,namespace,persistentvolume-binder")
        # after a whole pass: [the resourceVersion up to which every change
        # was seen, the Nodes' shape the controllers saw, when it began]
        seen = None
        while True:
            self.lists = {}
            try:
                lst = self.c.get(R("nodes").path())
                nodes = lst["items"]
                self.lists[(R("nodes").path(), "null")] = (self.c.writes, nodes)
                rv = int(lst["metadata"]["resourceVersion"])
                quiet = False
                if seen is not None and now() - seen[2] < RESYNC and (self.expiry is None or now() < self.expiry):
                    # nothing but heartbeats since: each revision after the
                    # last one seen is the last change of a distinct Node,
                    # and no Node changed but in its status
                    ours = sum(1 for n in nodes if seen[0] < int(n["metadata"].get("resourceVersion") or 0) <= rv)
                    quiet = ours == rv - seen[0] and self.node_shape(nodes) == seen[1]
                if quiet:
                    self.nodes(nodes)
                    seen[0] = rv
                else:
                    seen = None
                    t = now()
                    nodes = self.pass_all()
                    seen = [rv, self.node_shape(nodes), t]
            except ConnError as e:
                klog("E", "Error talking to the API server", err=str(e))
                seen = None
            except APIError as e:
                klog("E", "API error", err=str(e))
                seen = None
            except (RuntimeError, ValueError, KeyError) as e:
                klog("E", "controller error", err="%s: %s" % (type(e).__name__, e))
                seen = None
            time.sleep(1)


def main():
    flags = parse_flags(sys.argv[1:])
    for f in ("kubeconfig",):
        if not os.path.exists(flags.get(f, "")):
            die('E0000 run.go:74] "command failed" err="stat %s: no such file or directory"' % flags.get(f, ""))
    CM(flags).run()


if __name__ == "__main__":
    main()
