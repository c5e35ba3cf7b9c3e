# crictl (fake, package cri-tools) for provision's tests: what the fake
# kubelet runs on this node, in crictl's shapes (kubernetes-sigs/cri-tools
# docs, "Debugging Kubernetes nodes with crictl" on kubernetes.io):
#   crictl version          Version / RuntimeName / RuntimeVersion / RuntimeApiVersion
#   crictl ps [-a] [--name N] [-q]   CONTAINER IMAGE CREATED STATE NAME ATTEMPT POD ID POD
#   crictl pods             POD ID CREATED STATE NAME NAMESPACE ATTEMPT RUNTIME
#   crictl logs [--tail N] ID   the container's log file under /var/log/pods
# The containers are the fake kubelet's (its state in /run/fake-kubelet);
# `--runtime-endpoint` is accepted and checked like the real one.

STATE = "/run/fake-kubelet/state.json"


def runtime_up(endpoint):
    path = endpoint.replace("unix://", "")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def containers():
    try:
        st = json.loads(read_file(STATE))
    except (OSError, ValueError):
        return []
    out = []
    for key, c in (st.get("containers") or {}).items():
        ns, pod, uid, name = key.split("/", 3)
        if not c.get("id"):
            continue
        running = c.get("running")
        if c.get("unit"):
            r = subprocess.run(["systemctl", "is-active", c["unit"] + ".service"], capture_output=True, text=True, check=False)
            running = running and r.stdout.strip() == "active"
        out.append({"id": c["id"], "ns": ns, "pod": pod, "uid": uid, "name": name, "running": bool(running),
                    "attempt": c.get("restarts", 0), "created": c.get("startedAt"), "done": c.get("done")})
    return out


def main():
    argv = sys.argv[1:]
    endpoint = "unix:///run/containerd/containerd.sock"
    args = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--runtime-endpoint", "-r"):
            endpoint = argv[i + 1]
            i += 2
            continue
        if a.startswith("--runtime-endpoint="):
            endpoint = a.split("=", 1)[1]
        else:
            args.append(a)
        i += 1
    if not args:
        print("crictl - client for CRI")
        return 0
    if not runtime_up(endpoint):
        sys.stderr.write('time="%s" level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint '
                         '\\"%s\\": rpc error: code = Unavailable desc = connection error"\n' % (rfc3339(), endpoint))
        return 1
    cmd, rest = args[0], args[1:]
    if cmd == "version":
        v = subprocess.run(["containerd", "--version"], capture_output=True, text=True, check=False).stdout.split()
        print("Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  %s\nRuntimeApiVersion:  v1" % (v[2] if len(v) > 2 else ""))
        return 0
    cs = containers()
    if cmd == "ps":
        show_all = "-a" in rest or "--all" in rest
        quiet = "-q" in rest or "--quiet" in rest
        name = None
        for j, a in enumerate(rest):
            if a == "--name" and j + 1 < len(rest):
                name = rest[j + 1]
            elif a.startswith("--name="):
                name = a.split("=", 1)[1]
        rows = [["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"]]
        for c in cs:
            if not show_all and not c["running"]:
                continue
            if name and not re.search(name, c["name"]):
                continue
            if quiet:
                print(c["id"])
                continue
            created = human_age(now() - parse_rfc3339(c["created"])) + " ago" if c["created"] else "Unknown"
            rows.append([c["id"][:13], c["id"][13:26], created, "Running" if c["running"] else "Exited", c["name"],
                         str(c["attempt"]), hashlib.sha256(c["uid"].encode()).hexdigest()[:13], c["pod"]])
        if not quiet:
            w = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
            for r in rows:
                print("".join(r[k].ljust(w[k] + 3) for k in range(len(r))).rstrip())
        return 0
    if cmd == "pods":
        seen = {}
        for c in cs:
            seen.setdefault((c["ns"], c["pod"], c["uid"]), c["running"] or seen.get((c["ns"], c["pod"], c["uid"]), False))
        print("POD ID          CREATED   STATE   NAME   NAMESPACE   ATTEMPT   RUNTIME")
        for (ns, pod, uid), up in sorted(seen.items()):
            print("%s   -   %s   %s   %s   0   (default)" % (hashlib.sha256(uid.encode()).hexdigest()[:13],
                                                         "Ready" if up else "NotReady", pod, ns))
        return 0
    if cmd == "logs":
        ids = [a for a in rest if not a.startswith("-") and not a.isdigit()]
        if not ids:
            sys.stderr.write('time="%s" level=fatal msg="ID cannot be empty"\n' % rfc3339())
            return 1
        for c in cs:
            if c["id"].startswith(ids[0]):
                d = "/var/log/pods/%s_%s_%s/%s" % (c["ns"], c["pod"], c["uid"], c["name"])
                # the container's last attempt: an exited one's log is that
                # of the attempt before the kubelet's restart count went up
                text = ""
                for a in (c["attempt"], c["attempt"] - 1):
                    try:
                        text = read_file("%s/%d.log" % (d, a))
                    except OSError:
                        text = ""
                    if text or c["running"]:
                        break
                for ln in text.splitlines():
                    parts = ln.split(" ", 3)
                    print(parts[3] if len(parts) == 4 else ln)
                return 0
        sys.stderr.write('time="%s" level=fatal msg="rpc error: code = NotFound desc = an error occurred when try to find '
                         'container \\"%s\\": not found"\n' % (rfc3339(), ids[0]))
        return 1
    sys.stderr.write('No help topic for \'%s\'\n' % cmd)
    return 1


if __name__ == "__main__":
    sys.exit(main())
