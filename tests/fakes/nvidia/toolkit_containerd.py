#!/usr/bin/env python3
"""tests/fakes/nvidia/toolkit_containerd.py: what the NVIDIA Container
Toolkit's `containerd setup|cleanup` does to the file named by
CONTAINERD_CONFIG (python3 standard library only).

Copies NVIDIA/nvidia-container-toolkit tag v1.16.1 (the toolkit image
gpu-operator v24.6.1 pins), read from these files of that tag:
  tools/container/containerd/containerd.go   flags, their aliases, env vars,
                                             defaults; Setup and Cleanup
  tools/container/container.go               ParseArgs (the runtime dir is the
                                             one positional argument unless
                                             --nvidia-runtime-dir/NVIDIA_RUNTIME_DIR
                                             set it), UpdateConfig, RevertConfig,
                                             flush, Restart
  tools/container/operator/operator.go       GetRuntimes: nvidia (or the
                                             --runtime-name), nvidia-cdi,
                                             nvidia-legacy; binaries
                                             DIR/nvidia-container-runtime[.cdi|.legacy];
                                             only the named runtime is set as default
  pkg/config/engine/containerd/option.go     the file is loaded from the config
                                             path only (absent: empty); its
                                             version: absent and empty file -> 2
                                             (1 with --use-legacy-config), absent
                                             with content -> 1, 1 or 2 as read,
                                             anything else is refused
  pkg/config/engine/containerd/config_v2.go  AddRuntime/RemoveRuntime of version 2
                                             (plugins."io.containerd.grpc.v1.cri"):
                                             version = 2; the runtime copied from
                                             runtimes.runc of THAT file, else from
                                             its default_runtime_name's runtime,
                                             else runtime_type/runtime_root/
                                             runtime_engine/privileged_without_host_devices
                                             defaults; container_annotations from
                                             the CDI annotation prefixes;
                                             options.BinaryName; default_runtime_name
                                             only with set-as-default; overrides
  pkg/config/engine/containerd/config_v1.go  the same for version 1 (plugins.cri,
                                             options.Runtime too, default_runtime)
  pkg/config/engine/containerd/toml.go       runtime-config-override insert
  pkg/config/engine/config.go                Write: mkdir -p the directory,
                                             truncate and write; an empty result
                                             removes the file (an error when
                                             there is none)
So a version-3 file (containerd 2.x's schema) is refused, as the real one
does ("unsupported config version: 3"), and cleanup on a file that does not
exist fails when removing the empty result, as the real one does.

Command line as urfave/cli v2 parses it: `setup|cleanup [flags] [RUNTIME_DIR]`;
flags stop at the first argument that is not one; a flag's value from the
command line wins over its env vars, which win over the default; the first
env var of a flag's list that is set is used.  Bool flags take no separate
value: `--set-as-default=false`; `--set-as-default false` sets it TRUE and
makes "false" the positional argument (ignored when the runtime dir came
from a flag or env var), exactly the trap the real tool has.  Unknown flag:
"Incorrect Usage: flag provided but not defined: -NAME", exit 1.  Errors are
logrus' fatal line, exit 1.

Left out: restarting containerd.  --restart-mode none prints the real
warning; signal and systemd only print what the real tool would do (SIGHUP
to the process holding --socket; `chroot HOST_ROOT systemctl restart
containerd`) and succeed; an unknown mode fails after the file is written,
like the real one.  The order the three runtimes are added in is fixed
(nvidia, nvidia-cdi, nvidia-legacy; Go's map order is random, which only
matters when the file has neither runc nor a default runtime).  The TOML
written is go-toml v1's layout (keys sorted, values before sub-tables, two
spaces per level); comments of the loaded file are lost, as with go-toml.

As a module: setup(path, runtime_dir, ...), cleanup(path, runtime_dir, ...),
load(path), dumps(tree), main(argv, env).
"""

import json
import os
import re
import sys
import tomllib

DEFAULT_CONFIG = "/etc/containerd/config.toml"
DEFAULT_SOCKET = "/run/containerd/containerd.sock"
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
V2_CRI = ("plugins", "io.containerd.grpc.v1.cri")
V1_CRI = ("plugins", "cri")


class ToolkitError(Exception):
    pass


# --- TOML ------------------------------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k):
    return k if _BARE.match(k) else _str(k)


def _str(s):
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04X" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (_key(k), _value(x)) for k, x in sorted(v.items())) + "}"
    if hasattr(v, "isoformat"):
        return v.isoformat()
    raise ToolkitError("unable to convert to TOML: unsupported value %r" % (v,))


def _is_table_array(v):
    return isinstance(v, list) and v and all(isinstance(x, dict) for x in v)


def _write_table(out, tree, path, depth):
    ind = "  " * depth
    for k in sorted(tree):
        v = tree[k]
        if isinstance(v, dict) or _is_table_array(v):
            continue
        out.append("%s%s = %s\n" % (ind, _key(k), _value(v)))
    for k in sorted(tree):
        v = tree[k]
        name = path + [_key(k)]
        if isinstance(v, dict):
            out.append("\n%s[%s]\n" % (ind, ".".join(name)))
            _write_table(out, v, name, depth + 1)
        elif _is_table_array(v):
            for item in v:
                out.append("\n%s[[%s]]\n" % (ind, ".".join(name)))
                _write_table(out, item, name, depth + 1)


def dumps(tree):
    """TOML text of TREE (a dict), in go-toml v1's layout; "" when empty."""
    out = []
    _write_table(out, tree, [], 0)
    text = "".join(out)
    return text.lstrip("\n")


def load(path):
    """The file as the toolkit loads it: {} when it does not exist."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except IsADirectoryError:
        raise ToolkitError("unable to load config: failed to load config: read %s: is a directory" % path)
    except tomllib.TOMLDecodeError as e:
        raise ToolkitError("unable to load config: failed to load config: %s" % e)


# --- the config engine ------------------------------------------------------

def _get(tree, path):
    for k in path:
        if not isinstance(tree, dict) or k not in tree:
            return None
        tree = tree[k]
    return tree


def _set(tree, path, value):
    for k in path[:-1]:
        nxt = tree.get(k)
        if not isinstance(nxt, dict):
            nxt = tree[k] = {}
        tree = nxt
    tree[path[-1]] = value


def _delete(tree, path):
    parent = _get(tree, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)


def _version(tree, use_legacy):
    v = tree.get("version")
    if v is None:
        if not tree:
            return 1 if use_legacy else 2
        return 1
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise ToolkitError("unable to load config: failed to parse config version: unsupported type for version field: %s" % (v,))


def _insert(tree, other):
    # toml.go insert, including its early return after the first sub-table
    for k, v in other.items():
        if isinstance(v, dict):
            sub = tree.get(k)
            if not isinstance(sub, dict):
                raise ToolkitError("failed to apply config overrides: %s is not a table" % k)
            return _insert(sub, v)
        tree[k] = v


def _add_runtime(tree, version, name, path, set_as_default, runtime_type,
                 annotations, overrides, use_default_runtime_name, log):
    cri = V2_CRI if version == 2 else V1_CRI
    ctrd = cri + ("containerd",)
    tree["version"] = version
    names = ["runc"]
    dflt = _get(tree, ctrd + ("default_runtime_name",))
    if isinstance(dflt, str) and dflt:
        names.append(dflt)
    for r in names:
        opts = _get(tree, ctrd + ("runtimes", r))
        if isinstance(opts, dict):
            _set(tree, ctrd + ("runtimes", name), json.loads(json.dumps(opts)))
            break
    if _get(tree, ctrd + ("runtimes", name)) is None:
        log("level=warning msg=\"could not infer options from runtimes [%s]; using defaults\"" % " ".join(names))
        _set(tree, ctrd + ("runtimes", name, "runtime_type"), runtime_type)
        _set(tree, ctrd + ("runtimes", name, "runtime_root"), "")
        _set(tree, ctrd + ("runtimes", name, "runtime_engine"), "")
        _set(tree, ctrd + ("runtimes", name, "privileged_without_host_devices"), False)
    if annotations:
        ann_path = ctrd + ("runtimes", name, "container_annotations")
        old = _get(tree, ann_path)
        if old is not None and not (isinstance(old, list) and all(isinstance(a, str) for a in old)):
            raise ToolkitError("unable to configure containerd: unable to update config: failed to update runtime %r: invalid annotations: %s" % (name, old))
        _set(tree, ann_path, list(annotations) + list(old or []))
    _set(tree, ctrd + ("runtimes", name, "options", "BinaryName"), path)
    if version == 1:
        _set(tree, ctrd + ("runtimes", name, "options", "Runtime"), path)
    if set_as_default:
        if version == 2 or use_default_runtime_name:
            _set(tree, ctrd + ("default_runtime_name",), name)
        else:
            dr = ctrd + ("default_runtime",)
            if _get(tree, dr) is None:
                _set(tree, dr + ("runtime_type",), runtime_type)
                _set(tree, dr + ("runtime_root",), "")
                _set(tree, dr + ("runtime_engine",), "")
                _set(tree, dr + ("privileged_without_host_devices",), False)
            _set(tree, dr + ("options", "BinaryName"), path)
            _set(tree, dr + ("options", "Runtime"), path)
            for o in overrides:
                _insert(_get(tree, dr), o)
    for o in overrides:
        _insert(_get(tree, ctrd + ("runtimes", name)), o)


def _remove_runtime(tree, version, name):
    cri = V2_CRI if version == 2 else V1_CRI
    ctrd = cri + ("containerd",)
    rt = ctrd + ("runtimes", name)
    if version == 1:
        rp = _get(tree, rt + ("options", "BinaryName")) or _get(tree, rt + ("options", "Runtime"))
        dp = (_get(tree, ctrd + ("default_runtime", "options", "BinaryName"))
              or _get(tree, ctrd + ("default_runtime", "options", "Runtime")))
        if isinstance(rp, str) and rp and rp == dp:
            _delete(tree, ctrd + ("default_runtime",))
    _delete(tree, rt)
    if _get(tree, ctrd + ("default_runtime_name",)) == name:
        _delete(tree, ctrd + ("default_runtime_name",))
    for i in range(len(rt)):
        p = rt[:len(rt) - i]
        sub = _get(tree, p)
        if isinstance(sub, dict) and not sub:
            _delete(tree, p)
    if list(tree) == ["version"]:
        del tree["version"]


def get_runtimes(runtime_dir, runtime_name="nvidia", set_as_default=True):
    """operator.GetRuntimes: [(name, binary path, set as default)]."""
    root = runtime_dir or "/usr/bin"
    name = runtime_name or "nvidia"
    main_name = "nvidia" if name in ("nvidia-cdi", "nvidia-legacy") else name
    out = [(main_name, os.path.join(root, "nvidia-container-runtime"))]
    for mode in ("cdi", "legacy"):
        out.append(("nvidia-" + mode, os.path.join(root, "nvidia-container-runtime." + mode)))
    return [(n, p, set_as_default and n == name) for n, p in out]


def _open(path, use_legacy):
    if not path:
        raise ToolkitError("unable to load config: config path is empty")
    tree = load(path)
    version = _version(tree, use_legacy)
    if version not in (1, 2):
        raise ToolkitError("unable to load config: unsupported config version: %d" % version)
    return tree, version


def _flush(tree, path, log):
    log("level=info msg=\"Flushing config to %s\"" % path)
    text = dumps(tree)
    if not text:
        try:
            os.remove(path)
        except OSError as e:
            raise ToolkitError("unable to flush config: unable to remove empty file: remove %s: %s"
                               % (path, os.strerror(e.errno).lower()))
        log("level=info msg=\"Config file is empty, removed\"")
        return
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, mode=0o755, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _restart(mode, socket, host_root, log):
    if mode == "none":
        log("level=warning msg=\"Skipping restart of containerd due to --restart-mode=none\"")
    elif mode == "signal":
        log("level=info msg=\"Sending SIGHUP signal to containerd\" "
            "(stand-in: not sent; the real tool signals the process holding %s)" % socket)
    elif mode == "systemd":
        args = (["chroot", host_root] if host_root else []) + ["systemctl", "restart", "containerd"]
        log("level=info msg=\"Restarting containerd%s using systemd: %s\" (stand-in: not run)"
            % (" on host" if host_root else "", args))
    else:
        raise ToolkitError("unable to restart containerd: invalid restart mode specified: %s" % mode)


def setup(path, runtime_dir, runtime_name="nvidia", set_as_default=True,
          runtime_type=DEFAULT_RUNTIME_TYPE, use_legacy_config=False,
          cdi_annotation_prefixes=(), overrides=(), restart_mode="signal",
          socket=DEFAULT_SOCKET, host_root="/host", log=None):
    """containerd setup: add the runtimes to PATH and write it back."""
    log = log or (lambda m: print(m, file=sys.stderr))
    tree, version = _open(path, use_legacy_config)
    annotations = [p + "*" for p in cdi_annotation_prefixes]
    for name, binary, dflt in get_runtimes(runtime_dir, runtime_name, set_as_default):
        try:
            _add_runtime(tree, version, name, binary, dflt, runtime_type or DEFAULT_RUNTIME_TYPE,
                         annotations, [o for o in overrides if o], not use_legacy_config, log)
        except ToolkitError as e:
            raise ToolkitError("unable to configure containerd: unable to update config: "
                               "failed to update runtime %r: %s" % (name, e))
    _flush(tree, path, log)
    _restart(restart_mode, socket, host_root, log)
    return tree


def cleanup(path, runtime_dir, runtime_name="nvidia", set_as_default=True,
            use_legacy_config=False, restart_mode="signal", socket=DEFAULT_SOCKET,
            host_root="/host", log=None):
    """containerd cleanup: remove the runtimes again and write it back."""
    log = log or (lambda m: print(m, file=sys.stderr))
    tree, version = _open(path, use_legacy_config)
    for name, _binary, _dflt in get_runtimes(runtime_dir, runtime_name, set_as_default):
        _remove_runtime(tree, version, name)
    try:
        _flush(tree, path, log)
    except ToolkitError as e:
        raise ToolkitError("unable to unconfigure containerd: %s" % e)
    _restart(restart_mode, socket, host_root, log)
    return tree


# --- command line -----------------------------------------------------------

# name: (aliases, env vars, default, kind)
FLAGS = {
    "config": ((), ("RUNTIME_CONFIG", "CONTAINERD_CONFIG"), DEFAULT_CONFIG, "str"),
    "socket": ((), ("RUNTIME_SOCKET", "CONTAINERD_SOCKET"), DEFAULT_SOCKET, "str"),
    "restart-mode": ((), ("RUNTIME_RESTART_MODE", "CONTAINERD_RESTART_MODE"), "signal", "str"),
    "runtime-name": (("nvidia-runtime-name", "runtime-class"),
                     ("NVIDIA_RUNTIME_NAME", "CONTAINERD_RUNTIME_CLASS"), "nvidia", "str"),
    "nvidia-runtime-dir": (("runtime-dir",), ("NVIDIA_RUNTIME_DIR",), "", "str"),
    "set-as-default": ((), ("NVIDIA_RUNTIME_SET_AS_DEFAULT", "CONTAINERD_SET_AS_DEFAULT"), True, "bool"),
    "host-root": ((), ("HOST_ROOT_MOUNT",), "/host", "str"),
    "use-legacy-config": ((), ("CONTAINERD_USE_LEGACY_CONFIG",), False, "bool"),
    "runtime-type": ((), ("CONTAINERD_RUNTIME_TYPE",), DEFAULT_RUNTIME_TYPE, "str"),
    "nvidia-container-runtime-modes.cdi.annotation-prefixes": (
        (), ("NVIDIA_CONTAINER_RUNTIME_MODES_CDI_ANNOTATION_PREFIXES",), [], "slice"),
    "runtime-config-override": ((), ("RUNTIME_CONFIG_OVERRIDE", "CONTAINERD_RUNTIME_CONFIG_OVERRIDE"), "{}", "str"),
    "help": (("h",), (), False, "bool"),
}
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _parse_bool(s):
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise ValueError('strconv.ParseBool: parsing "%s": invalid syntax' % s)


class UsageError(Exception):
    pass


def parse_args(args, env):
    """urfave/cli v2 for one subcommand: (options, positional args)."""
    by_name = {}
    for name, (aliases, _e, _d, _k) in FLAGS.items():
        by_name[name] = name
        for a in aliases:
            by_name[a] = name
    opts = {}
    for name, (_a, envs, default, kind) in FLAGS.items():
        opts[name] = list(default) if kind == "slice" else default
        for e in envs:
            if e in env:
                val = env[e]
                if kind == "bool":
                    if val != "":
                        try:
                            opts[name] = _parse_bool(val)
                        except ValueError as err:
                            raise ToolkitError('could not parse "%s" as bool value from environment variable "%s" for flag %s: %s'
                                               % (val, e, name, err))
                elif kind == "slice":
                    opts[name] = [x.strip() for x in val.split(",")] if val != "" else []
                else:
                    opts[name] = val
                break
    seen_slice = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        body = a[2:] if a.startswith("--") else a[1:]
        if not body or body.startswith("-") or body.startswith("="):
            raise UsageError("bad flag syntax: %s" % a)
        name, eq, val = body.partition("=")
        if name not in by_name:
            raise UsageError("flag provided but not defined: -%s" % name)
        canon = by_name[name]
        kind = FLAGS[canon][3]
        if kind == "bool":
            if eq:
                try:
                    opts[canon] = _parse_bool(val)
                except ValueError:
                    raise UsageError('invalid boolean value "%s" for -%s: parse error' % (val, name))
            else:
                opts[canon] = True
        else:
            if not eq:
                i += 1
                if i >= len(args):
                    raise UsageError("flag needs an argument: -%s" % name)
                val = args[i]
            if kind == "slice":
                if canon not in seen_slice:
                    opts[canon] = []
                    seen_slice.add(canon)
                opts[canon].extend(x.strip() for x in val.split(","))
            else:
                opts[canon] = val
        i += 1
    return opts, args[i:]


USAGE = """NAME:
   containerd %(cmd)s - %(what)s

USAGE:
   containerd %(cmd)s [command options] <runtime_dirname>

OPTIONS:
   --config value                  Path to the containerd config file (default: "/etc/containerd/config.toml") [$RUNTIME_CONFIG, $CONTAINERD_CONFIG]
   --socket value                  Path to the containerd socket file (default: "/run/containerd/containerd.sock") [$RUNTIME_SOCKET, $CONTAINERD_SOCKET]
   --restart-mode value            Specify how containerd should be restarted;  If 'none' is selected, it will not be restarted [signal | systemd | none] (default: "signal") [$RUNTIME_RESTART_MODE, $CONTAINERD_RESTART_MODE]
   --runtime-name value, --nvidia-runtime-name value, --runtime-class value  The name of the runtime class to set for the nvidia-container-runtime (default: "nvidia") [$NVIDIA_RUNTIME_NAME, $CONTAINERD_RUNTIME_CLASS]
   --nvidia-runtime-dir value, --runtime-dir value  The path where the nvidia-container-runtime binaries are located. If this is not specified, the first argument will be used instead [$NVIDIA_RUNTIME_DIR]
   --host-root value               Specify the path to the host root to be used when restarting containerd using systemd (default: "/host") [$HOST_ROOT_MOUNT]
   --use-legacy-config             Specify whether a legacy (pre v1.3) config should be used (default: false) [$CONTAINERD_USE_LEGACY_CONFIG]
   --runtime-type value            The runtime_type to use for the configured runtime classes (default: "io.containerd.runc.v2") [$CONTAINERD_RUNTIME_TYPE]
   --nvidia-container-runtime-modes.cdi.annotation-prefixes value [ --nvidia-container-runtime-modes.cdi.annotation-prefixes value ]   [$NVIDIA_CONTAINER_RUNTIME_MODES_CDI_ANNOTATION_PREFIXES]
   --runtime-config-override value  specify additional runtime options as a JSON string. The paths are relative to the runtime config. (default: "{}") [$RUNTIME_CONFIG_OVERRIDE, $CONTAINERD_RUNTIME_CONFIG_OVERRIDE]
   --help, -h                      show help
"""
WHAT = {"setup": "Trigger a containerd config to be updated",
        "cleanup": "Trigger any updates made to a containerd config to be undone"}


def _fatal(msg):
    print('level=fatal msg="error: %s"' % msg.replace('"', '\\"'), file=sys.stderr)
    return 1


def main(argv=None, env=None):
    argv = sys.argv[1:] if argv is None else argv
    env = os.environ if env is None else env
    if not argv or argv[0] not in WHAT:
        if argv and not argv[0].startswith("-"):
            return _fatal("No help topic for '%s'" % argv[0])
        print("USAGE:\n   containerd [global options] command [command options] [arguments...]\n\n"
              "COMMANDS:\n   setup    %s\n   cleanup  %s" % (WHAT["setup"], WHAT["cleanup"]))
        return 0
    cmd = argv[0]
    try:
        opts, rest = parse_args(argv[1:], env)
    except UsageError as e:
        print("Incorrect Usage: %s\n" % e, file=sys.stderr)
        print(USAGE % {"cmd": cmd, "what": WHAT[cmd]}, file=sys.stderr)
        return _fatal(str(e))
    except ToolkitError as e:
        return _fatal(str(e))
    if opts["help"]:
        print(USAGE % {"cmd": cmd, "what": WHAT[cmd]})
        return 0
    print('level=info msg="Starting \'%s\' for containerd"' % cmd, file=sys.stderr)
    runtime_dir = opts["nvidia-runtime-dir"]
    if not runtime_dir:
        print('level=info msg="Parsing arguments: [%s]"' % " ".join(rest), file=sys.stderr)
        if len(rest) != 1:
            return _fatal("incorrect number of arguments")
        runtime_dir = rest[0]
    try:
        if cmd == "setup":
            try:
                ov = json.loads(opts["runtime-config-override"]) if opts["runtime-config-override"] else None
            except ValueError as e:
                raise ToolkitError("unable to parse config overrides: failed to read %s as JSON: %s"
                                   % (opts["runtime-config-override"], e))
            setup(opts["config"], runtime_dir, opts["runtime-name"], opts["set-as-default"],
                  opts["runtime-type"], opts["use-legacy-config"],
                  opts["nvidia-container-runtime-modes.cdi.annotation-prefixes"],
                  [ov] if ov else [], opts["restart-mode"], opts["socket"], opts["host-root"])
        else:
            cleanup(opts["config"], runtime_dir, opts["runtime-name"], opts["set-as-default"],
                    opts["use-legacy-config"], opts["restart-mode"], opts["socket"], opts["host-root"])
    except ToolkitError as e:
        return _fatal(str(e))
    print('level=info msg="Completed \'%s\' for containerd"' % cmd, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
