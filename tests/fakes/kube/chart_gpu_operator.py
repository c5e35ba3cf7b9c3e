# Stand-in for what the NVIDIA GPU Operator's programs (chart
# nvidia/gpu-operator v26.7.0) do on the nodes, acted out by the kubelet of
# each node for the images of ../charts/gpu-operator.  From NVIDIA's GPU
# Operator documentation ("Verification: Running Sample GPU Applications",
# "GPU Feature Discovery" labels, "Troubleshooting": the validator's
# init containers and /run/nvidia/validations) and the k8s-device-plugin
# README (the extended resource nvidia.com/gpu, one per GPU NVML finds):
#   node-feature-discovery (nfd-worker): the node's PCI devices
#     (/sys/bus/pci/devices: vendor, class) -> the label
#     feature.node.kubernetes.io/pci-10de.present=true when an NVIDIA
#     display controller (class 0x03xxxx) is there; the operator then labels
#     such nodes nvidia.com/gpu.present=true (folded in here: the fake has
#     no operator reconciling), which its operands select;
#   driver (nvidia-driver-ctr, driver.enabled=true): loads the driver on a
#     node whose driver is not loaded (the fake nvidia-smi's state file,
#     /etc/provision-fake-gpu, its line "driver loaded") and writes
#     /run/nvidia/validations/.driver-ctr-ready; on a node whose host
#     driver already works it loads nothing and runs (the operator marks
#     such nodes nvidia.com/gpu.deploy.driver=pre-installed and leaves
#     the host's driver alone);
#   container toolkit (the chart pins v1.20.0, nvidia-ctk-installer):
#     installs the runtime binaries under toolkit.installDir/toolkit
#     (nvidia-container-runtime, .cdi, .legacy: stand-in executables), then
#     writes the runtimes where v1.20.0 writes them, the drop-in file of
#     RUNTIME_DROP_IN_CONFIG (default /etc/containerd/conf.d/99-nvidia.toml,
#     which containerd imports), but with what v1.16.1 writes there: the
#     program ../nvidia/toolkit_containerd.py (v1.16.1's `containerd
#     setup`, installed with the kubelet as
#     /usr/lib/fake-kubernetes/images/nvidia-toolkit-containerd, run with
#     the container's env and --config DROP-IN), a CRI section with only
#     the runtimes.  v1.20.0 starts the drop-in from the whole CRI section
#     of `containerd config dump` instead, reads version-3 files, and adds
#     an imports line to the top-level CONTAINERD_CONFIG: not acted out
#     (the breakage t0425 and t0270 measured in conf.d is v1.16.1's);
#     then restarts containerd per RUNTIME_RESTART_MODE (v1.17 on no
#     longer reads CONTAINERD_RESTART_MODE): signal (the default) sends SIGHUP to the
#     process holding CONTAINERD_SOCKET (SO_PEERCRED), which containerd
#     does not handle, so Go's default action ends it and systemd's
#     Restart=always starts it again with the new configuration; systemd:
#     `systemctl restart containerd`; none: nothing; then
#     /run/nvidia/validations/toolkit-ready; a failed setup fails the
#     container (CrashLoopBackOff) with the tool's fatal line; CDI mode
#     (cdi.enabled, the v26 default: CDI_ENABLED=true) fails it too, as
#     not acted out;
#   RuntimeClass operator.runtimeClass (handler the same name), and the
#     operands below (device plugin, gfd, validator) run with
#     runtimeClassName: it, as the operator makes them (v24.6.1 and v26.7.0)
#     (controllers/object_controls.go);
#   device plugin: asks the driver for the GPUs (nvidia-smi --query-gpu=uuid
#     in place of NVML) and registers them with the kubelet: capacity and
#     allocatable nvidia.com/gpu = their number, the UUIDs as the devices
#     the kubelet allocates (kubelet state "devices"; envvar strategy:
#     NVIDIA_VISIBLE_DEVICES=UUIDs); fails like the real plugin
#     ("could not load NVML library" / "failed to initialize NVML") when
#     the driver does not answer; with devicePlugin.config (the chart's
#     ConfigMap, mounted as the operator's config-manager mounts it) the
#     configuration the node's label nvidia.com/device-plugin.config names,
#     else devicePlugin.config.default, read as the plugin v0.20.0 reads it
#     (api/config/v1: version v1; sharing.timeSlicing.resources, each with a
#     name and replicas >= 2, else the plugin's error and the container
#     fails; a name not in the ConfigMap: "specified config X does not
#     exist"): time-slicing nvidia.com/gpu xN advertises every GPU N times,
#     devices "UUID::0".."UUID::N-1" (the kubelet hands the GPU's UUID in
#     NVIDIA_VISIBLE_DEVICES); a changed label is taken within 5 s (the
#     config-manager restarts the plugin);
#   gpu-feature-discovery: labels the node nvidia.com/gpu.product (the name
#     with blanks as "-"), nvidia.com/gpu.count, nvidia.com/gpu.memory
#     (MiB), nvidia.com/gpu.family is left out, nvidia.com/cuda.driver.major
#     /minor/rev, nvidia.com/gfd.timestamp, nvidia.com/gpu.replicas and
#     nvidia.com/gpu.sharing-strategy (time-slicing or none), the product
#     with "-SHARED" appended when time-sliced (internal/lm/resource.go);
#     again every 60 s, and within 5 s of a change of the config label;
#   validator (nvidia-operator-validator pod): init containers
#     driver-validation (nvidia-smi answers), toolkit-validation
#     (toolkit-ready), cuda-validation (driver and toolkit ready: the real
#     one runs a CUDA sample pod), plugin-validation (the node's
#     allocatable nvidia.com/gpu > 0), each writing
#     /run/nvidia/validations/<component>-ready and completing, or failing
#     (CrashLoopBackOff) with the real messages; then the main container
#     runs ("all validations are successful").
# helm's --wait for this chart also waits, like the real operator's
# ClusterPolicy status "ready", until every GPU node's validator runs.
#
# CUDA images (nvidia/cuda, the image of the validator's CUDA workload and
# of provision's GPU pod check): the container's command runs with the
# node's /bin/sh, PATH a folder holding only sh and coreutils' cat, tee,
# echo and, when the nvidia runtime injected GPUs (kubelet
# container_gpus()), nvidia-smi: the node's stand-in restricted to the
# allocated GPUs (what the runtime's hook mounts: the driver's nvidia-smi
# and those GPUs' device nodes).  Without injection, `nvidia-smi` is not
# found (exit 127), as in a container without the driver's files.  The
# terminationMessagePath (/dev/termination-log) is a file of the kubelet's,
# read as the terminated state's message; exit status as the command's.

GPU_PRESENT = "nvidia.com/gpu.present"
VALIDATIONS = "/run/nvidia/validations"


def _smi(args):
    try:
        r = subprocess.run(["nvidia-smi"] + args, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return r.returncode, r.stdout.strip()


def _patch_labels(kubelet, labels):
    if kubelet.client is not None:
        kubelet.client.patch(R("nodes").path(None, kubelet.node_name), {"metadata": {"labels": labels}})


def _validation_dir(mounts):
    for mpath, vol in mounts.items():
        if mpath.rstrip("/") == "/run/nvidia" and vol[0] == "hostPath":
            d = os.path.join(vol[1], "validations")
            os.makedirs(d, exist_ok=True)
            return d
    raise ContainerFailed("/run/nvidia is not mounted")


def _nvidia_pci():
    found = []
    base = "/sys/bus/pci/devices"
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        vendor = read_file(os.path.join(base, d, "vendor"), "").strip()
        cls = read_file(os.path.join(base, d, "class"), "").strip()
        if vendor == "0x10de" and cls.startswith("0x03"):
            found.append(d)
    return found


@image_act("nfd/node-feature-discovery")
def act_nfd_worker(kubelet, pod, c, argv, env, mounts, log):
    def tick():
        if now() - state.get("t", 0) < 30:
            return
        state["t"] = now()
        gpus = _nvidia_pci()
        if gpus:
            _patch_labels(kubelet, {"feature.node.kubernetes.io/pci-10de.present": "true", GPU_PRESENT: "true"})
        else:
            _patch_labels(kubelet, {"feature.node.kubernetes.io/pci-10de.present": None, GPU_PRESENT: None})
    state = {}
    kubelet.container_log(log, "nfd-worker: feature discovery every 30s")
    tick()
    return tick


@image_act("nvidia/driver")
def act_driver(kubelet, pod, c, argv, env, mounts, log):
    d = _validation_dir(mounts)
    rc, _ = _smi(["-L"])
    if rc == 0 and not os.path.exists(os.path.join(d, ".driver-ctr-ready")):
        kubelet.container_log(log, "NVIDIA driver is pre-installed on the host: using it")
        return None
    prof = "/etc/provision-fake-gpu"
    lines = read_file(prof, "").split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith("driver "):
            lines[i] = "driver loaded"
            write_file(prof, "\n".join(lines))
            break
    write_file(os.path.join(d, ".driver-ctr-ready"), "")
    kubelet.container_log(log, "Done, now waiting for signal")


TOOLKIT_PROGRAM = "/usr/lib/fake-kubernetes/images/nvidia-toolkit-containerd"
RUNTIME_STANDIN = ("#!/bin/sh\n# %s: stand-in installed by the fake GPU Operator toolkit (provision's\n"
                   "# tests/fakes/kube/chart_gpu_operator.py); the fake kubelet gives GPUs to\n"
                   "# containers of a runtime whose BinaryName is this file.\nexec runc \"$@\"\n")


def _containerd_pid(sock):
    """The pid of the process serving the socket (SO_PEERCRED), or None."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(sock)
        cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        return int.from_bytes(cred[:4], "little")
    except OSError:
        return None
    finally:
        s.close()


@image_act("nvidia/k8s/container-toolkit")
def act_toolkit(kubelet, pod, c, argv, env, mounts, log):
    d = _validation_dir(mounts)
    uid = pod["metadata"].get("uid", "")
    if kubelet.state.get("toolkit-pod") == uid and os.path.exists(os.path.join(d, "toolkit-ready")):
        return None  # the same container after a kubelet restart: it did its work
    install = None
    for mpath, vol in mounts.items():
        if mpath.rstrip("/") == "/usr/local/nvidia" and vol[0] == "hostPath":
            install = vol[1]
    if install is None:
        raise ContainerFailed("/usr/local/nvidia is not mounted")
    if env.get("CDI_ENABLED") == "true":
        raise ContainerFailed("stand-in: CDI mode (cdi.enabled) is not acted out; only the NVIDIA_VISIBLE_DEVICES path is")
    rdir = os.path.join(install, "toolkit")
    os.makedirs(rdir, exist_ok=True)
    for suffix in ("", ".cdi", ".legacy"):
        write_file(os.path.join(rdir, "nvidia-container-runtime" + suffix),
                   RUNTIME_STANDIN % ("nvidia-container-runtime" + suffix), 0o755)
    kubelet.container_log(log, 'level=info msg="Installing NVIDIA container toolkit to \'%s\'"' % rdir)
    penv = dict(os.environ)
    penv.update({k: v for k, v in env.items()})
    # v1.20 writes the runtimes into the drop-in file, not the top-level
    # config CONTAINERD_CONFIG names (it only gets an imports line for it,
    # left out here); what goes into it is v1.16.1's (see the header)
    drop_in = env.get("RUNTIME_DROP_IN_CONFIG") or "/etc/containerd/conf.d/99-nvidia.toml"
    try:
        r = subprocess.run(["python3", TOOLKIT_PROGRAM, "setup", "--config", drop_in, rdir], capture_output=True,
                           text=True, check=False,
                           timeout=60, env=penv)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ContainerFailed("containerd setup: %s" % e)
    for ln in (r.stdout + r.stderr).splitlines():
        kubelet.container_log(log, ln, "stderr")
    if r.returncode != 0:
        raise ContainerFailed("containerd setup failed: %s" % (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1])
    mode = env.get("RUNTIME_RESTART_MODE") or "signal"  # v1.17 on: CONTAINERD_RESTART_MODE is not read
    if mode == "signal":
        pid = _containerd_pid(env.get("RUNTIME_SOCKET") or env.get("CONTAINERD_SOCKET") or "/run/containerd/containerd.sock")
        if pid:
            os.kill(pid, signal.SIGHUP)
    elif mode == "systemd":
        subprocess.run(["systemctl", "restart", "containerd"], capture_output=True, check=False, timeout=120)
    kubelet.state["toolkit-pod"] = uid
    write_file(os.path.join(d, "toolkit-ready"), "")
    kubelet.container_log(log, "toolkit installed in %s; containerd configured (%s); restart mode %s"
                          % (rdir, drop_in, mode))
    return None


CUDA_TOOLS = ("sh", "cat", "tee", "echo")


@image_act("nvidia/cuda")
def act_cuda(kubelet, pod, c, argv, env, mounts, log):
    md = pod["metadata"]
    root = "/run/fake-kubelet/cuda/%s-%s" % (md.get("uid", "static"), c["name"])
    shutil.rmtree(root, ignore_errors=True)
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    for t in CUDA_TOOLS:
        src = shutil.which(t, path="/usr/bin:/bin")
        if src:
            os.symlink(src, os.path.join(bindir, t))
    gpus = kubelet.container_gpus(pod, c)
    if gpus:
        prof = read_file("/etc/provision-fake-gpu", "").split("\n")
        keep = [ln for ln in prof if ln and ("|" not in ln or ln.rsplit(",", 1)[-1].strip() in gpus)]
        write_file(os.path.join(root, "gpus"), "\n".join(keep) + "\n")
        write_file(os.path.join(bindir, "nvidia-smi"), "#!/bin/sh\nPROVISION_FAKE_GPU=%s exec /usr/bin/nvidia-smi \"$@\"\n"
                   % os.path.join(root, "gpus"), 0o755)
    tpath = c.get("terminationMessagePath") or "/dev/termination-log"
    tfile = os.path.join(root, "termination-log")
    write_file(tfile, "")
    cmd = [a.replace(tpath, tfile) for a in argv] or ["sh"]
    penv = {k: v for k, v in env.items()}
    penv["PATH"] = bindir
    try:
        r = subprocess.run(cmd if "/" in cmd[0] else [os.path.join(bindir, cmd[0])] + cmd[1:], capture_output=True,
                           text=True, check=False, timeout=60, env=penv, cwd=root)
        code, out_, err_ = r.returncode, r.stdout, r.stderr
    except FileNotFoundError:
        code, out_, err_ = 127, "", ('exec: "%s": executable file not found in $PATH' % cmd[0])
    except subprocess.TimeoutExpired:
        code, out_, err_ = 137, "", "killed after 60s"
    for ln in out_.splitlines():
        kubelet.container_log(log, ln)
    for ln in err_.splitlines():
        kubelet.container_log(log, ln, "stderr")
    msg = read_file(tfile, "")
    if code == 127 and not gpus and not msg and cmd and os.path.basename(cmd[0]) == "nvidia-smi":
        # exec of a missing binary: the runtime's error, as the real one says it
        raise ContainerExited(128, 'failed to create containerd task: failed to create shim task: OCI runtime create '
                              'failed: runc create failed: unable to start container process: exec: "nvidia-smi": '
                              'executable file not found in $PATH: unknown')
    raise ContainerExited(code, msg)


class ConfigError(Exception):
    pass


def _replicas_of(text):
    """The nvidia.com/gpu time-slicing replicas of one configuration (1: not
    shared), checked as the device plugin v0.20.0 reads its config file
    (api/config/v1: config.go, sharing.go, replicas.go); ConfigError with its
    message otherwise."""
    try:
        c = yaml_load(text) or {}
    except YAMLError as e:
        raise ConfigError("unable to parse config file: unmarshal error: %s" % e)
    if not isinstance(c, dict):
        raise ConfigError("unable to parse config file: unmarshal error: not a mapping")
    version = c.get("version") or "v1"
    if version != "v1":
        raise ConfigError("unable to parse config file: unknown version: %s" % version)
    ts = (c.get("sharing") or {}).get("timeSlicing")
    if ts is None:
        return 1
    res = ts.get("resources") if isinstance(ts, dict) else None
    if not res:
        raise ConfigError("unable to parse config file: unmarshal error: no resources specified")
    replicas = 1
    for r in res:
        if not isinstance(r, dict) or "name" not in r:
            raise ConfigError("unable to parse config file: unmarshal error: no resource name specified")
        if "replicas" not in r:
            raise ConfigError("unable to parse config file: unmarshal error: no replicas specified")
        if not isinstance(r["replicas"], int) or isinstance(r["replicas"], bool):
            raise ConfigError("unable to parse config file: unmarshal error: replicas is not a number")
        if r["replicas"] < 2:
            raise ConfigError("unable to parse config file: unmarshal error: number of replicas must be >= 2")
        if r["name"] == "nvidia.com/gpu":
            replicas = r["replicas"]
    return replicas


def _plugin_config(kubelet, env, mounts):
    """(name, replicas) of the configuration the device plugin (and GFD)
    runs with on this node, chosen as the operator's config-manager does
    (cmd/config-manager updateConfigName): the node's label NODE_LABEL
    names one of the ConfigMap's files (CONFIG_FILE_SRCDIR, mounted), else
    DEFAULT_CONFIG; a name that is not there is an error; neither: the
    empty configuration.  Without devicePlugin.config: (None, 1)."""
    srcdir = env.get("CONFIG_FILE_SRCDIR")
    if not srcdir:
        return None, 1
    vol = mounts.get(srcdir) or mounts.get(srcdir.rstrip("/") + "/")
    files = (vol[1] if vol and vol[0] == "configMap" else None) or {}
    if not files:
        raise ConfigError("error getting list of configuration files: no configuration files available")
    label = ""
    if kubelet.client is not None:
        node = kubelet.client.get(R("nodes").path(None, kubelet.node_name))
        label = ((node.get("metadata") or {}).get("labels") or {}).get(env.get("NODE_LABEL") or "nvidia.com/device-plugin.config", "")
    name = label or env.get("DEFAULT_CONFIG") or ""
    if not name:
        return "", 1
    if name not in files:
        raise ConfigError("specified config %s does not exist" % name)
    return name, _replicas_of(files[name])


def _register(kubelet, log, uuids, name, replicas):
    if replicas > 1:
        devs = ["%s::%d" % (u, i) for u in uuids for i in range(replicas)]
    else:
        devs = list(uuids)
    kubelet.state.setdefault("extended", {})["nvidia.com/gpu"] = str(len(devs))
    kubelet.state.setdefault("devices", {})["nvidia.com/gpu"] = devs
    kubelet.last_status = 0  # report the new capacity at once
    if replicas > 1:
        kubelet.container_log(log, "Config %s: time-slicing nvidia.com/gpu x%d" % (name, replicas))
    kubelet.container_log(log, "Registered device plugin for 'nvidia.com/gpu' with Kubelet (%d devices)" % len(devs))


@image_act("nvidia/k8s-device-plugin")
def act_device_plugin(kubelet, pod, c, argv, env, mounts, log):
    prog = os.path.basename(argv[0]) if argv else ""
    if prog == "gpu-feature-discovery":
        return _gfd(kubelet, log, env, mounts)
    rc, out_ = _smi(["--query-gpu=uuid", "--format=csv,noheader"])
    if rc != 0:
        kubelet.container_log(log, "Failed to initialize NVML: could not load NVML library.", "stderr")
        kubelet.container_log(log, "If this is a GPU node, did you set the docker default runtime to `nvidia`?", "stderr")
        raise ContainerFailed("failed to initialize NVML")
    uuids = [ln.strip() for ln in out_.split("\n") if ln.strip()]
    try:
        cur = _plugin_config(kubelet, env, mounts)
    except ConfigError as e:
        kubelet.container_log(log, str(e), "stderr")
        raise ContainerFailed(str(e))
    _register(kubelet, log, uuids, *cur)
    if not env.get("CONFIG_FILE_SRCDIR"):
        return None
    state = {"t": now(), "cur": cur}

    # The config-manager watches the node's label: on a change it switches
    # the configuration and restarts the plugin, which registers again.
    def tick():
        if now() - state["t"] < 5:
            return
        state["t"] = now()
        try:
            new = _plugin_config(kubelet, env, mounts)
        except ConfigError as e:
            if state["cur"] is not None:
                kubelet.container_log(log, str(e), "stderr")
                kubelet.state.setdefault("extended", {})["nvidia.com/gpu"] = "0"
                kubelet.state.setdefault("devices", {})["nvidia.com/gpu"] = []
                kubelet.last_status = 0
                state["cur"] = None
            return
        if new != state["cur"]:
            kubelet.container_log(log, "Label change detected: %s" % (new[0] or "(empty config)"))
            _register(kubelet, log, uuids, *new)
            state["cur"] = new
    return tick


def _gfd(kubelet, log, env, mounts):
    def tick():
        if now() - state.get("t", 0) < 60 and state.get("label") == _label():
            return
        try:
            _name, replicas = _plugin_config(kubelet, env, mounts)
        except ConfigError as e:
            kubelet.container_log(log, str(e), "stderr")
            return
        state["label"] = _label()
        rc, out_ = _smi(["--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"])
        if rc != 0:
            return
        rows = [[x.strip() for x in ln.split(",")] for ln in out_.split("\n") if ln.strip()]
        if not rows:
            return
        name, mem, drv = rows[0][0], rows[0][1], rows[0][2]
        dv = (drv.split(".") + ["", "", ""])[:3]
        # time-slicing (internal/lm/resource.go): the product gets "-SHARED"
        # (no rename), replicas and sharing-strategy say how it is shared
        product = name.replace(" ", "-") + ("-SHARED" if replicas > 1 else "")
        _patch_labels(kubelet, {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(len(rows)),
                                "nvidia.com/gpu.replicas": str(replicas),
                                "nvidia.com/gpu.sharing-strategy": "time-slicing" if replicas > 1 else "none",
                                "nvidia.com/gpu.memory": mem, "nvidia.com/cuda.driver.major": dv[0],
                                "nvidia.com/cuda.driver.minor": dv[1], "nvidia.com/cuda.driver.rev": dv[2],
                                "nvidia.com/gfd.timestamp": str(int(now()))})
        state["t"] = now()
        kubelet.container_log(log, "Writing labels: %s x%d" % (product, len(rows)))

    # GFD relabels at once when the config label changes (the config-manager
    # restarts it), else every 60 s
    def _label():
        if not env.get("CONFIG_FILE_SRCDIR") or kubelet.client is None:
            return None
        if now() - state.get("lt", 0) < 5:
            return state.get("polled")
        state["lt"] = now()
        node = kubelet.client.get(R("nodes").path(None, kubelet.node_name))
        state["polled"] = ((node.get("metadata") or {}).get("labels") or {}).get(
            env.get("NODE_LABEL") or "nvidia.com/device-plugin.config", "")
        return state["polled"]
    state = {}
    tick()
    return tick


@image_act("nvidia/gpu-operator")
def act_validator(kubelet, pod, c, argv, env, mounts, log):
    # v26: the validator is the operator's image (nvcr.io/nvidia/gpu-operator)
    if c["name"] == "gpu-operator":
        kubelet.container_log(log, "gpu-operator: its work is acted out by the chart's stand-in")
        return None
    comp = env.get("COMPONENT")
    if c["name"] == "nvidia-operator-validator" or not comp:
        kubelet.container_log(log, "all validations are successful")
        return None
    d = _validation_dir(mounts)

    def fail(msg):
        kubelet.container_log(log, msg, "stderr")
        raise ContainerFailed(msg)
    if comp == "driver":
        rc, out_ = _smi([])
        if rc != 0:
            fail("failed to validate the driver, exit code: %d: %s" % (rc, out_.split("\n")[0]))
    elif comp == "toolkit":
        if not os.path.exists(os.path.join(d, "toolkit-ready")):
            fail("toolkit is not ready: %s/toolkit-ready missing" % d)
    elif comp == "cuda":
        if not os.path.exists(os.path.join(d, "driver-ready")) or not os.path.exists(os.path.join(d, "toolkit-ready")):
            fail("cuda workload validation failed: driver or toolkit not ready")
        kubelet.container_log(log, "[Vector addition of 50000 elements] Test PASSED (acted out)")
    elif comp == "plugin":
        node = kubelet.client.get(R("nodes").path(None, kubelet.node_name)) if kubelet.client else {}
        n = ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", "0")
        if n in ("", "0"):
            fail("GPU resources are not discovered by the node")
    write_file(os.path.join(d, comp + "-ready"), "")
    kubelet.container_log(log, "%s validation successful" % comp)
    return None


@chart_hooks("gpu-operator")
class GpuOperator:
    @staticmethod
    def ready(c, rel):
        """The ClusterPolicy's state "ready": the validator runs on every
        node labelled nvidia.com/gpu.present=true."""
        nodes = [n["metadata"]["name"] for n in c.get(R("nodes").path(), {"labelSelector": GPU_PRESENT + "=true"})["items"]]
        pods = c.get(R("pods").path(rel["namespace"]), {"labelSelector": "app=nvidia-operator-validator"})["items"]
        running = {p["spec"].get("nodeName") for p in pods if (p.get("status") or {}).get("phase") == "Running"}
        missing = [n for n in nodes if n not in running]
        if missing:
            return "ClusterPolicy not ready: validator not running on %s" % ", ".join(missing)
        return None
