# kube-scheduler (fake image) for provision's tests, run by the fake
# kubelet from kubeadm's static pod manifest (--kubeconfig).
#
# What it copies ("Kubernetes Scheduler", "Assigning Pods to Nodes",
# "Taints and Tolerations", "Resource Management for Pods and Containers"):
# pods of the default scheduler without a node are bound (pods/binding) to
# a node that fits: nodeSelector, required node affinity, NoSchedule and
# NoExecute taints against the pod's tolerations, not cordoned, and room
# for the pod's requests of extended resources (nvidia.com/gpu) in the
# node's allocatable; among fitting nodes the one with the fewest pods.
# A pod that fits nowhere gets PodScheduled=False, reason Unschedulable,
# with the real message shape ("0/N nodes are available: ...").
# Every second it lists the pods, and the nodes when a pod waits for one.

R = resource_by_name


def parse_flags(argv):
    flags = {}
    for a in argv:
        if a.startswith("--"):
            k, eq, v = a[2:].partition("=")
            flags[k] = v if eq else "true"
    return flags


def tolerated(tols, taint):
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


def why_not(spec, node, used):
    labels = node["metadata"].get("labels") or {}
    if (node.get("spec") or {}).get("unschedulable"):
        return "node(s) were unschedulable"
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(spec.get("tolerations"), taint):
            return "node(s) had untolerated taint {%s: %s}" % (taint.get("key"), taint.get("value", ""))
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return "node(s) didn't match Pod's node affinity/selector"
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms"))
    if terms:
        def term_ok(term):
            for ex in term.get("matchExpressions") or []:
                v = labels.get(ex["key"])
                op, vals = ex.get("operator"), ex.get("values") or []
                if op == "In" and v not in vals or op == "NotIn" and v in vals or \
                        op == "Exists" and v is None or op == "DoesNotExist" and v is not None:
                    return False
            return True
        if not any(term_ok(t) for t in terms):
            return "node(s) didn't match Pod's node affinity/selector"
    alloc = (node.get("status") or {}).get("allocatable") or {}
    want = {}
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("limits") or {}).items():
            if "/" in k:
                want[k] = want.get(k, 0) + int(v)
    for k, n in want.items():
        have = int(alloc.get(k, "0"))
        if used.get((node["metadata"]["name"], k), 0) + n > have:
            return "Insufficient %s" % k
    return None


def main():
    flags = parse_flags(sys.argv[1:])
    kc = flags.get("kubeconfig", "/etc/kubernetes/scheduler.conf")
    if not os.path.exists(kc):
        die('E0000 run.go:74] "command failed" err="stat %s: no such file or directory"' % kc)
    c = Client.from_kubeconfig(kc, timeout=10, keepalive=True)
    klog("I", "Starting Kubernetes Scheduler", version="v" + FAKE_VERSION)
    reported = {}
    while True:
        try:
            pods = c.get(R("pods").path())["items"]
            if not any(not (p.get("spec") or {}).get("nodeName")
                       and (p.get("spec") or {}).get("schedulerName", "default-scheduler") == "default-scheduler" for p in pods):
                time.sleep(1)
                continue  # no pod to place: the Nodes are not needed
            nodes = c.get(R("nodes").path())["items"]
            count, used = {}, {}
            for p in pods:
                nn = (p.get("spec") or {}).get("nodeName")
                if nn:
                    count[nn] = count.get(nn, 0) + 1
                    for ct in p["spec"].get("containers") or []:
                        for k, v in ((ct.get("resources") or {}).get("limits") or {}).items():
                            if "/" in k:
                                used[(nn, k)] = used.get((nn, k), 0) + int(v)
            for p in pods:
                spec = p.get("spec") or {}
                if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") != "default-scheduler":
                    continue
                reasons = {}
                fit = []
                for n in nodes:
                    r = why_not(spec, n, used)
                    if r:
                        reasons[r] = reasons.get(r, 0) + 1
                    else:
                        fit.append(n)
                ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
                if fit:
                    best = min(fit, key=lambda n: (count.get(n["metadata"]["name"], 0), n["metadata"]["name"]))
                    nn = best["metadata"]["name"]
                    try:
                        c.post(R("pods").path(ns, name, "binding"), {
                            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": nn}})
                        count[nn] = count.get(nn, 0) + 1
                        klog("I", "Successfully bound pod to node", pod="%s/%s" % (ns, name), node=nn)
                    except APIError as e:
                        klog("E", "Error binding pod", pod="%s/%s" % (ns, name), err=str(e))
                    continue
                msg = "0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling." % (
                    len(nodes), ", ".join("%d %s" % (v, k) for k, v in sorted(reasons.items())), len(nodes), len(nodes))
                if reported.get((ns, name)) == msg:
                    continue
                conds = [x for x in (p.get("status") or {}).get("conditions") or [] if x.get("type") != "PodScheduled"]
                conds.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg,
                              "lastProbeTime": None, "lastTransitionTime": rfc3339()})
                try:
                    c.patch(R("pods").path(ns, name, "status"), {"status": {"conditions": conds}})
                    reported[(ns, name)] = msg
                except APIError:
                    pass
        except (ConnError, APIError) as e:
            klog("E", "scheduler loop", err=str(e))
        time.sleep(1)


if __name__ == "__main__":
    main()
